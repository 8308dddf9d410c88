// Verify(graph): the whole-graph invariants that passes must preserve. Node construction
// already checks each node locally; this re-checks everything after rewrites:
//  * names: valid identifiers, unique, and the name index maps each to its node;
//  * edges: every operand (and every user) is a live node of this graph, and use lists hold
//    exactly the distinct nodes that use a node;
//  * graph inputs are input nodes, listed once, and every input node is a graph input;
//  * at least one output; output names are valid and unique; output nodes are live;
//  * acyclic (checked here, never through PostOrder, which aborts on a cycle);
//  * per node: arity within the op table's bounds; attributes pass CheckAttributes (on a copy)
//    with every default already filled in; re-inferred dtype and shape equal the recorded
//    ones; a constant holds a value of its dtype and shape, and no other node holds one.
// The first violation is returned; its message names the node: `node "t" (add): ...`.
#ifndef KILN_IR_VERIFIER_H_
#define KILN_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "ir/graph.h"

namespace kiln {

absl::Status Verify(const Graph& graph);

}  // namespace kiln

#endif  // KILN_IR_VERIFIER_H_
