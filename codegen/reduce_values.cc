// Values and indices of the reduction emitter (codegen/reduce_emitter.h): every node of the
// region is evaluated at the current point of the space. Rows: (r, column), the column c0 +
// lane in a vector, c for one element, pc for a one-hot pick, none in per-row code. Columns:
// (o, k, i0 + lane), k absent in per-column code. A tensor's element at that point is the one
// its placement gives: each part of its shape indexed by the outer, reduced or inner index,
// in full, as a numpy broadcast, or not at all.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "codegen/reduce_emitter.h"
#include "ir/base/status.h"
#include "passes/fusion/strided_view.h"

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

// The offset of element `var` of a row-major index over `atoms` (outermost first), each atom
// its coordinate (Coord: a division and a modulo by constants) times its stride; in 32 bits
// where the index fits (a multiply-high and a shift; 64-bit ones cost several times that).
std::string AtomsOffset(const ViewDim& atoms, const std::string& var) {
  int64_t below = 1;
  for (const ViewAtom& a : atoms) below *= a.extent;
  const bool narrow = below <= (int64_t{1} << 31) && atoms.size() > 1;
  const std::string v = narrow ? absl::StrCat("static_cast<unsigned>(", var, ")") : var;
  std::vector<std::string> terms;
  for (size_t j = 0; j < atoms.size(); ++j) {
    below /= atoms[j].extent;
    std::string c = Coord(v, below, atoms[j].extent, j == 0, narrow ? "u" : "LL");
    if (narrow) c = absl::StrCat("static_cast<long long>(", c, ")");
    terms.push_back(Scale(c, atoms[j].stride));
  }
  return SumTerms(terms);
}

// The atoms of group g of the space in tensor `n`, read through the transpose `place.through`
// or stored through `n` itself (`place.stored_through`, reduce_placement.h): its dims of the
// group, merged where their strides in `n` chain.
ViewDim ThroughAtoms(const Node* n, const Placement& place, int g) {
  std::optional<StridedView> view = place.stored_through != nullptr ? ViewBack(ContiguousView(n), n)
                                                                    : ViewThrough(ContiguousView(n), place.through);
  KILN_CHECK(view.has_value()) << n->name() << " is not viewed through a transpose";
  const size_t rank = view->dims.size();
  const size_t b = g == 0 ? 0 : static_cast<size_t>(place.cut[g - 1]);
  const size_t e = g == 2 ? rank : static_cast<size_t>(place.cut[g]);
  return FlattenDims(*view, std::min(b, rank), std::min(e, rank));
}

}  // namespace

std::string ReduceEmitter::ReducedIndex(int lane) const {
  if (column_) return where_ == Where::kVector ? "k" : "";
  switch (where_) {
    case Where::kVector: return lane == 0 ? "c0" : absl::StrCat("(c0 + ", lane, ")");
    case Where::kElement: return "c";
    case Where::kPick: return "pc";
    default: return "";
  }
}

absl::StatusOr<std::string> ReduceEmitter::IndexOf(const Node* n, int lane) const {
  const Placement& place = pl_.Of(n);
  const Shape outer = place.Part(n, 0), reduced = place.Part(n, 1), inner = place.Part(n, 2);
  const std::string reduced_index = ReducedIndex(lane);
  if (NumElements(reduced) > 1 && reduced_index.empty()) {
    return absl::InternalError(absl::StrCat(n->name(), " is needed outside a loop over the reduced axis"));
  }
  // A ragged column's lanes past the inner extent read its last column (and store nothing).
  const std::string inner_index = lane <= 0  ? "i0"
                                  : ragged_ ? absl::StrCat("min(i0 + ", lane, ", ", I_ - 1, "LL)")
                                            : absl::StrCat("(i0 + ", lane, ")");
  if (NumElements(inner) > 1 && !column_) return absl::InternalError(absl::StrCat(n->name(), " varies along inner axes"));
  const std::string oi = GroupIndex(pl_.space.Group(0), outer, column_ ? "o" : "r");
  const std::string ri = GroupIndex(pl_.space.Group(1), reduced, reduced_index);
  const std::string ii = column_ ? GroupIndex(pl_.space.Group(2), inner, inner_index) : "0";
  if (place.through != nullptr || place.stored_through != nullptr) {  // each part is 1 or the group (Validate)
    return SumTerms({AtomsOffset(ThroughAtoms(n, place, 0), oi), AtomsOffset(ThroughAtoms(n, place, 1), ri),
                     AtomsOffset(ThroughAtoms(n, place, 2), ii)});
  }
  const int64_t inner_size = NumElements(inner);
  return SumTerms({Scale(oi, NumElements(reduced) * inner_size), Scale(ri, inner_size), ii});
}

