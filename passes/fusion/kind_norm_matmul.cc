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

// The template's default tiles, calibrated on the lent H100 (bench/results/
// 2026-11-25-h100-session6.md; 12 decode shapes, K and N 1024 to 14336): its blocks stream W
// at about 0.55 of the copy bandwidth with 8-token tiles and 0.35 with 16 or more (each k
// tile's x conversion sits between two barriers, on the path of the next loads), and a block
// spends at least kStageUs x (1 + tokens / 16) per k tile however little it moves (the tile's
// round trip: wait, barrier, convert, barrier, mma), over as many waves as its residency
// (shared memory, threads) needs. x, W, the weights and the epilogue's tensors move from DRAM
// once (a feature tile's token blocks run together and share W in L2); the tensor-core work
// as the template computes it (token rows padded to its tile) at the mma.sync rate of kiln's
// tiled templates (DeviceSpec::attention_flops_per_us). The measured times are within 1.5x of
// this; the default tiles are within 1.2x of the tuned best.
constexpr double kStageUs = 0.6;

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
  const double efficiency = t.tokens <= 8 ? 0.55 : 0.35;
  FinishEstimate(device, device.attention_flops_per_us, efficiency * device.dram_bytes_per_us, 1, e);
  int64_t resident = std::max<int64_t>(1, 2048 / (32 * t.warps));
  if (device.smem_per_sm_bytes > 0) {
    resident = std::min(resident, std::max<int64_t>(1, device.smem_per_sm_bytes / NormMatmulSmemBytes(plan, t)));
  }
  const int64_t waves = (e.blocks + device.sm_count * resident - 1) / (device.sm_count * resident);
  const int64_t k_tiles = (plan.k + t.block_k() - 1) / t.block_k();
  const double chain = static_cast<double>(waves * k_tiles) * kStageUs * (1.0 + t.tokens / 16.0);
  e.compute_us = std::max(e.compute_us, chain);
  e.total_us = std::max(e.memory_us, e.compute_us) + e.launch_us;
  return e;
}

}  // namespace kiln::kinds
