// The norm_matmul kind: a row normalisation folded into the matmul that reads it
// (templates/norm_matmul.cuh; the analysis and the tile rule are norm_matmul_plan.h). It
// forms when priority fusion merges a norm's row_reduction region into its matmul consumer;
// the merge is priced like any other, so the ledger shows the fold against the norm kernel
// plus cuBLASLt, and keeps them apart where the template would be slower. Measured on the
// H200 that is every shape timed (the price below says why), so by default the fold is
// declined, with both prices in the ledger; KILN_FORCE_FUSE=norm-matmul runs it.
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
// Besides, every block runs a chain of dependent phases (its x slice, the conversion and the
// row statistics, the k loop, the merge across its warps, the split blocks' merge through
// global memory, the epilogue) that no bandwidth shortens, and a centred plan first sums its
// token rows over all of K. Timed in CUDA graphs of 20 calls on the H200 (bench/norm_linear.py
// with KILN_FORCE_FUSE=norm-matmul, bench/results/2026-11-29-session29.md, runs 3-5), the fold
// of a 1024 x 3072 weight took 6.7 us (rms_norm) and 8.0 us (layer_norm) at one token row, 8.5
// and 11.1 at 16, where the price without these terms said 5.1-7.5; layer_norm took 1.3-1.8 us
// more than rms_norm at one row. Against the norm kernel plus cuBLASLt the fold was slower on
// every shape timed (weights of 1024 x 1024 to 4096 x 14336, 1 to 4096 rows) but three where
// it was level within 3% (rms_norm of one row on 1024 x 1024 and 4096 x 4096, of 8 rows on
// 1024 x 1024). kPhasesUs (2.5 us) fits the fold's own time. The unfused side is priced at
// DeviceSpec::launch_us (3 us) per kernel, where a CUDA graph replays kernels about 1 us apart
// (the unfused pair of a 1024 x 3072 weight: priced 8.0 us, replayed in 5.8): the fold is
// charged the kLaunchOverCreditUs the model credits it beyond that, so that it is declined on
// every shape measured slower. The 16-token transformer_block, whose two layer norms the model
// folded without these terms, replays in 53.8 us folded and 27.5 us not (kiln bench
// --cuda-graph, run 6).
constexpr double kWEfficiency = 0.70;
constexpr double kGroupUsPerMb = 0.12;
constexpr double kPhasesUs = 2.5;
constexpr double kCentreUs = 1.3;
constexpr double kLaunchOverCreditUs = 2.0;

RunTimeEstimate PriceNormMatmul(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e = TrafficAndWork(region);
  if (!region.norm_matmul) {
    FinishEstimate(device, device.attention_flops_per_us, device.dram_bytes_per_us, 1, e);
    return e;
  }
  const NormMatmulPlan& plan = *region.norm_matmul;
  const NormMatmulTiles t = DefaultNormMatmulTiles(plan, device);
  const int64_t token_tiles = NormMatmulTokenTiles(plan, t);
  const int64_t padded_m = token_tiles * t.tokens;  // with the virtual rows
  e.flops += 2.0 * static_cast<double>(padded_m - plan.m) * plan.n * plan.k;
  e.blocks = NormMatmulBlocks(plan, t);
  FinishEstimate(device, device.attention_flops_per_us, kWEfficiency * device.dram_bytes_per_us, 1, e);
  // Centring: every block first sums its token rows of x over all of K, from L2.
  if (plan.centred != nullptr && device.l2_bytes_per_us > 0) {
    const int64_t rows = std::min<int64_t>(plan.m, t.tokens - plan.VirtualRows());
    e.memory_us += static_cast<double>(e.blocks) * rows * plan.k * 2 / device.l2_bytes_per_us;
  }
  const double w_mb = 2.0 * static_cast<double>(plan.k) * plan.n / 1e6;
  const int64_t groups = token_tiles * t.tokens / 8;  // token groups of 8, over all token tiles
  e.compute_us = std::max(e.compute_us, e.memory_us + static_cast<double>(groups - 1) * kGroupUsPerMb * w_mb);
  e.launch_us += kPhasesUs + (plan.centred != nullptr ? kCentreUs : 0.0) + kLaunchOverCreditUs;
  e.total_us = std::max(e.memory_us, e.compute_us) + e.launch_us;
  return e;
}

}  // namespace kiln::kinds
