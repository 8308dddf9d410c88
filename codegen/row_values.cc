// Values and indices of the row emitter (codegen/row_emitter.h): every node of the region is
// evaluated at the current point of the row space, (r, column), where the column is c0 + lane
// in a vector, c for one element, pc for a one-hot pick, and absent in per-row code. A tensor's
// element at that point is the one its placement gives: each part of its shape indexed by the
// row (outer) or the column (reduced), in full, as a numpy broadcast, or not at all.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "codegen/row_emitter.h"
#include "ir/base/status.h"

namespace kiln::codegen_internal {
namespace {

// The index into `part` (a numpy broadcast of `group`, or the group's whole extent in any
// factorisation, or extent 1) of element `var` of the group.
std::string GroupIndex(const Shape& group, Shape part, const std::string& var) {
  const int64_t p = NumElements(part), g = NumElements(group);
  if (p == 1) return "0";
  if (p == g) return var;
  while (!part.empty() && part.front() == 1) part.erase(part.begin());
  return BroadcastIndex(group, part, var);
}

}  // namespace

std::string RowEmitter::Column(int lane) const {
  switch (where_) {
    case RowWhere::kVector: return lane == 0 ? "c0" : absl::StrCat("(c0 + ", lane, ")");
    case RowWhere::kElement: return "c";
    case RowWhere::kPick: return "pc";
    default: return "";
  }
}

absl::StatusOr<std::string> RowEmitter::IndexOf(const Node* n, int lane) const {
  const Placement& place = pl_.Of(n);
  const Shape& s = n->shape();
  const Shape outer = place.Part(s, 0), reduced = place.Part(s, 1), inner = place.Part(s, 2);
  if (NumElements(inner) != 1) return absl::InternalError(absl::StrCat(n->name(), " varies along inner axes"));
  const std::string column = Column(lane);
  if (NumElements(reduced) > 1 && column.empty()) {
    return absl::InternalError(absl::StrCat(n->name(), " is needed outside a loop over the row"));
  }
  const std::string oi = GroupIndex(pl_.space.Group(0), outer, "r");
  const std::string ci = GroupIndex(pl_.space.Group(1), reduced, column);
  return SumTerms({Scale(oi, NumElements(reduced)), ci});
}

bool RowEmitter::VectorLoadable(const Node* n) const {
  const Placement& place = pl_.Of(n);
  const Shape& s = n->shape();
  if (NumElements(place.Part(s, 1)) != N_ || NumElements(place.Part(s, 2)) != 1) return false;
  const int64_t outer = NumElements(place.Part(s, 0));
  return aligned_ || outer == pl_.space.outer;
}

bool RowEmitter::PerRow(const Node* n) const {
  const Placement& p = pl_.Of(n);
  return !p.reduced() && !p.inner() && !p.combined;
}

TypedExpr RowEmitter::SetRowField(const Node* n, const TypedExpr& e) {
  std::string field = absl::StrCat("v", row_decls_.size());
  row_decls_.push_back(absl::StrCat(CTypeName(e.type), " ", field, ";  // ", n->name()));
  row_fields_[n] = field;
  w_.Line(absl::StrCat("row.", field, " = ", e.code, ";  // ", n->name()));
  return TypedExpr{"row." + field, e.type};
}

absl::StatusOr<TypedExpr> RowEmitter::Value(const Node* n, int lane) {
  if (IsInlinedConstant(n)) return ConstantLiteral(*n);
  const CType type = ComputeType(n->dtype());
  if (where_ == RowWhere::kCombined) {
    if (auto it = combine_values_.find(n); it != combine_values_.end()) return TypedExpr{it->second, CType::kFloat};
  } else if (PerRow(n)) {
    if (auto it = row_fields_.find(n); it != row_fields_.end()) return TypedExpr{"row." + it->second, type};
    if (where_ != RowWhere::kRow) {
      return absl::InternalError(absl::StrCat("per-row value ", n->name(), " is read before it is computed"));
    }
    TypedExpr e;
    KILN_ASSIGN_OR_RETURN(e, Member(n) ? Compute(n, -1) : Load(n, -1));
    return SetRowField(n, e);
  }
  const std::string key = absl::StrCat(n->name(), "@", lane);
  if (const std::string* v = w_.Lookup(key)) return TypedExpr{*v, type};
  TypedExpr e;
  KILN_ASSIGN_OR_RETURN(e, Member(n) ? Compute(n, lane) : Load(n, lane));
  if (e.code.find_first_of(" (") == std::string::npos) return e;  // a name already
  std::string var = w_.Fresh("v");
  w_.Line(absl::StrCat("const ", CTypeName(e.type), " ", var, " = ", e.code, ";  // ", n->name()));
  w_.Remember(key, var);
  return TypedExpr{var, e.type};
}

absl::StatusOr<TypedExpr> RowEmitter::Load(const Node* n, int lane) {
  const std::string& arg = in_names_.at(n);
  const CType type = ComputeType(n->dtype());
  if (where_ == RowWhere::kVector && pl_.Of(n).reduced()) {
    if (auto it = vec_fields_.find(n); it != vec_fields_.end()) {
      return TypedExpr{absl::StrCat("x.", it->second, "[", lane, "]"), type};
    }
    if (VectorLoadable(n)) {
      const std::string key = absl::StrCat("vload:", n->name());
      const std::string* found = w_.Lookup(key);
      std::string array = found ? *found : w_.Fresh("x");
      if (!found) {
        KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(n, 0));
        w_.Line(absl::StrCat(CTypeName(type), " ", array, "[", V_, "];  // ", n->name()));
        w_.Line(absl::StrCat("kiln::LoadVec<", StorageTypeName(n->dtype()), ", ", V_, ">(", arg, " + ", index, ", ",
                             array, ");"));
        w_.Remember(key, array);
      }
      return TypedExpr{absl::StrCat(array, "[", lane, "]"), type};
    }
  }
  KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(n, lane));
  return TypedExpr{absl::StrCat("kiln::ToCompute(", arg, "[", index, "])"), type};
}

