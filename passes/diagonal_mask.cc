#include "passes/diagonal_mask.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/tensor.h"

namespace kiln {
namespace {

// The most nodes the analysis visits: an exporter's mask is a handful of ops.
constexpr int kMaxNodes = 64;

// A node's value over the plane: affine (a_i i + a_j j + c, exact: the plane's indices and the
// constants are small integers or splats) or only known to depend on d = j - i.
struct Form {
  bool affine = false;
  double ai = 0, aj = 0, c = 0;
  bool Diagonal() const { return !affine || ai == -aj; }
  bool Constant() const { return affine && ai == 0 && aj == 0; }
};

// Below 2^24 every integer is exact in f32 (and in the integer types and double).
constexpr double kExactLimit = 16777216.0;

class Analysis {
 public:
  Analysis(int64_t s, int64_t t) : s_(s), t_(t) {}

  std::optional<Form> Of(const Node* node) {
    auto it = memo_.find(node);
    if (it != memo_.end()) return it->second;
    if (static_cast<int>(memo_.size()) >= kMaxNodes) {
      Fail(node, absl::StrCat("more than ", kMaxNodes, " ops below the mask"));
      return std::nullopt;
    }
    memo_[node] = std::nullopt;  // a placeholder while the operands are analysed
    std::optional<Form> f = Compute(node);
    memo_[node] = f;
    return f;
  }

  // Whether `f` depends on (i, j) through d = j - i alone: by its form, or because the plane
  // has one row (i = 0: a function of j is one of d) or one column (j = 0).
  bool Diagonal(const Form& f) const { return f.Diagonal() || s_ == 1 || t_ == 1; }

  // Whether the affine form is the computed value everywhere on the plane: integer
  // coefficients and offset, and every value a_i i + a_j j + c below 2^24 in magnitude.
  bool Exact(const Form& f) const {
    auto integral = [](double x) { return x == std::trunc(x); };
    const double largest = std::fabs(f.ai) * static_cast<double>(s_ - 1) +
                           std::fabs(f.aj) * static_cast<double>(t_ - 1) + std::fabs(f.c);
    return f.affine && integral(f.ai) && integral(f.aj) && integral(f.c) && largest < kExactLimit;
  }

  int visited() const { return static_cast<int>(memo_.size()); }
  // Why the analysis stopped: at the first node it could not follow (the deepest).
  const std::string& failure() const { return failure_; }

  // The node's value at plane point (i, j), with its dtype's rounding; Of(node) must have
  // succeeded (every node below it is one of the ops Compute accepts).
  double Eval(const Node* node, int64_t i, int64_t j) const {
    const Shape& shape = node->shape();
    const int64_t r = static_cast<int64_t>(shape.size());
    auto in = [&](int k) { return Eval(node->operand(k), i, j); };
    double v = 0;
    switch (node->op()) {
      case OpKind::kConstant: return node->value()->GetF64(0);
      case OpKind::kIota: {
        const int64_t axis = node->attrs().GetInt("axis");
        if (shape[axis] == 1) return 0;
        return Round(node->dtype(), static_cast<double>(axis == r - 1 ? j : i));
      }
      case OpKind::kBroadcastTo:
      case OpKind::kReshape: return in(0);
      case OpKind::kCast: v = in(0); break;
      case OpKind::kNeg: v = -in(0); break;
      case OpKind::kLogicalNot: v = in(0) == 0; break;
      case OpKind::kAdd: v = in(0) + in(1); break;
      case OpKind::kSub: v = in(0) - in(1); break;
      case OpKind::kMul: v = in(0) * in(1); break;
      case OpKind::kMaximum: v = std::max(in(0), in(1)); break;
      case OpKind::kMinimum: v = std::min(in(0), in(1)); break;
      case OpKind::kEq: v = in(0) == in(1); break;
      case OpKind::kNe: v = in(0) != in(1); break;
      case OpKind::kLt: v = in(0) < in(1); break;
      case OpKind::kLe: v = in(0) <= in(1); break;
      case OpKind::kGt: v = in(0) > in(1); break;
      case OpKind::kGe: v = in(0) >= in(1); break;
      case OpKind::kLogicalAnd: v = in(0) != 0 && in(1) != 0; break;
      case OpKind::kLogicalOr: v = in(0) != 0 || in(1) != 0; break;
      case OpKind::kWhere: v = in(0) != 0 ? in(1) : in(2); break;
      default: break;  // not reached: Compute accepts only the ops above
    }
    return Round(node->dtype(), v);
  }

