// The norm_matmul kind: a row normalisation folded into the matmul that reads it
// (templates/norm_matmul.cuh; the analysis and the tile rule are norm_matmul_plan.h). It
// forms when priority fusion merges a norm's row_reduction region into its matmul consumer;
// the merge is priced like any other, so the ledger shows the fold against the norm kernel
// plus cuBLASLt, and keeps them apart where the template would be slower (beyond a few token
// rows: the template is a skinny-M design on mma.sync, and cuBLASLt's GEMM is faster there).
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

// The template's price, calibrated on a lent H200 (bench/results/2026-11-27-session15.md: the
// tuned kernel on K 4096, N 4096 and 14336, M 1, 16 and 64, W cold as in a decoding step).
// W streams at about kWEfficiency of the copy bandwidth: 0.81 of it at N 14336 and 0.61 at
// N 4096, where the grid's ramp weighs more. Each token group of 8 rows beyond the first adds
// about kGroupUsPerMb per MB of W: its mma, its B fragments and its share of the conversion
// are instructions on the path of every k chunk (10-15 us per 100 MB measured). x, the
// weights and the epilogue's tensors move once; the split blocks' partial tiles stay in L2.
// Against this the measured times are within 15%.
constexpr double kWEfficiency = 0.70;
constexpr double kGroupUsPerMb = 0.12;

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
  FinishEstimate(device, device.attention_flops_per_us, kWEfficiency * device.dram_bytes_per_us, 1, e);
  const double w_mb = 2.0 * static_cast<double>(plan.k) * plan.n / 1e6;
  const int64_t groups = (plan.m + 7) / 8;  // token groups of 8, over all token tiles
  e.compute_us = std::max(e.compute_us, e.memory_us + static_cast<double>(groups - 1) * kGroupUsPerMb * w_mb);
  e.total_us = std::max(e.memory_us, e.compute_us) + e.launch_us;
  return e;
}

}  // namespace kiln::kinds
