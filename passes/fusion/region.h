// A Region is a set of nodes that becomes one kernel or one library call (DESIGN.md §4).
// DescribeRegion derives everything else from the node set: the kind, the tensors read and
// written (scalar constants are inlined as literals and read nothing), and for row
// reductions the row space [rows x row_length]. Keeping the node set the only state means a
// merge can never leave a region's description stale.
#ifndef KILN_PASSES_FUSION_REGION_H_
#define KILN_PASSES_FUSION_REGION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln {

enum class RegionKind {
  kPointwise,       // elementwise + broadcast + index-remapping layout ops; several outputs
  kRowReduction,    // reductions over the innermost axes, with prologue and epilogue
  kOtherReduction,  // reductions over other axes
  kMatmul,          // cuBLASLt, with bias / residual epilogue
  kAttention,       // tiled attention; layout producers/consumers folded into its indexing
  kLayout,          // a copy that could not be folded into a neighbour
  kView,            // reshapes only: an alias of its input, no kernel
};
const char* RegionKindName(RegionKind kind);
// The template a region of this kind is emitted from (codegen/ and templates/).
const char* RegionTemplate(RegionKind kind);

// Facts about single nodes the fusion rules need.
// Row reduction: a reduce_* whose axes are exactly the trailing ones; returns {rows, length}.
std::optional<std::pair<int64_t, int64_t>> RowReductionSpace(const Node* node);
bool IsReduction(const Node* node);
bool IsPureLayout(const Node* node);  // reshape/transpose/slice/concat/gather/broadcast_to
bool IsInlinedConstant(const Node* node);  // a one-element constant: a literal in the kernel

struct Region {
  int id = -1;                 // a plan's regions: 0..n-1 in execution order
  int merge_id = -1;           // the id priority fusion knew it by (the ledger's decisions name these)
  RegionKind kind = RegionKind::kPointwise;
  std::vector<Node*> nodes;    // in graph post order
  std::vector<Node*> inputs;   // tensors read from memory, in first-use order
  std::vector<Node*> outputs;  // tensors written to memory
  int64_t rows = 0;            // row reductions: the row space
  int64_t row_length = 0;
  // The region's iteration shape: the largest output (pointwise), the reduction input (row).
  Shape space;

  bool Contains(const Node* node) const;
  // "add.1, gelu_tanh.mul, ..." (at most `max` names, then "+N more").
  std::string NodeList(int max = 6) const;
};

// Builds the description of `nodes` (any order). A member is an output when it is a graph
// output or a user reads it from memory. `reads_from_memory(value, user)` answers the latter
// for every user, member or not (fusion: a user outside that recomputes `value` does not; a
// member also recomputed in another region without `value` does); without it, exactly the
// users outside the region do.
using ReadsFromMemory = std::function<bool(const Node* value, const Node* user)>;
Region DescribeRegion(int id, const std::vector<Node*>& nodes, const Graph& graph,
                      const std::vector<Node*>& post_order,
                      const ReadsFromMemory& reads_from_memory = nullptr);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_REGION_H_
