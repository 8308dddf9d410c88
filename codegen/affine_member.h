// The value of a region member at an affine index of the region's space, for the emitters
// that evaluate a region through its LayoutPlan (emit_layout.cc: the tiled transpose;
// emit_vector.cc: the vectorised plain kernel): each operand's value at the index the member
// reads it at (OperandIndex), then the member's expression from the op table (pointwise and
// random ops; iota and dropout get the element's address) or, for an index remapping
// (broadcast_to, reshape, transpose, slice), its operand's element. Loads, concats and the
// memo stay with each emitter.
#ifndef KILN_CODEGEN_AFFINE_MEMBER_H_
#define KILN_CODEGEN_AFFINE_MEMBER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codegen/pointwise_expr.h"
#include "ir/base/status.h"
#include "passes/fusion/layout_access.h"

namespace kiln::codegen_internal {

// `value(node, index)` evaluates an operand; `address()` is the element's address expression
// for iota and random ops; `*uses_philox` is set when `n` draws random numbers.
template <class ValueFn, class AddressFn>
absl::StatusOr<TypedExpr> AffineMemberValue(const Node& n, const AffineIndex& at, const Shape& space,
                                            const ValueFn& value, const AddressFn& address, bool* uses_philox) {
  std::vector<TypedExpr> operands;
  for (int k = 0; k < n.num_operands(); ++k) {
    std::optional<AffineIndex> oi = OperandIndex(n, k, at, space);
    if (!oi) return absl::InternalError(absl::StrCat(n.name(), " has no affine index in the region's layout plan"));
    KILN_ASSIGN_OR_RETURN(TypedExpr o, value(n.operand(k), *oi));
    operands.push_back(o);
  }
  const OpCategory c = n.category();
  if (c != OpCategory::kPointwise && c != OpCategory::kRandom) return operands.at(0);  // an index remapping
  *uses_philox |= c == OpCategory::kRandom;
  const bool needs_index = n.op() == OpKind::kIota || c == OpCategory::kRandom;
  return EmitPointwiseExpr(n, operands, needs_index ? address() : "0");
}

}  // namespace kiln::codegen_internal

#endif  // KILN_CODEGEN_AFFINE_MEMBER_H_
