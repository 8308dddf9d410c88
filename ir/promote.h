// PromoteTo32: the same graph with every 16-bit float computed in f32. Inputs and constants
// are cast up where they enter, an explicit cast to a 16-bit type still rounds (and comes
// back up; a cast to the dtype its operand already has is the identity), and each graph
// output is cast down to its own dtype at the end. Interpreting the
// result gives what a fused kernel promises (DESIGN.md §5: arithmetic in f32, storage in the
// tensor's dtype), and comparing two promoted graphs checks that a rewrite kept the meaning
// without the noise of rounding every intermediate to 16 bits.
#ifndef KILN_IR_PROMOTE_H_
#define KILN_IR_PROMOTE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace kiln {

absl::StatusOr<std::unique_ptr<Graph>> PromoteTo32(const Graph& graph);

}  // namespace kiln

#endif  // KILN_IR_PROMOTE_H_
