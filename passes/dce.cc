#include "passes/dce.h"

namespace kiln {

absl::StatusOr<bool> Dce::Run(Graph& graph) { return graph.RemoveDeadNodes() > 0; }

}  // namespace kiln
