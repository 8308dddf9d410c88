// A Region is a set of nodes that becomes one kernel or one library call (DESIGN.md §4).
// DescribeRegion derives everything else from the node set: the tensors read and written
// (scalar constants are inlined as literals and read nothing), the kind, and the kind's
// analysis (region_kind.h), computed once here and read by legality, the cost model, codegen
// and the runtime lowering alike: where a reduction region's nodes sit in its space
// (reduce_placement.h), which epilogue a matmul region carries (matmul_epilogue.h), how an
// elementwise region reads its inputs and whether it runs tiled (layout_access.h). Keeping
// the node set the only input means a merge can never leave a region's description stale.
#ifndef KILN_PASSES_FUSION_REGION_H_
#define KILN_PASSES_FUSION_REGION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/fusion_decision.h"

namespace kiln {

enum class RegionKind {
  kPointwise,        // elementwise + broadcast + index-remapping layout ops; several outputs
  kRowReduction,     // reductions over the innermost axes, with prologue and epilogue
  kColumnReduction,  // reductions over axes followed by kept axes ([outer, reduced, inner])
  kMatmul,           // cuBLASLt, with bias / residual epilogue
  kNormMatmul,       // a row normalisation folded into the matmul reading it (norm_matmul.cuh)
  kAttention,        // tiled attention; layout producers/consumers folded into its indexing
  kLayout,           // a copy that could not be folded into a neighbour
  kView,             // reshapes only: an alias of its input, no kernel
};

// The kinds the elementwise kernel runs (pointwise.cuh, or layout.cuh where tiled): one thread
// per output element or vector of its space.
inline bool IsElementwiseKind(RegionKind kind) { return kind == RegionKind::kPointwise || kind == RegionKind::kLayout; }

struct ReducePlacement;  // passes/fusion/reduce_placement.h
struct MatmulEpilogue;   // passes/fusion/matmul_epilogue.h
struct AttentionPlan;    // passes/fusion/attention_plan.h
struct NormMatmulPlan;   // passes/fusion/norm_matmul_plan.h
struct LayoutPlan;       // passes/fusion/layout_access.h

// Facts about single nodes the fusion rules need.
bool IsReduction(const Node* node);
bool IsPureLayout(const Node* node);       // reshape/transpose/slice/concat/gather/broadcast_to
bool IsInlinedConstant(const Node* node);  // a one-element constant: a literal in the kernel

struct Region {
  int id = -1;                 // a plan's regions: 0..n-1 in execution order
  int merge_id = -1;           // the id priority fusion knew it by (the ledger's decisions name these)
  RegionKind kind = RegionKind::kPointwise;
  std::vector<Node*> nodes;    // in graph post order
  std::vector<Node*> inputs;   // tensors read from memory, in first-use order
  std::vector<Node*> outputs;  // tensors written to memory
  // The region's iteration shape: the largest output (pointwise, layout), the reduction input
  // (reductions), the largest node (the others).
  Shape space;
  int64_t returned_bytes = 0;  // bytes of its outputs that are graph outputs (a view copies them)

  // The kind's analysis (set for the kinds that have one; shared, immutable, so copying a
  // Region is cheap). `placed` says whether the kind's template can run these nodes at all:
  // legality refuses any merge whose region is not placed, and a single op always is.
  std::shared_ptr<const ReducePlacement> reduce;  // row_reduction, column_reduction
  std::shared_ptr<const MatmulEpilogue> matmul;   // matmul
  std::shared_ptr<const AttentionPlan> attention; // attention
  std::shared_ptr<const NormMatmulPlan> norm_matmul;  // norm_matmul
  std::shared_ptr<const LayoutPlan> layout;       // pointwise, layout: reads as affine maps, tiling
  FusionDecision placed = FusionDecision::Allow("placed");

  bool Contains(const Node* node) const;
  // "add.1, gelu_tanh.mul, ..." (at most `max` names, then "+N more").
  std::string NodeList(int max = 6) const;
  // Row reductions: the row space [rows x row_length] (the placement's outer x reduced).
  int64_t rows() const;
  int64_t row_length() const;
};

// Builds the description of `nodes` (any order) on `device` (the analyses' on-chip rules
// depend on it). A member is an output when it is a graph output or a user reads it from
// memory. `reads_from_memory(value, user)` answers the latter for every user, member or not
// (fusion: a user outside that recomputes `value` does not; a member also recomputed in
// another region without `value` does); without it, exactly the users outside the region do.
using ReadsFromMemory = std::function<bool(const Node* value, const Node* user)>;
Region DescribeRegion(int id, const std::vector<Node*>& nodes, const Graph& graph,
                      const std::vector<Node*>& post_order, const DeviceSpec& device,
                      const ReadsFromMemory& reads_from_memory = nullptr);
// The same for `nodes` already in graph post order, each once: it does not walk the whole
// post order, so describing a region costs time in its own size (priority fusion describes
// every candidate merge).
Region DescribeOrderedRegion(int id, std::vector<Node*> nodes, const Graph& graph, const DeviceSpec& device,
                             const ReadsFromMemory& reads_from_memory = nullptr);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_REGION_H_