bool ReduceEmitter::VectorLoadable(const Node* n) const {
  const Placement& place = pl_.Of(n);
  if (column_) return NumElements(place.Part(n, 2)) == I_ && (!ragged_ || WholeChunks(n, V_));  // contiguous
  if (NumElements(place.Part(n, 1)) != N_ || NumElements(place.Part(n, 2)) != 1) return false;
  if (place.through != nullptr || place.stored_through != nullptr) {
    // Through a transpose: a vector is V contiguous elements when the row's innermost run
    // has stride 1 and holds whole vectors, and every other step keeps the V-element alignment.
    if (!aligned_) return false;
    for (int g = 0; g < 2; ++g) {
      const ViewDim atoms = ThroughAtoms(n, place, g);
      for (size_t j = 0; j < atoms.size(); ++j) {
        const bool innermost = g == 1 && j + 1 == atoms.size();
        if (innermost ? atoms[j].stride != 1 || atoms[j].extent % V_ != 0 : atoms[j].stride % V_ != 0) return false;
      }
    }
    return true;
  }
  return aligned_ || NumElements(place.Part(n, 0)) == pl_.space.outer;
}

bool ReduceEmitter::PerRow(const Node* n) const {
  const Placement& p = pl_.Of(n);
  return !p.reduced() && (column_ || !p.inner()) && !p.combined;
}

std::string ReduceEmitter::FieldRef(const std::string& field, int lane) const {
  return column_ ? absl::StrCat(row_, ".", field, "[", std::max(lane, 0), "]") : absl::StrCat(row_, ".", field);
}

TypedExpr ReduceEmitter::SetRowField(const Node* n, const TypedExpr& e, int lane) {
  auto it = row_fields_.find(n);
  if (it == row_fields_.end()) {
    const std::string field = absl::StrCat("v", row_decls_.size());
    row_decls_.push_back(absl::StrCat(CTypeName(e.type), " ", field, column_ ? absl::StrCat("[", V_, "]") : "",
                                      ";  // ", n->name()));
    it = row_fields_.emplace(n, field).first;
  }
  row_set_.insert({n, column_ ? lane : 0});
  const std::string ref = FieldRef(it->second, lane);
  w_.Line(absl::StrCat(ref, " = ", e.code, ";  // ", n->name()));
  return TypedExpr{ref, e.type};
}

