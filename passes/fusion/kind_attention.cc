// The attention kind: the tiled template (templates/attention.cuh) with the layout ops around
// it folded into its loads and stores. Attention the template does not cover never reaches
// fusion: lower_attention rewrites it into matmul, softmax and matmul first.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "passes/fusion/kinds.h"
#include "passes/fusion/region_kind.h"

namespace kiln {

FusionDecision AttentionTemplateCovers(const Node& attention) {
  return FusionDecision::Forbid("attention-template", "the tiled attention template is not in this build");
}

namespace kinds {

FusionDecision AttentionLegal(const Region& p, const Region& c, const Region& merged) {
  if (p.kind == RegionKind::kAttention && c.kind == RegionKind::kAttention) {
    return FusionDecision::Forbid("attention-attention", "two attentions are two kernels");
  }
  const Region& other = p.kind == RegionKind::kAttention ? c : p;
  const bool layout_only = std::all_of(other.nodes.begin(), other.nodes.end(), [](const Node* n) {
    return n->op() == OpKind::kReshape || n->op() == OpKind::kTranspose || n->op() == OpKind::kSlice;
  });
  if (!layout_only) {
    return FusionDecision::Forbid("attention-compute",
                                  absl::StrCat("attention absorbs only reshape/transpose/slice; the ",
                                               RegionKindName(other.kind), " region computes"));
  }
  return FusionDecision::Allow("attention-layout", p.kind == RegionKind::kAttention
                                                       ? "folded into attention's strided store"
                                                       : "folded into attention's strided loads");
}

// The tiled template: FLOPs (2 S T (D + E), halved when causal) at the attention rate; q, k, v,
// the mask and the output each moved once.
RunTimeEstimate PriceAttention(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e = TrafficAndWork(region);
  e.transcendentals = 0;
  const bool f32 = std::any_of(region.nodes.begin(), region.nodes.end(), [](const Node* n) {
    return n->op() == OpKind::kAttention && n->dtype() == DType::kF32;
  });
  FinishEstimate(device, f32 ? device.matmul_f32_flops_per_us : device.attention_flops_per_us,
                 device.dram_bytes_per_us, 1, e);
  return e;
}

}  // namespace kinds
}  // namespace kiln
