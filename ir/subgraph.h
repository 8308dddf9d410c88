// ExtractSubgraph: the nodes of one region as a graph of their own, whose inputs are the
// tensors the region reads and whose outputs are the tensors it writes. Lets a fused kernel
// be checked against the interpreter on exactly its own work, and lets a region be run or
// dumped alone.
#ifndef KILN_IR_SUBGRAPH_H_
#define KILN_IR_SUBGRAPH_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace kiln {

// `nodes` must be closed under operands except for `inputs` and constants (constants are
// copied in). Inputs and outputs keep their names. Nodes are added in `graph`'s post order.
absl::StatusOr<std::unique_ptr<Graph>> ExtractSubgraph(const Graph& graph,
                                                       const std::vector<Node*>& nodes,
                                                       const std::vector<Node*>& inputs,
                                                       const std::vector<Node*>& outputs);

}  // namespace kiln

#endif  // KILN_IR_SUBGRAPH_H_
