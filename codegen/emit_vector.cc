// The vectorised plain emitter: pointwise and layout regions that the broadcast-only vector form
// (emit_elementwise.cc) does not run but whose LayoutPlan allows V consecutive positions per
// thread (passes/fusion/plain_vector.h) -> templates/pointwise.cuh PointwiseKernel with Body::Vector
// only. Per vector at position i (a multiple of V):
//   once      the outer canonical coordinates (64-bit divisions by constants) and the inner
//             index j = i % P; per distinct canonical form its outer part; per concat its axis
//             coordinate and a guard per piece; contiguous reads as one LoadVec, uniform ones as
//             one scalar
//   per lane  the region's nodes as straight-line code, walking back from each output with affine
//             indices (layout_access.h's step functions, as emit_layout.cc does); a gathered read
//             at its outer part + its inner coefficients times the lane's inner coordinates (32-bit
//             arithmetic)
//   stores    one StoreVec per output.
// A concat selects the same piece for every lane (the plan checks it): the lanes compute every
// piece and select one, and each load inside piece k reads element 0 of its tensor unless piece k
// is selected (a guard), so an unselected piece never reads outside its input.
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/affine_member.h"
#include "codegen/emit_kernel.h"
#include "codegen/emitter_util.h"
#include "ir/base/status.h"
#include "passes/fusion/layout_access.h"
#include "passes/fusion/plain_vector.h"
#include "passes/fusion/region_kind.h"

namespace kiln {
namespace codegen_internal {
namespace {

class VectorEmitter {
 public:
  VectorEmitter(const Region& region, const KernelParams& params)
      : r_(region), plan_(*region.layout), p_(params), v_(params.vector_width),
        inner_(VectorInnerAxes(plan_, v_)), axes_(static_cast<int>(plan_.extents.size())) {}

  absl::StatusOr<KernelSource> Emit();

 private:
  bool Member(const Node* n) const { return members_.count(n) > 0; }
  AffineForm CanonicalAt(const Node* n, const AffineIndex& at) const {
    return plan_.Canonical(LinearForm(at, n->shape(), plan_.space));
  }
  // The outer part of `f`: offset + its outer coefficients times the outer coordinates, as a
  // variable (or a literal), computed once per vector.
  std::string Outer(const AffineForm& f);
  // The 32-bit coordinate along inner axis `d` of lane `lane` (more than one inner axis).
  std::string InnerCoord(int d, int lane);
  // The value of `f` at `lane`.
  std::string At(const AffineForm& f, int lane);
  // `address`, or 0 where the current concat guard does not hold.
  std::string Guarded(const std::string& address) const {
    return guard_.empty() ? address : absl::StrCat("(", guard_, " ? ", address, " : 0LL)");
  }
  absl::StatusOr<TypedExpr> Value(const Node* n, const AffineIndex& at);
  absl::StatusOr<TypedExpr> Load(const Node* n, const AffineForm& f);
  absl::StatusOr<TypedExpr> Select(const Node* concat, const AffineIndex& at);
  std::string Prologue() const;

