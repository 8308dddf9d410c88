#include "passes/cost/row_fit.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"

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

bool IsRowSpaceReduction(const Region& r, const Node* n) {
  auto space = RowReductionSpace(n);
  return space && space->first == r.rows && space->second == r.row_length;
}

const Node* SkipViews(const Region& r, const Node* n) {
  while (r.Contains(n) && (n->op() == OpKind::kReshape || n->op() == OpKind::kBroadcastTo)) n = n->operand(0);
  return n;
}

// reduce_sum(exp(sub(x, m))) with m = reduce_max(x) of the same row: the online max+sum pair.
const Node* OnlineMaxOf(const Region& r, const Node* sum) {
  if (sum->op() != OpKind::kReduceSum) return nullptr;
  const Node* e = sum->operand(0);
  if (!r.Contains(e) || e->op() != OpKind::kExp) return nullptr;
  const Node* d = e->operand(0);
  if (!r.Contains(d) || d->op() != OpKind::kSub) return nullptr;
  const Node* m = SkipViews(r, d->operand(1));
  if (!r.Contains(m) || m->op() != OpKind::kReduceMax || !IsRowSpaceReduction(r, m)) return nullptr;
  return m->operand(0) == d->operand(0) ? m : nullptr;
}

// Passes the streamed kernel makes for the statistics: the dependency depth of the row's
// reductions, a reduction being one level above the deepest reduction it reads, except that
// an online pair's sum shares its max's level.
int StatisticsPasses(const Region& r, bool* online) {
  std::map<const Node*, int> level;
  int deepest = 0;
  for (const Node* n : r.nodes) {
    int l = 0;
    for (const Node* o : n->operands()) {
      if (r.Contains(o)) l = std::max(l, level[o]);
    }
    if (IsRowSpaceReduction(r, n)) {
      const Node* m = OnlineMaxOf(r, n);
      if (m != nullptr && l == level[m]) {
        *online = true;
      } else {
        ++l;
      }
      deepest = std::max(deepest, l);
    }
    level[n] = l;
  }
  return deepest;
}

}  // namespace

RowFit FitRowOnChip(const Region& region, const DeviceSpec& device) {
  RowFit fit;
  if (region.kind != RegionKind::kRowReduction) return fit;
  const int64_t n = region.row_length;
  const Node* sample = nullptr;
  for (const Node* in : region.inputs) {
    if (in->num_elements() == region.rows * n) {
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
      absl::StrFormat("row of %d %s values x %d input%s", n, sample ? DTypeName(sample->dtype()) : "f32",
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
  const bool row_outputs = std::any_of(region.outputs.begin(), region.outputs.end(), [&](const Node* o) {
    return o->num_elements() == region.rows * n;
  });
  const int statistics = StatisticsPasses(region, &fit.online_max_sum);
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