absl::StatusOr<TypedExpr> RowEmitter::Reduced(const Node* n) const {
  auto it = row_fields_.find(n);
  if (it == row_fields_.end()) {
    return absl::InternalError(absl::StrCat("reduction ", n->name(), " is read before its level is done"));
  }
  return TypedExpr{"row." + it->second, ComputeType(n->dtype())};
}

absl::StatusOr<TypedExpr> RowEmitter::Compute(const Node* n, int lane) {
  if (IsReduction(n)) {
    if (where_ == RowWhere::kCombined) {
      return absl::InternalError(absl::StrCat(n->name(), " is read after the combines"));
    }
    return Reduced(n);
  }
  if (n->op() == OpKind::kReshape || n->op() == OpKind::kBroadcastTo) return Value(n->operand(0), lane);
  std::vector<TypedExpr> operands;
  for (const Node* o : n->operands()) {
    KILN_ASSIGN_OR_RETURN(TypedExpr oe, Value(o, lane));
    operands.push_back(oe);
  }
  uses_philox_ |= n->category() == OpCategory::kRandom;
  const Placement& place = pl_.Of(n);
  const bool shared_philox = n->category() == OpCategory::kRandom && where_ == RowWhere::kVector && V_ % 4 == 0 &&
                             NumElements(place.Part(n->shape(), 1)) == N_ &&
                             NumElements(place.Part(n->shape(), 0)) == pl_.space.outer;
  if (shared_philox) {
    // Lanes 4q..4q+3 are elements 4g..4g+3 (vectors start on kV-element boundaries of the row
    // space, kV a multiple of 4): one Philox call serves them (docs/dropout.md).
    const std::string wkey = absl::StrCat(n->name(), "@words", lane / 4);
    const std::string* words = w_.Lookup(wkey);
    const std::string wvar = words ? *words : w_.Fresh("w");
    KILN_ASSIGN_OR_RETURN(std::string first, IndexOf(n, lane - lane % 4));
    KILN_ASSIGN_OR_RETURN(DropoutPieces d, EmitDropoutShared(*n, operands, absl::StrCat("(", first, ") >> 2"), wvar,
                                                            lane));
    if (!words && !d.words.empty()) {
      w_.Line(absl::StrCat("const kiln::Philox4 ", wvar, " = ", d.words, ";  // ", n->name(), ", lanes ",
                           lane - lane % 4, "..", lane - lane % 4 + 3));
      w_.Remember(wkey, wvar);
    }
    return d.value;
  }
  const bool needs_index = n->op() == OpKind::kIota || n->category() == OpCategory::kRandom;
  std::string index;
  if (needs_index) {
    KILN_ASSIGN_OR_RETURN(index, IndexOf(n, lane));
  }
  return EmitPointwiseExpr(*n, operands, index);
}

}  // namespace kiln::codegen_internal