  const Region& r_;
  const LayoutPlan& plan_;
  KernelParams p_;
  const int v_, inner_, axes_;
  std::set<const Node*> members_;
  std::map<const Node*, std::string> in_names_, out_names_;
  CodeWriter pre_{2};  // once per vector, after the prologue
  CodeWriter w_{2};    // the lanes
  int lane_ = 0;
  std::string guard_;  // the conjunction of the enclosing concat pieces' guards
  std::map<std::string, std::string> memo_;  // outer parts, inner coordinates, loads, selects
  bool uses_philox_ = false, uses_j32_ = false;
  int reads_[3] = {0, 0, 0};  // by LaneAccess
};

std::string VectorEmitter::Outer(const AffineForm& f) {
  std::vector<std::string> terms;
  for (int d = 0; d < axes_ - inner_; ++d) terms.push_back(Scale(absl::StrCat("c", d), f.coeff[d]));
  if (f.offset != 0) terms.push_back(absl::StrCat(f.offset, "LL"));
  const std::string value = SumTerms(terms);
  if (value.find(' ') == std::string::npos) return value;  // "0", "c0", "12LL"
  std::string& var = memo_["outer:" + value];
  if (var.empty()) {
    var = pre_.Fresh("b");
    pre_.Line(absl::StrCat("const long long ", var, " = ", value, ";"));
  }
  return var;
}

std::string VectorEmitter::InnerCoord(int d, int lane) {
  std::string& var = memo_[absl::StrCat("inner:", d, "@", lane)];
  if (!var.empty()) return var;
  uses_j32_ = true;
  int64_t stride = 1;
  for (int e = axes_ - 1; e > d; --e) stride *= plan_.extents[e];
  std::string q = lane == 0 ? "j32" : absl::StrCat("(j32 + ", lane, ")");
  if (stride != 1) q = absl::StrCat("(", q, " / ", stride, ")");
  if (d != axes_ - inner_) q = absl::StrCat("(", q, " % ", plan_.extents[d], ")");
  var = w_.Fresh("q");
  w_.Line(absl::StrCat("const int ", var, " = ", q, ";"));
  return var;
}

std::string VectorEmitter::At(const AffineForm& f, int lane) {
  bool linear = f.offset == 0;  // the space's own row-major index: i
  int64_t stride = 1;
  for (int d = axes_ - 1; d >= 0; --d) {
    linear &= f.coeff[d] == stride;
    stride *= plan_.extents[d];
  }
  if (linear) return lane == 0 ? "i" : absl::StrCat("(i + ", lane, "LL)");
  const std::string outer = Outer(f);
  const std::string j = lane == 0 ? "j" : absl::StrCat("(j + ", lane, "LL)");
  switch (LanesOf(plan_, inner_, v_, f)) {
    case LaneAccess::kUniform: return outer;
    case LaneAccess::kContiguous: return SumTerms({outer, j});
    case LaneAccess::kGather: break;
  }
  if (inner_ == 1) return SumTerms({outer, Scale(j, f.coeff[axes_ - 1])});
  std::vector<std::string> terms = {outer};
  for (int d = axes_ - inner_; d < axes_; ++d) {
    if (f.coeff[d] != 0) terms.push_back(absl::StrCat("static_cast<long long>(", InnerCoord(d, lane), ") * ", f.coeff[d], "LL"));
  }
  return SumTerms(terms);
}

absl::StatusOr<TypedExpr> VectorEmitter::Load(const Node* n, const AffineForm& f) {
  const std::string& in = in_names_.at(n);
  const CType type = ComputeType(n->dtype());
  const LaneAccess lanes = LanesOf(plan_, inner_, v_, f);
  if (lanes == LaneAccess::kGather) {
    return TypedExpr{absl::StrCat("kiln::ToCompute(", in, "[", Guarded(At(f, lane_)), "])"), type};
  }
  std::string& var = memo_[absl::StrCat("load:", n->name(), "@", f.Key(), "|", guard_)];
  if (var.empty()) {
    ++reads_[static_cast<int>(lanes)];
    var = pre_.Fresh("x");
    if (lanes == LaneAccess::kUniform) {
      pre_.Line(absl::StrCat("const ", CTypeName(type), " ", var, " = kiln::ToCompute(", in, "[", Guarded(At(f, 0)),
                             "]);  // ", n->name(), ", the same for every lane"));
    } else {
      pre_.Line(absl::StrCat(CTypeName(type), " ", var, "[", v_, "];"));
      pre_.Line(absl::StrCat("kiln::LoadVec<", StorageTypeName(n->dtype()), ", ", v_, ">(", in, " + ",
                             Guarded(At(f, 0)), ", ", var, ");  // ", n->name()));
    }
  }
  return TypedExpr{lanes == LaneAccess::kUniform ? var : absl::StrCat(var, "[", lane_, "]"), type};
}

absl::StatusOr<TypedExpr> VectorEmitter::Select(const Node* concat, const AffineIndex& at) {
  int64_t axis = concat->attrs().GetInt("axis");
  if (axis < 0) axis += static_cast<int64_t>(concat->shape().size());
  const AffineForm coord = plan_.Canonical(at[axis]);
  const ConcatSelect* select = nullptr;
  for (const ConcatSelect& s : plan_.selects) {
    if (s.concat == concat && s.coord == coord) select = &s;
  }
  if (select == nullptr) return absl::InternalError(absl::StrCat("the layout plan has no selection of ", concat->name()));
  std::string& along = memo_[absl::StrCat("select:", coord.Key())];
  if (along.empty()) {
    along = pre_.Fresh("s");
    pre_.Line(absl::StrCat("const long long ", along, " = ", At(coord, 0), ";  // ", concat->name(), "'s piece"));
  }
  const CType type = ComputeType(concat->dtype());
  const std::string outer_guard = guard_;
  std::vector<std::pair<int64_t, std::string>> pieces;  // each piece's end and value
  for (int k = 0; k < concat->num_operands(); ++k) {
    const int64_t begin = select->starts[k], end = select->starts[k + 1];
    if (begin == end) continue;
    // keyed by the piece's bounds: two concats on one coordinate may split it differently
    std::string& g = memo_[absl::StrCat("guard:", along, ":", begin, ":", end, "|", outer_guard)];
    if (g.empty()) {
      g = pre_.Fresh("g");
      pre_.Line(absl::StrCat("const bool ", g, " = ", outer_guard.empty() ? "" : outer_guard + " && ", along, " >= ",
                             begin, "LL && ", along, " < ", end, "LL;"));
    }
    guard_ = g;
    std::optional<AffineIndex> oi = OperandIndex(*concat, k, at, plan_.space);
    absl::StatusOr<TypedExpr> piece =
        oi ? Value(concat->operand(k), *oi)
           : absl::InternalError(absl::StrCat(concat->name(), " has no affine index of piece ", k));
    guard_ = outer_guard;
    if (!piece.ok()) return piece.status();
    pieces.push_back({end, Coerce(*piece, type).code});
  }
  if (pieces.empty()) return absl::InvalidArgumentError(absl::StrCat("concat ", concat->name(), " has no elements"));
  std::string e = pieces.back().second;
  for (int k = static_cast<int>(pieces.size()) - 2; k >= 0; --k) {
    e = absl::StrCat("(", along, " < ", pieces[k].first, "LL ? ", pieces[k].second, " : ", e, ")");
  }
  return TypedExpr{e, type};
}

absl::StatusOr<TypedExpr> VectorEmitter::Value(const Node* n, const AffineIndex& at) {
  if (IsInlinedConstant(n)) return ConstantLiteral(*n);
  const std::string key =
      absl::StrCat(n->name(), "@", lane_, "|", guard_, ":", LinearForm(at, n->shape(), plan_.space).Key());
  if (const std::string* v = w_.Lookup(key)) return TypedExpr{*v, ComputeType(n->dtype())};
  TypedExpr e;
  if (!Member(n)) {
    KILN_ASSIGN_OR_RETURN(e, Load(n, CanonicalAt(n, at)));
  } else if (n->op() == OpKind::kConcat) {
    KILN_ASSIGN_OR_RETURN(e, Select(n, at));
  } else {
    KILN_ASSIGN_OR_RETURN(
        e, AffineMemberValue(
               *n, at, plan_.space, [&](const Node* o, const AffineIndex& i) { return Value(o, i); },
               [&] { return At(CanonicalAt(n, at), lane_); }, &uses_philox_));
  }
  const std::string var = w_.Fresh("v");
  w_.Line(absl::StrCat("const ", CTypeName(e.type), " ", var, " = ", e.code, ";",
                       Member(n) ? absl::StrCat("  // ", n->name()) : ""));
  w_.Remember(key, var);
  return TypedExpr{var, e.type};
}

// The outer coordinates and the inner index, once per vector.
std::string VectorEmitter::Prologue() const {
  CodeWriter w(2);
  int64_t inner = 1;
  for (int d = axes_ - inner_; d < axes_; ++d) inner *= plan_.extents[d];
  const bool outer = axes_ > inner_;
  w.Line(absl::StrCat("const long long j = ", outer ? absl::StrCat("i % ", inner, "LL") : "i",
                      ";  // the inner index: canonical axes ", axes_ - inner_, "..", axes_ - 1));
  if (uses_j32_) w.Line("const int j32 = static_cast<int>(j);");
  if (outer) {
    w.Line(absl::StrCat("const long long o = i / ", inner, "LL;"));
    int64_t stride = 1;
    std::vector<std::string> lines;
    for (int d = axes_ - inner_ - 1; d >= 0; --d) {
      lines.push_back(absl::StrCat("const long long c", d, " = ", Coord("o", stride, plan_.extents[d], d == 0), ";"));
      stride *= plan_.extents[d];
    }
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) w.Line(*it);
  }
  return w.text();
}

absl::StatusOr<KernelSource> VectorEmitter::Emit() {
  if (v_ < 2 || v_ > plan_.plain_vector || inner_ == 0) {
    return absl::InvalidArgumentError(absl::StrCat("vector width ", v_, " is not one the layout plan allows (at most ",
                                                   plan_.plain_vector, ")"));
  }
  members_.insert(r_.nodes.begin(), r_.nodes.end());
  KernelSource ks;
  ks.kind = r_.kind;
  ks.template_name = KindInfo(r_.kind).runs_as;
  std::vector<std::string> params, fields;
  PointerParams(r_, &ks.args, &params, &fields, &in_names_, &out_names_);
  params.push_back("long long count");
  ks.count = NumElements(r_.space);
  ks.count_meaning = "elements";

  std::vector<std::string> results, decls;
  CodeWriter stores(2);
  for (size_t k = 0; k < r_.outputs.size(); ++k) {
    const Node* o = r_.outputs[k];
    std::optional<AffineIndex> at = OutputIndex(*o, plan_.space);
    if (!at) return absl::InternalError(absl::StrCat("output ", o->name(), " is not laid out as the space"));
    const std::string name = absl::StrCat("y", k);
    decls.push_back(absl::StrCat("    ", CTypeName(ComputeType(o->dtype())), " ", name, "[", v_, "];\n"));
    for (lane_ = 0; lane_ < v_; ++lane_) {
      KILN_ASSIGN_OR_RETURN(TypedExpr e, Value(StoredValue(o), *at));
      w_.Line(absl::StrCat(name, "[", lane_, "] = ", Coerce(e, ComputeType(o->dtype())).code, ";"));
    }
    lane_ = 0;
    stores.Line(absl::StrCat("kiln::StoreVec<", StorageTypeName(o->dtype()), ", ", v_, ">(", out_names_.at(o), " + ",
                             At(plan_.stores[k], 0), ", ", name, ");  // ", o->name()));
  }
  std::string body = absl::StrCat("  static constexpr int kV = ", v_, ";\n  static constexpr bool kTail = false;\n");
  for (const std::string& f : fields) absl::StrAppend(&body, "  ", f, ";\n");
  absl::StrAppend(&body, "  __device__ __forceinline__ void Vector(long long i) const {\n", Prologue(), pre_.text(),
                  absl::StrJoin(decls, ""), w_.text(), stores.text(), "  }\n");

  ks.params = p_;
  ks.launch.block = p_.block_size;
  ks.launch.items_per_block = static_cast<int64_t>(p_.block_size) * v_;
  std::vector<int64_t> inner(plan_.extents.end() - inner_, plan_.extents.end());
  const std::string how = absl::StrCat(
      "vectorised through the layout plan: ", v_, " elements per thread over the inner axes [",
      absl::StrJoin(inner, ","), "] of [", absl::StrJoin(plan_.extents, ","), "], index arithmetic once per vector; ",
      reads_[static_cast<int>(LaneAccess::kContiguous)], " vector, ", reads_[static_cast<int>(LaneAccess::kUniform)],
      " uniform and the rest per-lane reads");
  ks.notes.push_back(how);
  std::vector<std::string> includes = {"kiln_types.cuh", "pointwise.cuh"};
  if (uses_philox_) includes.push_back("kiln_philox.cuh");
  std::vector<std::string> comment = {
      absl::StrCat("kiln ", RegionKindName(r_.kind), " kernel (", ks.template_name, "), ", p_.ToString()),
      "Generated by codegen/emit_vector.cc from these nodes:"};
  for (const Node* n : r_.nodes) comment.push_back("  " + NodeComment(n));
  comment.push_back(absl::StrCat("Layout: ", how, "."));
  FinishKernel(KindInfo(r_.kind).tag, includes, comment, p_, params, body, "kiln::PointwiseKernel<Body>(body, count);",
               &ks);
  return ks;
}

}  // namespace

absl::StatusOr<KernelSource> EmitVectorKernel(const Region& region, const KernelParams& params) {
  if (region.layout == nullptr || region.layout->plain_vector < 2) {
    return absl::InvalidArgumentError(absl::StrCat("region ", region.id, " has no vectorised plain form"));
  }
  VectorEmitter e(region, params);
  return e.Emit();
}

}  // namespace codegen_internal
}  // namespace kiln
