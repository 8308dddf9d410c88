// The norm_matmul kind: a row normalisation folded into the matmul that reads it
// (templates/norm_matmul.cuh; the analysis and the tile rule are norm_matmul_plan.h). It
// forms when priority fusion merges a norm's row_reduction region into its matmul consumer;
// the merge is priced like any other, so the ledger shows the fold against the norm kernel
// plus cuBLASLt, and keeps them apart where the template would be slower (large M: the
// template is a skinny-M design on mma.sync, cuBLASLt's GEMM is faster there).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "passes/fusion/kinds.h"
#include "passes/fusion/norm_matmul_plan.h"

namespace kiln::kinds {

void AnalyzeNormMatmul(Region& region, const DeviceSpec& device) {
  absl::StatusOr<NormMatmulPlan> plan = AnalyzeNormMatmulPlan(region);
  if (!plan.ok()) {
    region.placed = FusionDecision::Forbid("norm-matmul", std::string(plan.status().message()));
    return;
  }
  const FusionDecision fit = NormMatmulTilesFit(*plan, DefaultNormMatmulTiles(*plan, device), device);
  if (!fit) {
    region.placed = fit;
    return;
  }
  region.norm_matmul = std::make_shared<const NormMatmulPlan>(*std::move(plan));
}

FusionDecision NormMatmulLegal(const Region& p, const Region& c, const Region& merged) {
  if (!merged.placed) return merged.placed;
  if (p.kind == RegionKind::kNormMatmul) {
    return FusionDecision::Allow("norm-matmul-epilogue", "bias/residual add and activation in norm_matmul's epilogue");
  }
  return FusionDecision::Allow("norm-matmul", "the row normalisation folds into the matmul's operand load "
                                              "(norm_matmul.cuh): the normalised tensor is never written");
}

// The template's default tiles: x, W, the weights and the epilogue's tensors moved from
// DRAM once (a feature tile's token blocks run together and share W in L2), at the bandwidth
// its blocks draw; the tensor-core work as the template computes it (token rows padded to
// its tile) at the mma.sync rate of kiln's tiled templates (DeviceSpec::attention_flops_per_us,
// templates/attention.cuh's measured rate).
RunTimeEstimate PriceNormMatmul(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e = TrafficAndWork(region);
  if (!region.norm_matmul) {
    FinishEstimate(device, device.attention_flops_per_us, device.dram_bytes_per_us, 1, e);
    return e;
  }
  const NormMatmulPlan& plan = *region.norm_matmul;
  const NormMatmulTiles t = DefaultNormMatmulTiles(plan, device);
  const int64_t padded_m = (plan.m + t.tokens - 1) / t.tokens * t.tokens;
  e.flops += 2.0 * static_cast<double>(padded_m - plan.m) * plan.n * plan.k;
  e.blocks = NormMatmulBlocks(plan, t);
  // A block's cp.async pipeline keeps stages x tile bytes in flight whatever its threads: it
  // draws like a full SM of loads.
  FinishEstimate(device, device.attention_flops_per_us, DrawnBandwidth(device, e.blocks, kSaturatingThreadsPerSm), 1, e);
  return e;
}

}  // namespace kiln::kinds
