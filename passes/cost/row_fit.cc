#include "passes/cost/row_fit.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "passes/cost/cost_model.h"
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
  RowFit fit;
  const ReduceSpace& space = placement.space;
  const int64_t K = space.reduced, I = space.inner;
  fit.vector = VectorElements(region, I);
  fit.lanes = static_cast<int>(std::min<int64_t>(kWarp, RoundUpPow2((I + fit.vector - 1) / fit.vector)));
  const int64_t tiles = space.outer * ((I + fit.lanes * fit.vector - 1) / (fit.lanes * fit.vector));
  for (const Node* in : region.inputs) {
    const Placement& p = placement.Of(in);
    fit.row_inputs += p.reduced() && NumElements(p.Part(in->shape(), 2)) == I;
  }
  fit.row_inputs = std::max<int64_t>(fit.row_inputs, 1);
  const int64_t target = kSplitTargetBlocksPerSm * std::max(device.sm_count, 1);
  // A region that would stream K again for each level (or for its full-space outputs) is worth
  // keeping on chip: deeper blocks first, then more blocks per tile (up to twice the target).
  const bool rereads = placement.levels > 1 || std::any_of(region.outputs.begin(), region.outputs.end(), [&](const Node* o) {
                         return placement.Of(o).reduced();
                       });
  int64_t best_block = 256, best_split = 1;
  for (int64_t block : {256, 512, 1024}) {
    const int64_t threads = block / fit.lanes;  // along K
    auto per_thread = [&](int64_t split) {
      return fit.row_inputs * ((K + split * threads - 1) / (split * threads)) * fit.vector;
    };
    int64_t split = 1;
    if (tiles < target) split = std::max<int64_t>(1, std::min((target + tiles - 1) / tiles, K / (threads * 4)));
    while (rereads && per_thread(split) > kRowCacheFloatsPerThread && tiles * split * 2 <= 2 * target &&
           K >= split * 2 * threads) {
      split *= 2;
    }
    if (block == 256) best_split = split;
    if (!rereads || per_thread(split) <= kRowCacheFloatsPerThread) {
      best_block = block;
      best_split = split;
      break;
    }
  }
  fit.threads = best_block / fit.lanes;
  fit.split = static_cast<int>(best_split);
  fit.share = (K + best_split - 1) / best_split;
  fit.per_thread = fit.row_inputs * ((K + best_split * fit.threads - 1) / (best_split * fit.threads)) * fit.vector;
  fit.on_chip = fit.per_thread <= kRowCacheFloatsPerThread;
  const bool full_outputs = std::any_of(region.outputs.begin(), region.outputs.end(),
                                        [&](const Node* o) { return placement.Of(o).reduced(); });
  fit.online_max_sum = !placement.online_max.empty();
  fit.passes = fit.on_chip ? 1 : std::max(1, placement.levels + (full_outputs ? 1 : 0));
  fit.reason = absl::StrFormat(
      "columns [%d | %d | %d]: %d lanes of %d along i x %d threads along K, %d tile%s%s; %d values per thread %s",
      space.outer, K, I, fit.lanes, fit.vector, fit.threads, tiles, tiles == 1 ? "" : "s",
      best_split > 1 ? absl::StrFormat(" split over %d blocks each", best_split) : "", fit.per_thread,
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
  const int64_t target = kSplitTargetBlocksPerSm * std::max(device.sm_count, 1);
  if (length > kWarpRowMax && rows < target) {
    const int64_t by_blocks = (target + rows - 1) / rows;
    fit.split = static_cast<int>(std::clamp<int64_t>(std::min(by_blocks, length / kMinSplitShare), 1, 1024));
  }
  // A row that would be streamed again for each level (or for its row-shaped outputs) may be
  // split further until each block's share fits on chip, so that it is read once: taken when
  // the model prices it cheaper, the bytes saved against the blocks of a row waiting for each
  // other once per level (every round of resident blocks).
  const bool row_outputs = std::any_of(region.outputs.begin(), region.outputs.end(),
                                       [&](const Node* o) { return placement.Of(o).reduced(); });
  const bool rereads = placement.levels > 1 || row_outputs;
  auto share_of = [&](int64_t split) { return (length + split - 1) / split; };
  auto fits = [&](int64_t split) {
    return PerThread(share_of(split), fit.row_inputs, max_threads) <= kRowCacheFloatsPerThread;
  };
  int64_t row_bytes = 0;
  for (const Node* in : region.inputs) row_bytes += IsCachedRowInput(placement, in) ? in->num_bytes() : 0;
  auto price = [&](int64_t split) {
    const int passes = fits(split) ? 1 : std::max(1, placement.levels + (row_outputs ? 1 : 0));
    const int64_t blocks = length > kWarpRowMax ? rows * split : (rows + 7) / 8;
    const double rounds = split > 1 ? std::ceil(static_cast<double>(blocks) / target) : 0;
    return static_cast<double>(row_bytes) * passes / DrawnBandwidth(device, blocks) +
           rounds * placement.levels * device.grid_sync_us;
  };
  if (length > kWarpRowMax && rereads && !fits(fit.split)) {
    int64_t split = fit.split;
    while (!fits(split) && share_of(split * 2) >= kMinSplitShare && split * 2 <= 1024) split *= 2;
    if (fits(split) && price(split) < price(fit.split)) fit.split = static_cast<int>(split);
  }
  fit.share = share_of(fit.split);
  const int64_t n = fit.share;
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