 private:
  static double Round(DType dtype, double v) {
    if (dtype == DType::kBool) return v != 0;
    if (IsInteger(dtype)) return std::trunc(v);
    if (dtype == DType::kF32) return static_cast<float>(v);
    Tensor scalar(dtype, {});  // f16, bf16: the interpreter's rounding
    scalar.SetF64(0, v);
    return scalar.GetF64(0);
  }

  // Right-aligned on the plane: the last axis is j (extent t or 1), the one before it i (s or
  // 1); leading axes broadcast, and nothing below varies along them (iotas there must have
  // extent 1).
  bool OnPlane(const Node* node) const {
    const Shape& shape = node->shape();
    const size_t r = shape.size();
    if (r >= 1 && shape[r - 1] != 1 && shape[r - 1] != t_) return false;
    if (r >= 2 && shape[r - 2] != 1 && shape[r - 2] != s_) return false;
    return true;
  }

  void Fail(const Node* node, const std::string& why) {
    if (failure_.empty()) failure_ = absl::StrCat(node->name(), " (", OpName(node->op()), "): ", why);
  }

  std::optional<Form> Compute(const Node* node) {
    std::optional<Form> f = ComputeForm(node);
    if (!f) Fail(node, "not an index function of j - i");
    return f;
  }

  std::optional<Form> ComputeForm(const Node* node) {
    if (!OnPlane(node)) {
      Fail(node, absl::StrCat("its shape ", ShapeToString(node->shape()), " does not lie on the ", s_, " x ", t_,
                              " plane"));
      return std::nullopt;
    }
    const Shape& shape = node->shape();
    const int64_t r = static_cast<int64_t>(shape.size());
    std::vector<Form> in;
    for (const Node* operand : node->operands()) {
      std::optional<Form> f = Of(operand);
      if (!f) return std::nullopt;
      in.push_back(*f);
    }
    auto diagonal = [&]() -> std::optional<Form> {
      for (const Form& f : in) {
        if (!Diagonal(f)) return std::nullopt;
      }
      return Form{};
    };
    // An affine result of arithmetic where it is exact (else only diagonal, if its operands are).
    auto affine = [&](double ai, double aj, double c) -> std::optional<Form> {
      const Form f{true, ai, aj, c};
      if (Exact(f)) return f;
      return diagonal();
    };
    const bool float_result = IsFloat(node->dtype());
    switch (node->op()) {
      case OpKind::kConstant: {
        const Tensor* value = node->value();
        if (value->num_elements() == 0) return std::nullopt;
        const double v = value->GetF64(0);
        for (int64_t e = 1; e < value->num_elements(); ++e) {
          if (value->GetF64(e) != v && !(std::isnan(v) && std::isnan(value->GetF64(e)))) {
            Fail(node, "a constant that is not a splat");
            return std::nullopt;
          }
        }
        // A splat: affine (a constant) when it is a small integer, else diagonal (it does not
        // vary at all) but kept out of affine arithmetic.
        const Form f{true, 0, 0, v};
        return Exact(f) ? f : Form{};
      }
      case OpKind::kIota: {
        const int64_t axis = node->attrs().GetInt("axis");
        if (shape[axis] == 1) return Form{true, 0, 0, 0};
        if (axis == r - 1) return Form{true, 0, 1, 0};
        if (axis == r - 2) return Form{true, 1, 0, 0};
        Fail(node, "an iota along a leading axis");
        return std::nullopt;
      }
      case OpKind::kBroadcastTo:
        return in[0];
      case OpKind::kReshape: {
        // Only unit axes come or go: the plane's two axes stay the last two.
        const Shape& from = node->operand(0)->shape();
        auto plane = [](const Shape& x, size_t k) { return x.size() > k ? x[x.size() - 1 - k] : 1; };
        if (plane(from, 0) != plane(shape, 0) || plane(from, 1) != plane(shape, 1)) return std::nullopt;
        for (size_t k = 2; k < from.size(); ++k) {
          if (plane(from, k) != 1) return std::nullopt;
        }
        return in[0];
      }
      case OpKind::kCast:
        // Integers survive a cast to f32 or an integer; a cast that may round is diagonal only.
        if (in[0].affine && (IsInteger(node->dtype()) || node->dtype() == DType::kF32)) return in[0];
        return diagonal();
      case OpKind::kNeg:
        if (in[0].affine) return affine(-in[0].ai, -in[0].aj, -in[0].c);
        return diagonal();
      case OpKind::kAdd:
      case OpKind::kSub:
        if (in[0].affine && in[1].affine && (!float_result || node->dtype() == DType::kF32)) {
          const double k = node->op() == OpKind::kAdd ? 1 : -1;
          return affine(in[0].ai + k * in[1].ai, in[0].aj + k * in[1].aj, in[0].c + k * in[1].c);
        }
        return diagonal();
      case OpKind::kMul:
        if (in[0].affine && in[1].affine && (in[0].Constant() || in[1].Constant()) &&
            (!float_result || node->dtype() == DType::kF32)) {
          const Form& x = in[0].Constant() ? in[1] : in[0];
          const double k = in[0].Constant() ? in[0].c : in[1].c;
          return affine(k * x.ai, k * x.aj, k * x.c);
        }
        return diagonal();
      case OpKind::kEq:
      case OpKind::kNe:
      case OpKind::kLt:
      case OpKind::kLe:
      case OpKind::kGt:
      case OpKind::kGe:
        // A comparison of two affine forms depends on their difference only.
        if (in[0].affine && in[1].affine) {
          const Form diff{true, in[0].ai - in[1].ai, in[0].aj - in[1].aj, 0};
          if (Diagonal(diff)) return Form{};
          Fail(node, "compares values that depend on i and j, not on j - i alone");
          return std::nullopt;
        }
        return diagonal();
      case OpKind::kMaximum:
      case OpKind::kMinimum:
      case OpKind::kLogicalNot:
      case OpKind::kLogicalAnd:
      case OpKind::kLogicalOr:
      case OpKind::kWhere:
        return diagonal();
      default:  // an input, a reduction, an op with other index semantics
        Fail(node, node->op() == OpKind::kInput ? "a graph input: the mask is data" : "an op the analysis does not follow");
        return std::nullopt;
    }
  }

