// The reduction kinds: row_reduction (templates/row_reduce.cuh) and column_reduction
// (column_reduce.cuh). Both are analysed by PlaceReduction (reduce_placement.h); a merge is
// legal exactly when the merged region can be placed in one space.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "passes/cost/row_fit.h"
#include "passes/fusion/kinds.h"
#include "passes/fusion/reduce_placement.h"

namespace kiln::kinds {

void AnalyzeReduction(Region& region, const DeviceSpec& device) {
  absl::StatusOr<ReducePlacement> placement = PlaceReduction(region, device);
  if (placement.ok()) {
    region.reduce = std::make_shared<const ReducePlacement>(std::move(*placement));
    return;
  }
  const std::string message(placement.status().message());
  const size_t colon = message.find(": ");
  region.placed = FusionDecision::Forbid(message.substr(0, colon), message.substr(colon + 2));
}

// A merge candidate the kernels cannot run (legality refuses it) still gets a price for the
// ledger: its traffic at the copy bandwidth.
RunTimeEstimate PriceUnplaced(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e = TrafficAndWork(region);
  FinishEstimate(device, device.f32_flops_per_us, device.dram_bytes_per_us, 1, e);
  return e;
}

FusionDecision RowLegal(const Region& p, const Region& c, const Region& merged) {
  if (!merged.placed) return merged.placed;
  return FusionDecision::Allow("row-reduction", "prologue/epilogue in the row kernel's row space");
}

// A column region runs like a row region, a per-column combine over the tiles aside.
FusionDecision ColumnLegal(const Region& p, const Region& c, const Region& merged) {
  if (!merged.placed) return merged.placed;
  if (!merged.reduce->combines.empty()) {
    return FusionDecision::Forbid("column-combine", "the column kernel does not reduce per-column values over the tiles");
  }
  return FusionDecision::Allow("column-reduction", "prologue/epilogue in the column kernel's space");
}

namespace {
// What both reduction kinds start from: the region's traffic and work, and its fit's passes.
RunTimeEstimate FitTerms(const Region& region) {
  RunTimeEstimate e = TrafficAndWork(region);
  const RowFit& fit = region.reduce->fit;
  e.row_on_chip = fit.on_chip;
  e.passes = fit.passes;
  e.row_fit = fit.reason;
  return e;
}

}  // namespace

// As the row kernel runs it (row_fit.h): on chip, or streamed with every extra pass
// re-reading the row-shaped inputs; up to 1024 elements a row, RowFit::rows_per_block rows a
// block, a block per row beyond, `split` blocks per row for few long rows.
RunTimeEstimate PriceRow(const Region& region, const DeviceSpec& device) {
  if (!region.reduce) return PriceUnplaced(region, device);
  RunTimeEstimate e = FitTerms(region);
  const ReducePlacement& placement = *region.reduce;
  const RowFit& fit = placement.fit;
  for (const Node* in : region.inputs) {
    if (IsCachedRowInput(placement, in)) e.bytes_read += (e.passes - 1) * in->num_bytes();
  }
  const int64_t rows = placement.space.outer;
  e.blocks = fit.split > 1 ? rows * fit.split : (rows + fit.rows_per_block - 1) / fit.rows_per_block;
  const int64_t threads = fit.block;
  // Tensors read or stored through a transpose divide the row index on every access, once per
  // vector (one read or store of each element: a streamed row's extra passes are not counted):
  // a row of runs of 7 x 7 bf16 elements takes one element an access (batch norm over
  // [32, 2048, 7, 7]: 13.3 us measured, 6.0 predicted without them, 9.8 with them, at the
  // pointwise kernels' rate though its divisions are 32-bit; bench/results/2026-11-29-session32).
  e.index_ops = static_cast<double>(placement.through_index_ops) * static_cast<double>(rows * placement.space.reduced) /
                std::max(RowVector(region, placement), 1);
  FinishEstimate(device, device.f32_flops_per_us, DrawnBandwidth(device, e.blocks, threads, fit.blocks_per_sm), 1, e);
  // The blocks of a split row merge their partials (and wait for the merge, where they use it).
  const double waves = WaitingWaves(device, fit, e.blocks, threads, e);
  const double merge_us = SplitMergeUs(device, fit.split, threads, placement.levels,
                                       fit.split_waits, waves, fit.cluster);
  e.launch_us += merge_us;
  e.total_us += merge_us;
  e.launch_us += fit.phase_us;  // a lone on-chip block per SM (row_fit.h: LonePhaseUs)
  e.total_us += fit.phase_us;
  return e;
}

// As the column kernel runs it: its fit's launch, priced by the column rule itself
// (column_fit.cc's ColumnEstimate), so that fusion sees the price the fit chose the shape by.
RunTimeEstimate PriceColumn(const Region& region, const DeviceSpec& device) {
  if (!region.reduce) return PriceUnplaced(region, device);
  return ColumnEstimate(region, *region.reduce, region.reduce->fit, device, TrafficAndWork(region));
}

}  // namespace kiln::kinds
