// RandomGraph (random_graph.h): a Generator draws one op at a time from a splitmix64 stream,
// picks operands among recent values (so chains form and fuse) or makes new inputs and
// constants of compatible shapes, and builds the op through Graph::AddNode. Each Value
// carries what the generator knows of it (a bound on |x|, exactness, sign) to keep the graph
// well conditioned; see the header for the rules.
#include "tests/differential/random_graph.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/base/status.h"

namespace kiln {
namespace {

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed ^ 0x6b696c6e6b696c6eull) {}
  int64_t Below(int64_t n) { return n <= 1 ? 0 : static_cast<int64_t>(SplitMix(state_) % static_cast<uint64_t>(n)); }
  bool Chance(double p) { return static_cast<double>(SplitMix(state_) >> 11) * 0x1.0p-53 < p; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(SplitMix(state_) >> 11) * 0x1.0p-53; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[Below(static_cast<int64_t>(v.size()))]; }

 private:
  uint64_t state_;
};

struct Value {
  Node* node = nullptr;
  double bound = 1;    // |x| <= bound, a generous estimate
  bool exact = false;  // kiln and the interpreter compute it bit for bit alike
  bool nonneg = false;
  DType dtype() const { return node->dtype(); }
  const Shape& shape() const { return node->shape(); }
};

int64_t Rank(const Value& v) { return static_cast<int64_t>(v.shape().size()); }

class Generator {
 public:
  Generator(Graph& graph, uint64_t seed, const RandomGraphOptions& options)
      : graph_(graph), rng_(seed), options_(options) {
    main_dtype_ = rng_.Pick(std::vector<DType>{DType::kF32, DType::kF16, DType::kBF16});
  }

  absl::Status Run() {
    for (int i = 0; i < options_.ops; ++i) KILN_RETURN_IF_ERROR(Step());
    // Outputs: every value no op reads, and a few that are read (multi-output regions).
    for (const Value& v : values_) {
      const OpKind op = v.node->op();
      if (op == OpKind::kInput || op == OpKind::kConstant) continue;
      if (v.node->users().empty() || rng_.Chance(0.1)) KILN_RETURN_IF_ERROR(graph_.AddOutput(v.node));
    }
    if (graph_.outputs().empty()) {  // zero ops: one input through neg
      KILN_ASSIGN_OR_RETURN(Value x, NewInput(main_dtype_, NewShape()));
      KILN_ASSIGN_OR_RETURN(Value y, Add(OpKind::kNeg, {x}, {}, x.bound, true, false));
      KILN_RETURN_IF_ERROR(graph_.AddOutput(y.node));
    }
    return absl::OkStatus();
  }

 private:
  using Op = absl::Status (Generator::*)();

  absl::Status Step() {
    static const std::vector<std::pair<int, Op>> kMenu = {
        {18, &Generator::Unary},   {18, &Generator::Binary},       {7, &Generator::Select},
        {10, &Generator::Reduce},  {6, &Generator::SoftmaxOp},     {7, &Generator::Norm},
        {3, &Generator::CrossEntropyOp}, {4, &Generator::DropoutOp}, {16, &Generator::Layout},
        {6, &Generator::Matmul},   {5, &Generator::AttentionOp}, {3, &Generator::NormLinear}};
    int total = 0;
    for (const auto& [w, op] : kMenu) total += w;
    int64_t r = rng_.Below(total);
    for (const auto& [w, op] : kMenu) {
      if (r < w) return (this->*op)();
      r -= w;
    }
    return absl::InternalError("unreachable");
  }

  int64_t Limit() const { return options_.max_elements; }

  // ---- leaves ----------------------------------------------------------------------------

  int64_t Extent() {
    static const std::vector<int64_t> kExtents = {1,  1,  2,   3,   4,   5,   7,   8,    13,  16,  31,  32,
                                                  33, 64, 100, 127, 128, 200, 256, 257, 512, 1000, 1024, 4099};
    return rng_.Pick(kExtents);
  }

