#include "passes/cost/row_fit.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "passes/fusion/reduce_placement.h"

namespace kiln {
namespace {

constexpr int64_t kWarp = 32;
constexpr int64_t kMaxVector = 8;         // 16-byte vectors of 2-byte elements
constexpr int64_t kWarpRowMax = 1024;     // longer rows get a block (codegen/kernel_params.h)
constexpr int64_t kMinBlockThreads = 128;

// Cached f32 values per thread when `threads` share a row of `n` with `inputs` row-shaped
// inputs, rounded up to whole vectors of kMaxVector (an upper bound for any vector width the
// kernel picks: a multiple of 8 is a multiple of 4, 2 and 1).
int64_t PerThread(int64_t n, int64_t inputs, int64_t threads) {
  const int64_t step = threads * kMaxVector;
  return inputs * ((n + step - 1) / step) * kMaxVector;
}

int64_t RoundUpPow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace

int VectorElements(const Region& region, int64_t must_divide) {
  int64_t smallest = 8;
  for (const auto* list : {&region.inputs, &region.outputs}) {
    for (const Node* n : *list) {
      if (n->num_elements() > 1) smallest = std::min(smallest, ByteSize(n->dtype()));
    }
  }
  int v = static_cast<int>(std::min<int64_t>(8, 16 / std::max<int64_t>(smallest, 1)));
  while (v > 1 && must_divide != 0 && (must_divide < 0 || must_divide % v != 0)) v /= 2;
  return v;
}

RowFit FitColumnOnChip(const Region& region, const ReducePlacement& placement, const DeviceSpec& device) {
  constexpr int64_t kBlock = 256;
  RowFit fit;
  const ReduceSpace& space = placement.space;
  const int64_t K = space.reduced, I = space.inner;
  fit.vector = VectorElements(region, I);
  fit.lanes = static_cast<int>(std::min<int64_t>(kWarp, RoundUpPow2((I + fit.vector - 1) / fit.vector)));
  fit.threads = kBlock / fit.lanes;  // along K
  const int64_t tiles = space.outer * ((I + fit.lanes * fit.vector - 1) / (fit.lanes * fit.vector));
  for (const Node* in : region.inputs) {
    const Placement& p = placement.Of(in);
    fit.row_inputs += p.reduced() && NumElements(p.Part(in->shape(), 2)) == I;
  }
  fit.row_inputs = std::max<int64_t>(fit.row_inputs, 1);
  const int64_t target = kSplitTargetBlocksPerSm * std::max(device.sm_count, 1);
  auto per_thread = [&](int64_t split) {
    return fit.row_inputs * ((K + split * fit.threads - 1) / (split * fit.threads)) * fit.vector;
  };
  int64_t split = 1;
  if (tiles < target) split = std::max<int64_t>(1, std::min((target + tiles - 1) / tiles, K / (fit.threads * 4)));
  // More blocks per tile where that keeps each thread's share of K on chip (and the row is
  // read once): up to the target number of blocks per tile.
  while (per_thread(split) > kRowCacheFloatsPerThread && split * 2 <= target && K >= split * 2 * fit.threads) split *= 2;
  fit.split = static_cast<int>(split);
  fit.share = (K + split - 1) / split;
  fit.per_thread = per_thread(split);
  fit.on_chip = fit.per_thread <= kRowCacheFloatsPerThread;
  const bool full_outputs = std::any_of(region.outputs.begin(), region.outputs.end(),
                                        [&](const Node* o) { return placement.Of(o).reduced(); });
  fit.online_max_sum = !placement.online_max.empty();
  fit.passes = fit.on_chip ? 1 : std::max(1, placement.levels + (full_outputs ? 1 : 0));
  fit.reason = absl::StrFormat(
      "columns [%d | %d | %d]: %d lanes of %d along i x %d threads along K, %d tile%s%s; %d values per thread %s",
      space.outer, K, I, fit.lanes, fit.vector, fit.threads, tiles, tiles == 1 ? "" : "s",
      split > 1 ? absl::StrFormat(" split over %d blocks each", split) : "", fit.per_thread,
      fit.on_chip ? "kept in registers" : absl::StrFormat("do not fit: streamed, %d passes", fit.passes));
  return fit;
}

bool IsCachedRowInput(const ReducePlacement& placement, const Node* input) {
  const Placement& p = placement.Of(input);
  return p.reduced() && (p.outer() || placement.space.outer == 1);
}

RowFit FitRowOnChip(const Region& region, const ReducePlacement& placement, const DeviceSpec& device) {
  RowFit fit;
  const int64_t rows = placement.space.outer, length = placement.space.reduced;
  const int64_t target = kSplitTargetBlocksPerSm * std::max(device.sm_count, 1);
  if (length > kWarpRowMax && rows < target) {
    const int64_t by_blocks = (target + rows - 1) / rows;
    fit.split = static_cast<int>(std::clamp<int64_t>(std::min(by_blocks, length / kMinSplitShare), 1, 1024));
  }
  fit.share = (length + fit.split - 1) / fit.split;
  const int64_t n = fit.share;
  const Node* sample = nullptr;
  for (const Node* in : region.inputs) {
    if (IsCachedRowInput(placement, in)) {
      ++fit.row_inputs;
      if (sample == nullptr) sample = in;
    }
  }
  fit.row_inputs = std::max<int64_t>(fit.row_inputs, 1);
  // A device without a register count (a default DeviceSpec) gets the block maximum.
  const int64_t max_threads =
      device.RowBudgetValues() > 0
          ? std::clamp<int64_t>(device.RowBudgetValues() / kRowCacheFloatsPerThread, kWarp, 1024)
          : 1024;
  const std::string what =
      fit.split > 1
          ? absl::StrFormat("row of %d split over %d blocks (%d rows): %d %s values x %d input%s per block", length,
                            fit.split, rows, n, sample ? DTypeName(sample->dtype()) : "f32", fit.row_inputs,
                            fit.row_inputs == 1 ? "" : "s")
          : absl::StrFormat("row of %d %s values x %d input%s", n, sample ? DTypeName(sample->dtype()) : "f32",
                            fit.row_inputs, fit.row_inputs == 1 ? "" : "s");
  if (n <= kWarpRowMax) {
    fit.threads = kWarp;
    fit.per_thread = PerThread(n, fit.row_inputs, kWarp);
    fit.on_chip = fit.per_thread <= kRowCacheFloatsPerThread;
  } else {
    fit.threads = kMinBlockThreads;
    while (fit.threads < max_threads && PerThread(n, fit.row_inputs, fit.threads) > kRowCacheFloatsPerThread) {
      fit.threads *= 2;
    }
    fit.threads = std::min(fit.threads, max_threads);
    fit.per_thread = PerThread(n, fit.row_inputs, fit.threads);
    fit.on_chip = fit.per_thread <= kRowCacheFloatsPerThread;
  }
  const std::string budget =
      absl::StrFormat("%d f32 values per thread x %d threads", kRowCacheFloatsPerThread,
                      n <= kWarpRowMax ? kWarp : max_threads);
  if (fit.on_chip) {
    fit.reason = absl::StrFormat("%s fits the register budget of %s: %d per thread over %d threads", what, budget,
                                 fit.per_thread, fit.threads);
    return fit;
  }
  const bool row_outputs = std::any_of(region.outputs.begin(), region.outputs.end(),
                                       [&](const Node* o) { return placement.Of(o).reduced(); });
  fit.online_max_sum = !placement.online_max.empty();
  const int statistics = placement.levels;
  fit.passes = std::max(1, statistics + (row_outputs ? 1 : 0));
  std::string how;
  if (!row_outputs || statistics == 0) {
    how = fit.online_max_sum ? " with online max+sum" : "";
  } else {
    how = absl::StrFormat(" (%d for the statistics%s, 1 for the row-shaped outputs)", statistics,
                          fit.online_max_sum ? " with online max+sum" : "");
  }
  fit.reason = absl::StrFormat("%s does not fit the register budget of %s: streamed, %d pass%s%s", what, budget,
                               fit.passes, fit.passes == 1 ? "" : "es", how);
  return fit;
}

}  // namespace kiln
