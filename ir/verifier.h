// Verify(graph): the whole-graph invariants that passes must preserve. Node construction
// already checks each node locally; this re-checks everything after rewrites: acyclic, arity,
// attributes against the op's schema, shapes/dtypes re-inferred and equal to the recorded
// ones, unique valid names, use lists consistent with operand lists, at least one output,
// graph inputs are input nodes, every output reachable (it exists in the graph).
#ifndef KILN_IR_VERIFIER_H_
#define KILN_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "ir/graph.h"

namespace kiln {

absl::Status Verify(const Graph& graph);

}  // namespace kiln

#endif  // KILN_IR_VERIFIER_H_