  Shape NewShape() {
    if (rng_.Chance(0.08)) {  // a few long rows: split rows, shared-memory rows, wide columns
      const int64_t row = rng_.Pick(std::vector<int64_t>{5003, 12289, 32000, 50257, 131072});
      const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(1 + rng_.Below(4), 4 * Limit() / row));
      return rng_.Chance(0.5) ? Shape{rows, row} : Shape{row, rows};
    }
    Shape s(rng_.Below(4) + 1);
    for (int64_t& d : s) d = Extent();
    while (NumElements(s) > Limit()) {
      auto largest = std::max_element(s.begin(), s.end());
      *largest = std::max<int64_t>(1, *largest / (2 + rng_.Below(6)));
    }
    return s;
  }

  // A shape that broadcasts to `s`: a suffix of it with some extents set to 1.
  Shape BroadcastableTo(const Shape& s) {
    const size_t keep = s.empty() ? 0 : s.size() - rng_.Below(static_cast<int64_t>(s.size()) + 1);
    Shape out(s.end() - keep, s.end());
    for (int64_t& d : out) {
      if (rng_.Chance(0.3)) d = 1;
    }
    return out;
  }

  absl::StatusOr<Value> Keep(Node* node, double bound, bool exact, bool nonneg) {
    values_.push_back(Value{node, bound, exact, nonneg});
    return values_.back();
  }

  absl::StatusOr<Value> NewInput(DType dtype, const Shape& shape) {
    KILN_ASSIGN_OR_RETURN(Node * node, graph_.AddInput(absl::StrCat("x", inputs_++), dtype, shape));
    return Keep(node, 1, true, false);
  }

  // A constant of `shape` with values uniform in (-1, 1) rounded to `dtype`; `fill` gives
  // every element one value instead.
  absl::StatusOr<Value> NewConstant(DType dtype, const Shape& shape, std::optional<double> fill = std::nullopt) {
    Tensor t(dtype, shape);
    double bound = 0;
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      const double v = fill ? *fill : rng_.Uniform(-1, 1);
      t.SetF64(i, v);
      bound = std::max(bound, std::fabs(v));
    }
    KILN_ASSIGN_OR_RETURN(Node * node, graph_.AddConstant(absl::StrCat("c", constants_++), std::move(t)));
    return Keep(node, std::max(bound, 1e-3), true, fill && *fill >= 0);
  }

  absl::StatusOr<Value> Add(OpKind op, const std::vector<Value>& operands, Attributes attrs, double bound,
                            bool exact, bool nonneg) {
    std::vector<Node*> nodes;
    for (const Value& v : operands) nodes.push_back(v.node);
    absl::StatusOr<Node*> node = graph_.AddNode(op, nodes, std::move(attrs));
    if (!node.ok()) {
      return absl::InternalError(absl::StrCat("random graph generator proposed an invalid op: ",
                                              node.status().message()));
    }
    return Keep(*node, bound, exact, nonneg);
  }

  // ---- operands --------------------------------------------------------------------------

  // Constants are made for the op that reads them; a value that holds infinities (an
  // attention mask) feeds nothing else.
  static bool Pickable(const Value& v) { return v.node->op() != OpKind::kConstant && std::isfinite(v.bound); }

  // A float value: usually a recent one (chains), sometimes a new input.
  absl::StatusOr<Value> PickFloat(bool exact_only = false) {
    std::vector<Value> recent;
    for (auto it = values_.rbegin(); it != values_.rend() && recent.size() < 6; ++it) {
      if (IsFloat(it->dtype()) && (!exact_only || it->exact) && Pickable(*it)) {
        recent.push_back(*it);
      }
    }
    if (!recent.empty() && rng_.Chance(0.8)) return rng_.Pick(recent);
    const DType dtype = rng_.Chance(0.85) ? main_dtype_ : rng_.Pick(std::vector<DType>{DType::kF32, DType::kF16, DType::kBF16});
    return NewInput(dtype, NewShape());
  }

  // A second operand for a binary op with `a`: the same dtype, broadcasting with a's shape to
  // exactly a's shape (an existing value, a new input or a constant), or a scalar.
  absl::StatusOr<Value> Partner(const Value& a, bool exact_only = false) {
    if (rng_.Chance(0.5)) {
      for (auto it = values_.rbegin(); it != values_.rend() && it - values_.rbegin() < 10; ++it) {
        if (it->node != a.node && Pickable(*it) && it->dtype() == a.dtype() && BroadcastsTo(it->shape(), a.shape()) &&
            (!exact_only || it->exact) && rng_.Chance(0.6)) {
          return *it;
        }
      }
    }
    const Shape s = rng_.Chance(0.15) ? Shape{} : BroadcastableTo(a.shape());
    if (rng_.Chance(0.2) && NumElements(s) <= 4096) return NewConstant(a.dtype(), s);
    return NewInput(a.dtype(), s);
  }

  absl::StatusOr<Value> Scalar(DType dtype, double v) { return NewConstant(dtype, Shape{}, v); }

  // `x` scaled by a power of two (exact) so that |x| <= limit.
  absl::StatusOr<Value> Tame(Value x, double limit) {
    if (x.bound <= limit) return x;
    const int k = static_cast<int>(std::ceil(std::log2(x.bound / limit)));
    KILN_ASSIGN_OR_RETURN(Value s, Scalar(x.dtype(), std::ldexp(1.0, -k)));
    return Add(OpKind::kMul, {x, s}, {}, std::ldexp(x.bound, -k), x.exact, x.nonneg);
  }

  // abs(x) + 0.5: the operand of log, sqrt, rsqrt, reciprocal, a divisor and a pow base.
  absl::StatusOr<Value> Positive(Value x) {
    KILN_ASSIGN_OR_RETURN(x, Tame(x, 16));
    KILN_ASSIGN_OR_RETURN(Value a, Add(OpKind::kAbs, {x}, {}, x.bound, x.exact, true));
    KILN_ASSIGN_OR_RETURN(Value h, Scalar(x.dtype(), 0.5));
    return Add(OpKind::kAdd, {a, h}, {}, x.bound + 0.5, false, true);
  }

  // ---- ops -------------------------------------------------------------------------------

  absl::Status Unary() {
    KILN_ASSIGN_OR_RETURN(Value x, PickFloat());
    return UnaryOn(x);
  }

  absl::Status UnaryOn(Value x) {
    static const std::vector<OpKind> kOps = {
        OpKind::kNeg,     OpKind::kAbs,     OpKind::kExp,  OpKind::kLog,  OpKind::kSqrt,     OpKind::kRsqrt,
        OpKind::kReciprocal, OpKind::kTanh, OpKind::kSigmoid, OpKind::kErf, OpKind::kRelu, OpKind::kGelu,
        OpKind::kGeluTanh, OpKind::kSilu,  OpKind::kCast, OpKind::kCast};
    const OpKind op = rng_.Pick(kOps);
    double b = x.bound;
    switch (op) {
      case OpKind::kNeg: return Add(op, {x}, {}, b, x.exact, false).status();
      case OpKind::kAbs: return Add(op, {x}, {}, b, x.exact, true).status();
      case OpKind::kRelu: return Add(op, {x}, {}, b, x.exact, true).status();
      case OpKind::kExp: {
        KILN_ASSIGN_OR_RETURN(x, Tame(x, 2));
        return Add(op, {x}, {}, std::exp(x.bound), false, true).status();
      }
      case OpKind::kLog: case OpKind::kSqrt: case OpKind::kRsqrt: case OpKind::kReciprocal: {
        KILN_ASSIGN_OR_RETURN(Value p, Positive(x));
        const double bound = op == OpKind::kLog ? std::max(std::log(p.bound), 0.7)
                             : op == OpKind::kSqrt ? std::sqrt(p.bound) : 2.0;
        return Add(op, {p}, {}, bound, false, op != OpKind::kLog).status();
      }
      case OpKind::kTanh: case OpKind::kErf: return Add(op, {x}, {}, 1, false, false).status();
      case OpKind::kSigmoid: return Add(op, {x}, {}, 1, false, true).status();
      case OpKind::kCast: return CastOp(x);
      default: return Add(op, {x}, {}, b + 0.3, false, false).status();  // gelu, gelu_tanh, silu
    }
  }

  // To another float dtype; or, from an exact value, to small integers and back (x * 8 cast
  // to i32 or i64 truncates the same way everywhere).
  absl::Status CastOp(Value x) {
    if (x.exact && rng_.Chance(0.4)) {
      KILN_ASSIGN_OR_RETURN(x, Tame(x, 1));
      KILN_ASSIGN_OR_RETURN(Value eight, Scalar(x.dtype(), 8));
      KILN_ASSIGN_OR_RETURN(Value big, Add(OpKind::kMul, {x, eight}, {}, 8, true, x.nonneg));
      const std::string to = rng_.Chance(0.5) ? "i32" : "i64";
      KILN_ASSIGN_OR_RETURN(Value i, Add(OpKind::kCast, {big}, {{"dtype", to}}, 8, true, x.nonneg));
      return Add(OpKind::kCast, {i}, {{"dtype", std::string(DTypeName(x.dtype()))}}, 8, true, x.nonneg).status();
    }
    const std::string to = DTypeName(rng_.Pick(std::vector<DType>{DType::kF32, DType::kF16, DType::kBF16}));
    return Add(OpKind::kCast, {x}, {{"dtype", to}}, x.bound, x.exact, x.nonneg).status();
  }

  absl::Status Binary() {
    KILN_ASSIGN_OR_RETURN(Value a, PickFloat());
    KILN_ASSIGN_OR_RETURN(Value b, Partner(a));
    if (rng_.Chance(0.3)) std::swap(a, b);  // the broadcast operand on the left
    static const std::vector<OpKind> kOps = {OpKind::kAdd, OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kMul,
                                             OpKind::kDiv, OpKind::kPow, OpKind::kMaximum, OpKind::kMinimum};
    const OpKind op = rng_.Pick(kOps);
    switch (op) {
      case OpKind::kAdd: case OpKind::kSub:
        return Add(op, {a, b}, {}, a.bound + b.bound, false, false).status();
      case OpKind::kMul: return Add(op, {a, b}, {}, a.bound * b.bound, false, a.nonneg && b.nonneg).status();
      case OpKind::kDiv: {
        KILN_ASSIGN_OR_RETURN(Value d, Positive(b));
        return Add(op, {a, d}, {}, 2 * a.bound, false, false).status();
      }
      case OpKind::kPow: {
        KILN_ASSIGN_OR_RETURN(a, Tame(a, 2));
        KILN_ASSIGN_OR_RETURN(Value base, Positive(a));
        KILN_ASSIGN_OR_RETURN(b, Tame(b, 2));
        return Add(op, {base, b}, {}, std::pow(base.bound, b.bound), false, true).status();
      }
      default:  // maximum, minimum
        return Add(op, {a, b}, {}, std::max(a.bound, b.bound), a.exact && b.exact, a.nonneg && b.nonneg).status();
    }
  }

  // where(cond, x, y) with cond from comparisons of exact values (or of iotas, a causal
  // mask), maybe combined with another condition.
  absl::Status Select() {
    KILN_ASSIGN_OR_RETURN(Value x, PickFloat());
    static const std::vector<OpKind> kCompare = {OpKind::kEq, OpKind::kNe, OpKind::kLt,
                                                 OpKind::kLe, OpKind::kGt, OpKind::kGe};
    Value cond;
    if (Rank(x) >= 2 && rng_.Chance(0.3)) {
      const Shape& s = x.shape();
      const int64_t r = Rank(x);
      KILN_ASSIGN_OR_RETURN(Value row, Add(OpKind::kIota, {}, {{"shape", s}, {"axis", r - 2}, {"dtype", std::string("i64")}}, 0, true, true));
      KILN_ASSIGN_OR_RETURN(Value col, Add(OpKind::kIota, {}, {{"shape", s}, {"axis", r - 1}, {"dtype", std::string("i64")}}, 0, true, true));
      KILN_ASSIGN_OR_RETURN(cond, Add(rng_.Pick(kCompare), {row, col}, {}, 1, true, true));
    } else {
      KILN_ASSIGN_OR_RETURN(Value c1, Partner(x, /*exact_only=*/true));
      if (!c1.exact) {
      KILN_ASSIGN_OR_RETURN(c1, NewInput(x.dtype(), x.shape()));
    }
      KILN_ASSIGN_OR_RETURN(Value c2, Partner(c1, /*exact_only=*/true));
      if (!c2.exact) {
      KILN_ASSIGN_OR_RETURN(c2, Scalar(c1.dtype(), 0));
    }
      KILN_ASSIGN_OR_RETURN(cond, Add(rng_.Pick(kCompare), {c1, c2}, {}, 1, true, true));
    }
    if (rng_.Chance(0.3)) {
      KILN_ASSIGN_OR_RETURN(Value other, NewInput(DType::kBool, BroadcastableTo(cond.shape())));
      KILN_ASSIGN_OR_RETURN(cond, Add(rng_.Chance(0.5) ? OpKind::kLogicalAnd : OpKind::kLogicalOr, {cond, other}, {}, 1, true, true));
    }
    if (rng_.Chance(0.2)) {
      KILN_ASSIGN_OR_RETURN(cond, Add(OpKind::kLogicalNot, {cond}, {}, 1, true, true));
    }
    KILN_ASSIGN_OR_RETURN(Value y, Partner(x));
    if (!BroadcastsTo(cond.shape(), x.shape())) return absl::InternalError("select: condition shape");
    return Add(OpKind::kWhere, {cond, x, y}, {}, std::max(x.bound, y.bound), x.exact && y.exact,
               x.nonneg && y.nonneg).status();
  }

  // Random axes of a value of rank >= 1 (empty: all of them).
  std::vector<int64_t> RandomAxes(int64_t rank) {
    std::vector<int64_t> axes;
    if (rng_.Chance(0.1)) return axes;
    for (int64_t a = 0; a < rank; ++a) {
      if (rng_.Chance(0.4)) axes.push_back(rng_.Chance(0.2) ? a - rank : a);
    }
    if (axes.empty()) axes.push_back(rng_.Below(rank));
    return axes;
  }

  absl::Status Reduce() {
    KILN_ASSIGN_OR_RETURN(Value x, PickFloat());
    if (Rank(x) == 0) return UnaryOn(x);
    const std::vector<int64_t> axes = RandomAxes(Rank(x));
    int64_t n = 1;
    for (int64_t a = 0; a < Rank(x); ++a) {
      const bool reduced = axes.empty() || std::count(axes.begin(), axes.end(), a) ||
                           std::count(axes.begin(), axes.end(), a - Rank(x));
      if (reduced) n *= x.shape()[a];
    }
    const OpKind op = rng_.Pick(std::vector<OpKind>{OpKind::kReduceSum, OpKind::kReduceSum, OpKind::kReduceMean,
                                                    OpKind::kReduceMax, OpKind::kReduceMin});
    Attributes attrs{{"axes", axes}, {"keep_dims", rng_.Chance(0.4)}};
    if (op == OpKind::kReduceSum) {
      const double growth = x.nonneg ? static_cast<double>(n) : std::min<double>(n, 3 * std::sqrt(double(n)));
      KILN_ASSIGN_OR_RETURN(x, Tame(x, std::max(1e-2, 1e4 / growth)));
      return Add(op, {x}, std::move(attrs), x.bound * growth, false, x.nonneg).status();
    }
    const bool exact = op != OpKind::kReduceMean && x.exact;
    return Add(op, {x}, std::move(attrs), x.bound, exact, x.nonneg).status();
  }

  absl::Status SoftmaxOp() {
    KILN_ASSIGN_OR_RETURN(Value x, PickFloat());
    if (Rank(x) == 0) return UnaryOn(x);
    KILN_ASSIGN_OR_RETURN(x, Tame(x, 4));
    const int64_t axis = rng_.Below(2 * Rank(x)) - Rank(x);
    const int64_t n = x.shape()[axis < 0 ? axis + Rank(x) : axis];
    if (rng_.Chance(0.5)) return Add(OpKind::kSoftmax, {x}, {{"axis", axis}}, 1, false, true).status();
    return Add(OpKind::kLogSoftmax, {x}, {{"axis", axis}}, 2 * x.bound + std::log(double(n)) + 1, false, false).status();
  }

  absl::Status Norm() {
    KILN_ASSIGN_OR_RETURN(Value x, PickFloat());
    if (Rank(x) == 0) return UnaryOn(x);
    KILN_ASSIGN_OR_RETURN(x, Tame(x, 2));
    // A fresh input added keeps every row's spread of the order of its mean: a norm of a
    // (nearly) constant row amplifies the rounding of its input by mean / spread, past any
    // dtype tolerance (seed 3462: layer_norm of x / (|max| + 0.5) with x one scalar).
    KILN_ASSIGN_OR_RETURN(Value noise, NewInput(x.dtype(), x.shape()));
    KILN_ASSIGN_OR_RETURN(x, Add(OpKind::kAdd, {x, noise}, {}, x.bound + 1, false, false));
    const int64_t axis = rng_.Below(Rank(x));
    const Shape normalised(x.shape().begin() + axis, x.shape().end());
    const bool layer = rng_.Chance(0.5);
    std::vector<Value> operands = {x};
    if (rng_.Chance(0.7)) {
      KILN_ASSIGN_OR_RETURN(Value w, NewInput(x.dtype(), normalised));
      operands.push_back(w);
      if (layer && rng_.Chance(0.6)) {
        KILN_ASSIGN_OR_RETURN(Value b, NewInput(x.dtype(), normalised));
        operands.push_back(b);
      }
    }
    const double eps = rng_.Pick(std::vector<double>{1e-5, 1e-6, 1e-3});
    const double bound = std::min(std::sqrt(double(NumElements(normalised))), 8.0) + 1;
    return Add(layer ? OpKind::kLayerNorm : OpKind::kRmsNorm, operands,
               {{"axis", rng_.Chance(0.3) ? axis - Rank(x) : axis}, {"eps", eps}}, bound, false, false).status();
  }

  absl::Status CrossEntropyOp() {
    KILN_ASSIGN_OR_RETURN(Value x, PickFloat());
    KILN_ASSIGN_OR_RETURN(x, Tame(x, 4));
    const int64_t c = Rank(x) == 0 ? 1 : x.shape().back();
    const int64_t rows = NumElements(x.shape()) / c;
    if (Rank(x) != 2) {
      KILN_ASSIGN_OR_RETURN(x, Add(OpKind::kReshape, {x}, {{"shape", Shape{rows, c}}}, x.bound, x.exact, x.nonneg));
    }
    KILN_ASSIGN_OR_RETURN(Value t, NewInput(DType::kI64, Shape{rows}));
    const std::string reduction = rng_.Pick(std::vector<std::string>{"none", "mean", "sum"});
    const double bound = (2 * x.bound + std::log(double(c)) + 1) * (reduction == "sum" ? double(rows) : 1.0);
    return Add(OpKind::kCrossEntropy, {x, t}, {{"reduction", reduction}}, bound, false, true).status();
  }

  absl::Status DropoutOp() {
    KILN_ASSIGN_OR_RETURN(Value x, PickFloat());
    const double p = rng_.Pick(std::vector<double>{0.1, 0.25, 0.5});
    const OpKind op = rng_.Chance(0.8) ? OpKind::kDropout : OpKind::kDropoutGrad;
    std::vector<Value> operands = {x};
    if (rng_.Chance(0.3)) {  // seed and offset as i64 scalars given at run time
      KILN_ASSIGN_OR_RETURN(Value seed, NewInput(DType::kI64, Shape{}));
      KILN_ASSIGN_OR_RETURN(Value offset, NewInput(DType::kI64, Shape{}));
      operands.push_back(seed);
      operands.push_back(offset);
    }
    Attributes attrs{{"p", p}, {"seed", rng_.Below(1 << 20)}, {"offset", 4 * rng_.Below(1 << 10)}};
    return Add(op, operands, std::move(attrs), x.bound / (1 - p), x.exact && p == 0.5, x.nonneg).status();
  }

  absl::Status Layout() {
    KILN_ASSIGN_OR_RETURN(Value x, PickFloat());
    const Shape& s = x.shape();
    const int64_t r = Rank(x);
    auto keep = [&](OpKind op, const std::vector<Value>& operands, Attributes attrs) {
      return Add(op, operands, std::move(attrs), x.bound, x.exact, x.nonneg).status();
    };
    switch (rng_.Below(6)) {
      case 0: {  // reshape: merge two neighbours, split one, add or drop 1s
        Shape out = s;
        const int64_t kind = rng_.Below(3);
        if (kind == 0 && r >= 2) {
          const int64_t i = rng_.Below(r - 1);
          out[i] *= out[i + 1];
          out.erase(out.begin() + i + 1);
        } else if (kind == 1 && r >= 1) {
          const int64_t i = rng_.Below(r);
          int64_t f = 1;
          for (int64_t d : {2, 3, 4, 5, 7, 8, 16}) {
            if (out[i] % d == 0 && rng_.Chance(0.5)) { f = d; break; }
          }
          out[i] /= f;
          out.insert(out.begin() + i, f);
        } else {
          out.erase(std::remove(out.begin(), out.end(), int64_t{1}), out.end());
          out.insert(out.begin() + rng_.Below(static_cast<int64_t>(out.size()) + 1), 1);
        }
        if (!out.empty() && rng_.Chance(0.2)) out[rng_.Below(static_cast<int64_t>(out.size()))] = -1;
        return keep(OpKind::kReshape, {x}, {{"shape", out}});
      }
      case 1: {  // transpose
        if (r < 2) return UnaryOn(x);
        std::vector<int64_t> perm(r);
        for (int64_t i = 0; i < r; ++i) perm[i] = i;
        for (int64_t i = r - 1; i > 0; --i) std::swap(perm[i], perm[rng_.Below(i + 1)]);
        if (std::is_sorted(perm.begin(), perm.end())) std::swap(perm[r - 1], perm[r - 2]);
        return keep(OpKind::kTranspose, {x}, {{"perm", perm}});
      }
      case 2: {  // slice
        if (r == 0) return UnaryOn(x);
        std::vector<int64_t> starts(r, 0), ends(s), steps(r, 1);
        for (int64_t i = 0; i < r; ++i) {
          if (!rng_.Chance(0.5) || s[i] == 1) continue;
          starts[i] = rng_.Below(s[i]);
          ends[i] = rng_.Chance(0.2) ? s[i] + 7 : starts[i] + 1 + rng_.Below(s[i] - starts[i]);
          if (rng_.Chance(0.2)) steps[i] = 2 + rng_.Below(2);
          if (rng_.Chance(0.2)) starts[i] -= s[i];  // counted from the end
        }
        return keep(OpKind::kSlice, {x}, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
      }
      case 3: {  // concat of 2-3 values that differ only along the axis
        if (r == 0) return UnaryOn(x);
        const int64_t axis = rng_.Below(r);
        std::vector<Value> parts = {x};
        const int64_t more = 1 + rng_.Below(2);
        bool exact = x.exact;
        for (int64_t k = 0; k < more; ++k) {
          Shape t = s;
          t[axis] = 1 + rng_.Below(std::min<int64_t>(s[axis], 64));
          if (rng_.Chance(0.3)) { parts.push_back(x); continue; }
          KILN_ASSIGN_OR_RETURN(Value p, NewInput(x.dtype(), t));
          parts.push_back(p);
          exact = exact && p.exact;
        }
        int64_t total = 0;
        for (const Value& p : parts) total += NumElements(p.shape());
        if (total > 4 * Limit()) return UnaryOn(x);
        return Add(OpKind::kConcat, parts, {{"axis", rng_.Chance(0.3) ? axis - r : axis}}, x.bound, exact, x.nonneg).status();
      }
      case 4: {  // gather along an axis by i64 indices of rank 1 or 2
        if (r == 0) return UnaryOn(x);
        const int64_t axis = rng_.Below(r);
        Shape idx = rng_.Chance(0.7) ? Shape{1 + rng_.Below(9)} : Shape{1 + rng_.Below(4), 1 + rng_.Below(5)};
        for (int64_t& d : idx) {
          while (d > 1 && NumElements(s) / s[axis] * NumElements(idx) > Limit()) d /= 2;
        }
        KILN_ASSIGN_OR_RETURN(Value i, NewInput(DType::kI64, idx));
        return keep(OpKind::kGather, {x, i}, {{"axis", axis}});
      }
      default: {  // broadcast_to: expand 1s, maybe a new leading axis
        Shape out = s;
        for (int64_t& d : out) {
          if (d == 1 && rng_.Chance(0.7)) d = Extent();
        }
        if (rng_.Chance(0.5)) out.insert(out.begin(), 1 + rng_.Below(4));
        if (NumElements(out) > Limit()) out = s;  // a no-op broadcast is a valid one too
        return keep(OpKind::kBroadcastTo, {x}, {{"shape", out}});
      }
    }
  }

  absl::Status Matmul() {
    if (!options_.matmul) return Unary();
    KILN_ASSIGN_OR_RETURN(Value a, PickFloat());
    KILN_ASSIGN_OR_RETURN(a, Tame(a, 2));
    if (Rank(a) < 2) {
      const Shape row = {1, Rank(a) == 0 ? 1 : a.shape()[0]};
      KILN_ASSIGN_OR_RETURN(a, Add(OpKind::kReshape, {a}, {{"shape", row}}, a.bound, a.exact, a.nonneg));
    }
    const Shape& s = a.shape();
    const int64_t k = s.back();
    int64_t n = rng_.Pick(std::vector<int64_t>{1, 8, 16, 33, 64, 128, 256, 1000});
    while (n > 1 && NumElements(s) / k * n > Limit()) n /= 2;
    while (n > 1 && k * n > 4 * Limit()) n /= 2;
    Value b;
    const int64_t form = rng_.Below(10);
    if (form < 2 && Rank(a) > 2) {  // batched right operand
      Shape bs(s.begin(), s.end() - 2);
      bs.push_back(k);
      bs.push_back(n);
      KILN_ASSIGN_OR_RETURN(b, NewInput(a.dtype(), bs));
    } else if (form < 4) {  // a transposed weight, as Linear layers store it
      KILN_ASSIGN_OR_RETURN(Value w, NewInput(a.dtype(), Shape{n, k}));
      KILN_ASSIGN_OR_RETURN(b, Add(OpKind::kTranspose, {w}, {{"perm", std::vector<int64_t>{1, 0}}}, 1, true, false));
    } else {
      KILN_ASSIGN_OR_RETURN(b, NewInput(a.dtype(), Shape{k, n}));
    }
    return Add(OpKind::kMatmul, {a, b}, {}, 2 * a.bound + 1, false, false).status();
  }

  // rms_norm or layer_norm over the last axis of a fresh [rows, k] input, read only by a Linear layer: the
  // pattern the norm_matmul kind folds (passes/fusion/norm_matmul_plan.h) where it pays, at the
  // token rows, widths and weight layouts it tiles (and some it must refuse: odd k, f16, f32).
  absl::Status NormLinear() {
    if (!options_.matmul) return Unary();
    const int64_t rows = rng_.Pick(std::vector<int64_t>{1, 3, 8, 16, 33, 64, 100});
    const int64_t k = rng_.Chance(0.9) ? 8 * (1 + rng_.Below(64)) : 1 + rng_.Below(300);
    int64_t n = rng_.Pick(std::vector<int64_t>{8, 16, 24, 64, 136, 264});
    while (n > 8 && rows * n > Limit()) n /= 2;
    const DType dtype = rng_.Chance(0.8) ? DType::kBF16 : main_dtype_;
    KILN_ASSIGN_OR_RETURN(Value x, NewInput(dtype, Shape{rows, k}));
    std::vector<Value> operands = {x};
    if (rng_.Chance(0.8)) {
      KILN_ASSIGN_OR_RETURN(Value w, NewInput(dtype, Shape{k}));
      operands.push_back(w);
    }
    // layer_norm (its bias a second [k] input) a third of the time: the centred fold.
    const bool layer = rng_.Chance(0.33);
    if (layer) {
      if (operands.size() == 1) {
        KILN_ASSIGN_OR_RETURN(Value w, NewInput(dtype, Shape{k}));
        operands.push_back(w);
      }
      KILN_ASSIGN_OR_RETURN(Value bias, NewInput(dtype, Shape{k}));
      operands.push_back(bias);
    }
    const double bound = std::min(std::sqrt(double(k)), 8.0) + 1 + (layer ? 1 : 0);
    KILN_ASSIGN_OR_RETURN(Value y, Add(layer ? OpKind::kLayerNorm : OpKind::kRmsNorm, operands,
                                       {{"axis", int64_t{-1}}, {"eps", layer ? 1e-5 : 1e-6}}, bound, false, false));
    Value b;
    if (rng_.Chance(0.3)) {
      KILN_ASSIGN_OR_RETURN(Value w, NewInput(dtype, Shape{n, k}));
      KILN_ASSIGN_OR_RETURN(b, Add(OpKind::kTranspose, {w}, {{"perm", std::vector<int64_t>{1, 0}}}, 1, true, false));
    } else {
      KILN_ASSIGN_OR_RETURN(b, NewInput(dtype, Shape{k, n}));
    }
    return Add(OpKind::kMatmul, {y, b}, {}, 2 * y.bound + 1, false, false).status();
  }

  absl::Status AttentionOp() {
    if (!options_.matmul) return Unary();  // attention the template does not run lowers to matmuls
    const DType dtype = rng_.Chance(0.85) ? main_dtype_ : DType::kF32;
    const int64_t batch = 1 + rng_.Below(2), heads = rng_.Pick(std::vector<int64_t>{1, 2, 3, 4});
    int64_t sq = rng_.Pick(std::vector<int64_t>{1, 7, 16, 64, 100, 129, 256});
    int64_t sk = rng_.Chance(0.5) ? sq : rng_.Pick(std::vector<int64_t>{1, 16, 77, 128, 300});
    const int64_t d = rng_.Pick(std::vector<int64_t>{16, 32, 48, 64, 64, 80, 96, 128, 128, 256});
    const int64_t e = rng_.Chance(0.8) ? d : rng_.Pick(std::vector<int64_t>{32, 64, 128});
    while (batch * heads * std::max(sq, sk) * std::max(d, e) > Limit() && std::max(sq, sk) > 1) {
      sq = std::max<int64_t>(1, sq / 2), sk = std::max<int64_t>(1, sk / 2);
    }
    const bool rank3 = rng_.Chance(0.2);
    auto shape = [&](int64_t seq, int64_t dim) {
      return rank3 ? Shape{batch * heads, seq, dim} : Shape{batch, heads, seq, dim};
    };
    KILN_ASSIGN_OR_RETURN(Value q, NewInput(dtype, shape(sq, d)));
    KILN_ASSIGN_OR_RETURN(Value k, NewInput(dtype, shape(sk, d)));
    KILN_ASSIGN_OR_RETURN(Value v, NewInput(dtype, shape(sk, e)));
    if (rng_.Chance(0.25)) return WrittenOutAttention(q, k, v, sq, sk, d);
    std::vector<Value> operands = {q, k, v};
    if (rng_.Chance(0.4)) {
      const Shape scores = rank3 ? Shape{batch * heads, sq, sk} : Shape{batch, heads, sq, sk};
      Shape m = scores;
      switch (rng_.Below(4)) {
        case 0: m = rank3 ? Shape{batch * heads, 1, sk} : Shape{batch, 1, 1, sk}; break;  // padding
        case 1: m = Shape{sq, sk}; break;
        case 2: m = Shape{sk}; break;
        default: break;  // per head
      }
      Value mask;
      if (rng_.Chance(0.5)) {  // 0 where kept, -inf where masked: rows may be fully masked
        KILN_ASSIGN_OR_RETURN(Value keepers, NewInput(DType::kBool, m));
        KILN_ASSIGN_OR_RETURN(Value zero, Scalar(dtype, 0));
        KILN_ASSIGN_OR_RETURN(Value ninf, Scalar(dtype, -INFINITY));
        KILN_ASSIGN_OR_RETURN(mask, Add(OpKind::kWhere, {keepers, zero, ninf}, {}, INFINITY, true, false));
      } else {
        KILN_ASSIGN_OR_RETURN(mask, NewInput(dtype, m));
      }
      operands.push_back(mask);
    }
    Attributes attrs{{"causal", rng_.Chance(0.3)}};
    if (rng_.Chance(0.3)) attrs.Set("scale", rng_.Uniform(0.05, 0.5));
    // Sometimes its log-sum-exp as well (the attention kernel writes both), rarely alone.
    const int form = rng_.Below(10);  // 0-6 attention, 7-8 both, 9 attention_lse alone
    if (form <= 8) KILN_RETURN_IF_ERROR(Add(OpKind::kAttention, operands, attrs, 1, false, false).status());
    if (form < 7) return absl::OkStatus();
    std::vector<Value> lse = {operands[0], operands[1]};
    if (operands.size() > 3) lse.push_back(operands[3]);
    return Add(OpKind::kAttentionLse, lse, std::move(attrs), INFINITY, false, false).status();
  }

  // Attention written out as exporters write it, for match_attention: softmax(q k^T * c + mask)
  // v with an index mask, j - i <= kd (le) or j - i < kd (lt) through iotas, as an additive
  // 0 / -inf, as a where on the scores, or in the form torch's ONNX export of is_causal takes
  // (where(trilu(ones) == 0, -inf, 0)). match_attention must take it for causal exactly when it
  // keeps j <= i (le 0, lt 1); other diagonals stay a mask, and the plan check compares both with
  // the graph as written. kd >= 0 keeps the diagonal, so no row is fully masked (there
  // attention's 0 and softmax's NaN differ by definition).
  absl::Status WrittenOutAttention(const Value& q, const Value& k, const Value& v, int64_t sq, int64_t sk, int64_t d) {
    const DType dtype = q.dtype();
    const int64_t rank = Rank(q);
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
    std::swap(perm[rank - 1], perm[rank - 2]);
    KILN_ASSIGN_OR_RETURN(Value kt, Add(OpKind::kTranspose, {k}, {{"perm", perm}}, k.bound, true, false));
    KILN_ASSIGN_OR_RETURN(Value s, Add(OpKind::kMatmul, {q, kt}, {}, q.bound * k.bound * d, false, false));
    if (rng_.Chance(0.5)) {
      KILN_ASSIGN_OR_RETURN(Value c, Scalar(dtype, rng_.Uniform(0.05, 0.5)));
      KILN_ASSIGN_OR_RETURN(s, Add(OpKind::kMul, {s, c}, {}, s.bound, false, false));
    }
    const Shape plane{sq, sk};
    const double extent = static_cast<double>(std::max(sq, sk));
    KILN_ASSIGN_OR_RETURN(Value i, Add(OpKind::kIota, {}, {{"shape", plane}, {"axis", int64_t{0}}, {"dtype", std::string("i64")}},
                                       extent, true, true));
    KILN_ASSIGN_OR_RETURN(Value j, Add(OpKind::kIota, {}, {{"shape", plane}, {"axis", int64_t{1}}, {"dtype", std::string("i64")}},
                                       extent, true, true));
    KILN_ASSIGN_OR_RETURN(Value diag, Add(OpKind::kSub, {j, i}, {}, extent, true, false));
    const bool lt = rng_.Chance(0.3);
    const int64_t kd = rng_.Pick(std::vector<int64_t>{0, 0, 0, 1, 2});
    KILN_ASSIGN_OR_RETURN(Value kc, Scalar(DType::kI64, static_cast<double>(lt ? kd + 1 : kd)));
    KILN_ASSIGN_OR_RETURN(Value keep, Add(lt ? OpKind::kLt : OpKind::kLe, {diag, kc}, {}, 1, true, true));
    KILN_ASSIGN_OR_RETURN(Value zero, Scalar(dtype, 0));
    KILN_ASSIGN_OR_RETURN(Value ninf, Scalar(dtype, -INFINITY));
    Value masked;
    switch (rng_.Below(3)) {
      case 0: {  // additive 0 / -inf
        KILN_ASSIGN_OR_RETURN(Value mask, Add(OpKind::kWhere, {keep, zero, ninf}, {}, INFINITY, true, false));
        KILN_ASSIGN_OR_RETURN(masked, Add(OpKind::kAdd, {s, mask}, {}, INFINITY, false, false));
        break;
      }
      case 1: {  // masked_fill on the scores
        KILN_ASSIGN_OR_RETURN(masked, Add(OpKind::kWhere, {keep, s, ninf}, {}, INFINITY, false, false));
        break;
      }
      default: {  // torch's export: where(trilu(ones) == 0, -inf, 0)
        KILN_ASSIGN_OR_RETURN(Value one, Scalar(dtype, 1));
        KILN_ASSIGN_OR_RETURN(Value ones, Add(OpKind::kBroadcastTo, {one}, {{"shape", plane}}, 1, true, true));
        KILN_ASSIGN_OR_RETURN(Value tril, Add(OpKind::kWhere, {keep, ones, zero}, {}, 1, true, true));
        KILN_ASSIGN_OR_RETURN(Value dropped, Add(OpKind::kEq, {tril, zero}, {}, 1, true, true));
        KILN_ASSIGN_OR_RETURN(Value mask, Add(OpKind::kWhere, {dropped, ninf, zero}, {}, INFINITY, true, false));
        KILN_ASSIGN_OR_RETURN(masked, Add(OpKind::kAdd, {s, mask}, {}, INFINITY, false, false));
        break;
      }
    }
    KILN_ASSIGN_OR_RETURN(Value p, Add(OpKind::kSoftmax, {masked}, {{"axis", rank - 1}}, 1, false, true));
    return Add(OpKind::kMatmul, {p, v}, {}, v.bound, false, false).status();
  }

  Graph& graph_;
  Rng rng_;
  RandomGraphOptions options_;
  DType main_dtype_;
  std::vector<Value> values_;
  int inputs_ = 0, constants_ = 0;
};

}  // namespace

int DefaultOpsForSeed(uint64_t seed) {
  uint64_t state = seed ^ 0x5eedull;
  return 1 + static_cast<int>(SplitMix(state) % 12);
}

absl::StatusOr<std::unique_ptr<Graph>> RandomGraph(uint64_t seed, const RandomGraphOptions& options) {
  auto graph = std::make_unique<Graph>(absl::StrCat("random_", seed, "_", options.ops));
  Generator generator(*graph, seed, options);
  KILN_RETURN_IF_ERROR(generator.Run());
  return graph;
}

}  // namespace kiln
