// The region kinds: one record per kind that every layer asks (DESIGN.md §4). A record says
// what a region of the kind is called, which template (or library) runs it, how it runs, and
// holds the kind's three hooks: the analysis DescribeRegion computes once and keeps on the
// region, the legality rule a merge into the kind must pass, and the price the cost model
// gives it. Codegen's emitter for a kernel kind is looked up by kind in codegen/emit_kernel.cc.
//
// Adding a kind: one entry here (with its hooks in a passes/fusion/kind_*.cc file), one
// template in templates/, one emitter in codegen/ (and its row in emit_kernel.cc), plus tests.
// docs/architecture.md walks through it.
#ifndef KILN_PASSES_FUSION_REGION_KIND_H_
#define KILN_PASSES_FUSION_REGION_KIND_H_

#include <string>
#include <vector>

#include "passes/cost/cost_model.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/fusion_decision.h"
#include "passes/fusion/region.h"

namespace kiln {

// How a region of the kind runs.
enum class Lowering {
  kKernel,   // one generated kernel from the kind's template (codegen)
  kLibrary,  // a library call (cuBLASLt)
  kAlias,    // no work: its outputs are views of its inputs
};

struct RegionKindInfo {
  RegionKind kind;
  const char* name;      // "row_reduction": the ledger, dumps, tests
  const char* tag;       // "row": kernels are named kiln_<tag>_<hash>
  const char* runs_as;   // the template ("row_reduce.cuh"), the library ("cuBLASLt") or "alias"
  Lowering lowering;
  // Fills the kind's analysis on `region` (its nodes, inputs, outputs and space are set) and
  // `region.placed`: whether the kind's template can run these nodes. Null: nothing to analyse.
  void (*analyze)(Region& region, const DeviceSpec& device);
  // May producer `p` and consumer `c` become `merged`, a region of this kind (analysed)?
  FusionDecision (*legal)(const Region& p, const Region& c, const Region& merged);
  // The region's predicted run time on `device`, as plain terms (cost_model.h).
  RunTimeEstimate (*price)(const Region& region, const DeviceSpec& device);
};

const RegionKindInfo& KindInfo(RegionKind kind);
const std::vector<RegionKindInfo>& KindTable();
const char* RegionKindName(RegionKind kind);

// Whether the tiled attention template runs this attention node; lower_attention rewrites
// the ones it does not into matmul, softmax and matmul before fusion. The reason says why not.
FusionDecision AttentionTemplateCovers(const Node& attention);
// The attention an attention_lse belongs with: an attention of the same q, k, mask and
// attributes (the one kernel writes both); nullptr if there is none.
const Node* AttentionTwin(const Node& lse);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_REGION_KIND_H_