absl::StatusOr<TypedExpr> ReduceEmitter::Value(const Node* n, int lane) {
  if (IsInlinedConstant(n)) return ConstantLiteral(*n);
  const CType type = ComputeType(n->dtype());
  if (!in_load_ && where_ == Where::kVector) {  // a prologue value that Load put in Vec
    if (auto it = frontier_.find(n); it != frontier_.end()) {
      return TypedExpr{absl::StrCat("x.", it->second.field, "[", lane, "]"), it->second.type};
    }
  }
  if (where_ == Where::kCombined) {
    if (auto it = combine_values_.find(n); it != combine_values_.end()) return TypedExpr{it->second, CType::kFloat};
  } else if (PerRow(n)) {
    if (row_set_.count({n, column_ ? lane : 0})) return TypedExpr{FieldRef(row_fields_.at(n), lane), type};
    if (where_ != Where::kPerRow) {
      return absl::InternalError(absl::StrCat("per-row value ", n->name(), " is read before it is computed"));
    }
    TypedExpr e;
    KILN_ASSIGN_OR_RETURN(e, Member(n) ? Compute(n, lane) : Load(n, lane));
    return SetRowField(n, e, lane);
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

bool ReduceEmitter::LanesShare(const Node* n) const {
  const Placement& place = pl_.Of(n);
  if (column_ || !aligned_ || place.through != nullptr || place.like != nullptr || place.stored_through != nullptr) {
    return false;
  }
  // The part of the reduced group `n` has, right-aligned against the group: the trailing group
  // axes where it has extent 1 are a run of elements that all read one value of `n`.
  Shape part = place.Part(n, 1);
  const Shape group = pl_.space.Group(1);
  while (!part.empty() && part.front() == 1) part.erase(part.begin());
  if (NumElements(part) == NumElements(group) || part.size() > group.size()) return false;
  int64_t run = 1;
  for (size_t d = group.size(); d-- > 0;) {
    const size_t pd = d + part.size() - group.size();
    if (d + part.size() < group.size() || part[pd] != 1) break;
    run *= group[d];
  }
  return run % V_ == 0;
}

absl::StatusOr<TypedExpr> ReduceEmitter::Load(const Node* n, int lane) {
  const std::string& arg = in_names_.at(n);
  const CType type = ComputeType(n->dtype());
  const bool along_vector = column_ ? pl_.Of(n).inner() : pl_.Of(n).reduced();
  // A tensor broadcast along runs of whole vectors has one value per vector: lane 0's.
  if (where_ == Where::kVector && along_vector && lane > 0 && LanesShare(n)) return Value(n, 0);
  if (where_ == Where::kElement && along_vector) {  // a head or tail element: Load1 put it in x
    if (auto it = vec_fields_.find(n); it != vec_fields_.end()) return TypedExpr{absl::StrCat("x.", it->second, "[0]"), type};
  }
  if (where_ == Where::kVector && along_vector) {
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
        w_.Line(VectorLoad(n, index, array));
        w_.Remember(key, array);
      }
      return TypedExpr{absl::StrCat(array, "[", lane, "]"), type};
    }
  }
  KILN_ASSIGN_OR_RETURN(std::string index, IndexOf(n, lane));
  return TypedExpr{absl::StrCat("kiln::ToCompute(", arg, "[", index, "])"), type};
}

absl::StatusOr<TypedExpr> ReduceEmitter::Compute(const Node* n, int lane) {
  if (IsReduction(n)) {  // a per-row result: set by its level's Finish
    return absl::InternalError(absl::StrCat("reduction ", n->name(), " is read before its level is done"));
  }
  if (n->op() == OpKind::kReshape || n->op() == OpKind::kBroadcastTo || n->op() == OpKind::kTranspose) {
    return Value(n->operand(0), lane);  // a transpose's operand is read through it (IndexOf)
  }
  if (auto recip = n->op() == OpKind::kDiv ? recip_fields_.find(n->operand(1)) : recip_fields_.end();
      recip != recip_fields_.end() && where_ != Where::kPerRow && where_ != Where::kCombined) {
    KILN_ASSIGN_OR_RETURN(TypedExpr x, Value(n->operand(0), lane));
    return TypedExpr{absl::StrCat("(", Coerce(x, CType::kFloat).code, " * ", FieldRef(recip->second, lane), ")"),
                     CType::kFloat};
  }
  std::vector<TypedExpr> operands;
  for (const Node* o : n->operands()) {
    KILN_ASSIGN_OR_RETURN(TypedExpr oe, Value(o, lane));
    operands.push_back(oe);
  }
  uses_philox_ |= n->category() == OpCategory::kRandom;
  const Placement& place = pl_.Of(n);
  const bool shared_philox = !column_ && n->category() == OpCategory::kRandom && where_ == Where::kVector &&
                             V_ % 4 == 0 && NumElements(place.Part(n, 1)) == N_ &&
                             NumElements(place.Part(n, 0)) == pl_.space.outer;
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
