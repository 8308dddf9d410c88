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

}  // namespace

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