  int64_t s_, t_;
  absl::flat_hash_map<const Node*, std::optional<Form>> memo_;
  std::string failure_;
};

}  // namespace

IndexMaskVerdict AnalyzeIndexMask(const Node* mask, int64_t s, int64_t t, const std::function<bool(double)>& keep) {
  if (s <= 0 || t <= 0) return {false, "an empty plane"};
  Analysis analysis(s, t);
  std::optional<Form> form = analysis.Of(mask);
  if (!form) return {false, analysis.failure()};
  if (!analysis.Diagonal(*form)) return {false, absl::StrCat(mask->name(), " depends on i and j, not on j - i alone")};
  // One point per diagonal d = j - i: (i, j) = (max(0, -d), max(0, -d) + d).
  for (int64_t d = -(s - 1); d <= t - 1; ++d) {
    const int64_t i = std::max<int64_t>(0, -d), j = i + d;
    const bool kept = keep(analysis.Eval(mask, i, j));
    if (kept != (j <= i)) {
      return {false, absl::StrCat("a function of j - i (", analysis.visited(), " nodes) that ",
                                  kept ? "keeps" : "masks", " the diagonal j - i = ", d, ", which causal ",
                                  kept ? "masks" : "keeps")};
    }
  }
  return {true, absl::StrCat("a function of j - i (", analysis.visited(),
                             " nodes of iotas, constants and pointwise ops), j <= i on all ",
                             s + t - 1, " diagonals")};
}


}  // namespace kiln
