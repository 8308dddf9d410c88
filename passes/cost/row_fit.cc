// The row kernel's launch rule (templates/row_reduce.cuh), the model's side: how many threads and
// blocks share a row, whether it is held on chip (registers or shared memory) or streamed
// (FitRowOnChip), and the pricing both reduction fits use (LaunchPrice, SplitMergeUs,
// LonePhaseUs, BlocksPerSm). The column kernel's rule is column_fit.cc.
#include "passes/cost/row_fit.h"

#include <algorithm>
#include <vector>
#include <cmath>
#include <limits>

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

int64_t RoundDownPow2(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace

int64_t NarrowestBytes(const Region& region) {
  int64_t smallest = 8;
  for (const auto* list : {&region.inputs, &region.outputs}) {
    for (const Node* n : *list) {
      if (n->num_elements() > 1) smallest = std::min(smallest, ByteSize(n->dtype()));
    }
  }
  return smallest;
}

int VectorElements(const Region& region, int64_t must_divide) {
  const int64_t smallest = NarrowestBytes(region);
  int v = static_cast<int>(std::min<int64_t>(8, 16 / std::max<int64_t>(smallest, 1)));
  while (v > 1 && must_divide != 0 && (must_divide < 0 || must_divide % v != 0)) v /= 2;
  return v;
}

double SegmentWaste(int64_t row_bytes, int64_t segment_bytes, int64_t element_bytes) {
  const double fewest = static_cast<double>((segment_bytes + 31) / 32);
  if (row_bytes % 32 == 0 && segment_bytes % 32 == 0) return 1.0;
  return std::max(1.0, static_cast<double>(segment_bytes + 32 - element_bytes) / 32.0 / fewest);
}

bool WholeChunks(const Node* n, int vector) {
  const int64_t bytes = ByteSize(n->dtype());
  return n->num_bytes() % std::min<int64_t>(16, vector * bytes) == 0;
}

int64_t BlocksPerSm(const DeviceSpec& device, int64_t threads, int64_t registers, int64_t smem_bytes, int64_t cap) {
  if (registers > 255) return 0;
  int64_t n = std::min(cap, device.registers_per_sm > 0 ? device.registers_per_sm / (registers * threads) : cap);
  if (smem_bytes > 0 && device.smem_per_sm_bytes > 0) {
    if (device.smem_per_block_bytes > 0 && smem_bytes > device.smem_per_block_bytes) return 0;
    n = std::min(n, device.smem_per_sm_bytes / (smem_bytes + 1024));  // 1 KB per block is reserved
  }
  return n;
}

double LonePhaseUs(const DeviceSpec& device, int64_t blocks, int64_t threads, int64_t registers, int64_t smem_bytes) {
  const int64_t per_sm = BlocksPerSm(device, threads, registers, smem_bytes, 2048 / threads);
  if (per_sm != 1) return 0;
  return std::ceil(static_cast<double>(blocks) / static_cast<double>(std::max(device.sm_count, 1))) *
         device.lone_block_phase_us;
}

double SplitMergeUs(const DeviceSpec& device, int64_t split, int64_t fold_threads, int levels, bool wait,
                    double waves, bool cluster) {
  if (split <= 1) return 0;
  // A cluster: a barrier per level and one per row.
  if (cluster) return device.split_latency_us + waves * (levels + 1) * device.cluster_sync_us;
  constexpr int64_t kFoldAhead = 4;  // SplitMerge's slots in flight per thread (4 or 8: the fewer)
  const int64_t per_round = std::max<int64_t>(fold_threads, 1) * kFoldAhead;
  const int64_t rounds = 1 + (split + per_round - 1) / per_round;  // the count, then the fold
  const double fold_us = static_cast<double>(rounds) * device.grid_sync_us / 2;
  return device.split_latency_us + (wait ? waves * levels * (device.grid_sync_us + fold_us) : fold_us);
}

// Blocks that hold their SM until their row's merge is done do not let a wave be back-filled as
// blocks finish, so a last wave half full takes as long as a full one (layer_norm over 32 rows
// of 262144 f32: 576 blocks on 396 slots, measured 45.9 us where the unquantised price said
// 30.1; bench/results/2026-11-27-session14, run 9).
double WaitingWaves(const DeviceSpec& device, const RowFit& fit, int64_t blocks, int64_t threads,
                    RunTimeEstimate& e) {
  if (fit.split <= 1 || !fit.split_waits || device.sm_count <= 0) return 1;
  int64_t per_sm = std::max<int64_t>(1, 1024 / std::max<int64_t>(threads, 1));
  if (fit.blocks_per_sm > 0) per_sm = std::min<int64_t>(per_sm, fit.blocks_per_sm);
  const double resident = static_cast<double>(device.sm_count * per_sm);
  const double fraction = static_cast<double>(blocks) / resident;
  if (fraction <= 1) return 1;
  const double waves = std::ceil(fraction);
  e.memory_us *= waves / fraction;
  e.total_us = std::max(e.memory_us, e.compute_us) + e.launch_us;
  return waves;
}

// The time the model gives a reduction launch: every byte once at the bandwidth its blocks draw
// (half occupancy: 1024 threads per SM), the extra passes of a streamed kernel again (from L2
// when the blocks' shares in flight fit in half of it), a split's merge (SplitMergeUs), and a
// lone on-chip block's phases.
double LaunchPrice(const DeviceSpec& device, int64_t bytes, int64_t reread_bytes, int64_t blocks, int64_t threads,
                   int64_t split, int levels, int64_t registers, int64_t smem_bytes, bool phases, bool split_waits,
                   int64_t fold_threads, bool cluster, double thread_worth) {
  // Resident blocks per SM: half occupancy, fewer where the registers a thread needs or the
  // shared memory a block takes do not leave room for them; a block whose threads cannot all
  // have their registers would spill: not a shape.
  const int64_t per_sm = BlocksPerSm(device, threads, registers, smem_bytes, std::max<int64_t>(1, 1024 / threads));
  if (per_sm < 1) return std::numeric_limits<double>::infinity();
  const int64_t resident = std::max<int64_t>(device.sm_count, 1) * per_sm;
  const double bandwidth = DrawnBandwidth(device, blocks, threads, per_sm, thread_worth);
  const int64_t in_flight = reread_bytes / std::max<int64_t>(blocks, 1) * std::min(blocks, resident);
  const bool from_l2 = device.l2_bytes > 0 && in_flight * 2 <= device.l2_bytes && device.l2_bytes_per_us > 0;
  const double waves = std::ceil(static_cast<double>(blocks) / static_cast<double>(resident));
  return static_cast<double>(bytes) / bandwidth +
         static_cast<double>(reread_bytes) / (from_l2 ? device.l2_bytes_per_us : bandwidth) +
         SplitMergeUs(device, split, fold_threads > 0 ? fold_threads : threads, levels, split_waits, waves, cluster) +
         (phases ? LonePhaseUs(device, blocks, threads, registers, smem_bytes) : 0.0);
}

namespace {

// The shared-memory cache for a block-per-row region (templates/row_reduce.cuh, kSharedCache):
// the region's row, or each share of it over 1 to 1024 blocks, as raw bytes in one block's
// dynamic shared memory. Taken, replacing `fit`, when the model prices it clearly (3%) below
// `current`, the register or streamed fit's price; `stores`: the region has row-shaped outputs.
bool TryShared(const Region& region, const ReducePlacement& placement, const DeviceSpec& device, int64_t row_bytes,
               bool stores, double current, int64_t parallel_split, RowFit& fit) {
  const int64_t limit = std::min(kMaxSharedCacheBytes, device.smem_per_block_bytes - 2048);
  if (device.smem_per_block_bytes <= 0 || limit <= 0) return false;
  const int64_t rows = placement.space.outer, length = placement.space.reduced;
  const int vector = RowVector(region, placement);
  int64_t slot_bytes = 0;  // one vector of every cached input
  for (const Node* in : region.inputs) {
    if (IsCachedRowInput(placement, in)) slot_bytes += vector * ByteSize(in->dtype());
  }
  if (slot_bytes == 0) return false;
  double best = current * 0.97;
  bool taken = false;
  // The split the SMs need (`parallel_split`, not the larger one a register cache may need: 227
  // KB of shared memory hold more than 512 threads' registers) and its multiples, and on a
  // device with clusters the largest cluster where the rule splits further (fewer blocks, but
  // merged by a cluster barrier). softmax over [1024, 50257] f16: a block per row in 100 KB of
  // shared memory 77.8 us, against 84.2 for the register rule's split of 2 as a cluster of two
  // 57 KB shares (H100, kiln tune, warm L2: bench/results/2026-11-28-session21).
  std::vector<int64_t> splits;
  if (SplitInCluster(device, kMaxClusterBlocks, SplitBlocksWait(placement.levels, stores)) &&
      fit.split > kMaxClusterBlocks) {
    splits.push_back(kMaxClusterBlocks);
  }
  for (int64_t split = std::max<int64_t>(parallel_split, 1); split <= 1024; split *= 2) splits.push_back(split);
  for (const int64_t split : splits) {
    if (split > 1 && (length + split - 1) / split < kMinSplitShare) break;
    const int64_t vectors = (length / vector + split - 1) / split;  // as codegen/emit_reduce.cc counts
    int64_t threads = 128;
    while (threads < 512 && vectors > 8 * threads) threads *= 2;
    const int64_t iters = (vectors + threads - 1) / threads;
    const int64_t smem = iters * threads * slot_bytes;
    if (smem > limit) continue;
    const int64_t registers = kSharedCacheRegisters;
    const bool waits = SplitBlocksWait(placement.levels, stores);
    // Only where two blocks fit an SM, for a region that stores rows: a block alone on its SM
    // loads, reduces and stores in turn, with no other block's loads in flight meanwhile.
    // layer_norm over 32 rows of 262144 f32: 8 blocks of 128 KB, one per SM, 54.2 us against
    // 49.6 for 18 blocks of 64 KB through global memory (H100); over 44 rows, a cluster of 6
    // blocks of 180 KB 53.7 us against 38.3 for 12 blocks of 90 KB (H200, kiln tune, L2
    // flushed: bench/results/2026-11-29-session31, run 5).
    if ((stores || (split == kMaxClusterBlocks && split < fit.split)) &&
        BlocksPerSm(device, threads, registers, smem, 2048 / threads) < 2) {
      continue;
    }
    const double p = LaunchPrice(device, row_bytes, 0, rows * split, threads, split, placement.levels, registers, smem,
                                 stores, waits, 0, SplitInCluster(device, split, waits));
    if (p >= best) continue;
    best = p;
    taken = true;
    fit.split = static_cast<int>(split);
    fit.share = (length + split - 1) / split;
    fit.threads = threads;
    fit.per_thread = iters * vector;
    fit.smem_bytes = smem;
    fit.phase_us = stores ? LonePhaseUs(device, rows * split, threads, registers, smem) : 0;
  }
  if (!taken) return false;
  fit.shared = true;
  fit.on_chip = true;
  fit.passes = 1;
  fit.online_max_sum = false;
  const int64_t per_sm = BlocksPerSm(device, fit.threads, kSharedCacheRegisters, fit.smem_bytes, 2048 / fit.threads);
  fit.blocks_per_sm = static_cast<int>(per_sm);
  fit.reason = absl::StrFormat(
      "row of %d%s kept in shared memory: %d bytes per block (%d threads x %d values, cp.async), %d block%s per SM, "
      "read once (the model: %.1f us of row reads, waits and phases against %.1f us in registers or streamed)",
      length, fit.split > 1 ? absl::StrFormat(" split over %d blocks (%d rows)", fit.split, rows) : "", fit.smem_bytes,
      fit.threads, fit.per_thread, per_sm, per_sm == 1 ? "" : "s", best, current);
  return true;
}

// Threads per row for a row of n <= 1024 in a warp-per-row kernel: the power of two in
// [min_lanes, 32] that gives each thread about four vectors, all loaded before the row's merge: a
// thread of one vector spends most of its time in the merge with none of its loads in flight
// (softmax over rows of 197 f16, H100, L2 flushed: 32 lanes of one vector each 66.5 us, 8 lanes
// of three or four 52.1 us; kiln tune, 2026-11-26). At least the lanes that keep the row's
// `inputs` cached within `limit` values each.
int ThreadsForShortRow(int64_t n, int vector_width, int64_t inputs, int64_t limit, int min_lanes) {
  const int64_t vectors = (n + vector_width - 1) / vector_width;
  int g = min_lanes;
  while (g < 32 && (4 * g < vectors || (vectors + g - 1) / g * vector_width * inputs > limit)) {
    g *= 2;
  }
  return g;
}

// The fewest lanes a short row may take: 1 (a thread owns whole rows of up to four vectors, and
// merges nothing) where the rows give every SM at least kShortRowThreadsPerSm threads that way,
// else 4 as before (few rows keep their lanes, so their launch keeps its threads). Four lanes
// of one vector each kept one 16-byte load in flight a thread, and a row of one vector left
// three lanes idle (H200, kiln tune, L2 flushed; bench/results/2026-11-29-session36, run 4):
// the sum over [2097152, 8] bf16 took 28.9 us at four lanes, 11.7 at one; log_softmax over
// [100000, 3] f32 6.9 and 4.3; the sum over [1048576, 16] f32 20.0 (session 34) and 19.3.
constexpr int64_t kShortRowThreadsPerSm = 256;
int FewestShortRowLanes(int64_t rows, const DeviceSpec& device) {
  int lanes = 1;
  while (lanes < 4 && rows * lanes < kShortRowThreadsPerSm * std::max<int64_t>(device.sm_count, 1)) lanes *= 2;
  return lanes < 4 ? lanes : 4;
}

}  // namespace

bool IsCachedRowInput(const ReducePlacement& placement, const Node* input) {
  const Placement& p = placement.Of(input);
  return p.reduced() && (p.outer() || placement.space.outer == 1);
}

bool IsRowWeight(const ReducePlacement& placement, const Node* input) {
  const Placement& p = placement.Of(input);
  return p.reduced() && !p.outer() && placement.space.outer != 1;
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
  const int64_t parallel_split = fit.split;
  // A row that would be streamed again for each level (or for its row-shaped outputs) may be
  // split further until each block's share fits on chip, so that it is read once: taken when
  // the model prices it cheaper, the bytes saved against the blocks of a row waiting for each
  // other once per level (every round of resident blocks).
  const bool row_outputs = std::any_of(region.outputs.begin(), region.outputs.end(),
                                       [&](const Node* o) { return placement.Of(o).reduced(); });
  const bool rereads = placement.levels > 1 || row_outputs;
  fit.split_waits = SplitBlocksWait(placement.levels, row_outputs);
  auto share_of = [&](int64_t split) { return (length + split - 1) / split; };
  auto fits = [&](int64_t split) {
    return PerThread(share_of(split), fit.row_inputs, max_threads) <= kRowCacheFloatsPerThread;
  };
  int64_t row_bytes = 0;
  for (const Node* in : region.inputs) row_bytes += IsCachedRowInput(placement, in) ? in->num_bytes() : 0;
  auto price = [&](int64_t split) {
    const bool cached = fits(split);
    const int passes = cached ? 1 : std::max(1, placement.levels + (row_outputs ? 1 : 0));
    const int64_t blocks = rows * split;  // only rows longer than kWarpRowMax come here
    return LaunchPrice(device, row_bytes, (passes - 1) * row_bytes, blocks, max_threads, split, placement.levels,
                       (cached ? PerThread(share_of(split), fit.row_inputs, max_threads) : 0) + kBaseRegisters, 0,
                       cached && row_outputs, fit.split_waits, 0, SplitInCluster(device, split, fit.split_waits));
  };
  // For a row read once whatever the split (one level, no row-shaped outputs), the split the
  // SMs need is an upper bound: a smaller one (down to none) that still leaves some SMs two
  // blocks is taken where it is priced cheaper. The mean over 256 channels of [32, 256, 56, 56]
  // bf16 (256 rows) took 23.1 us unsplit against 25.8 split 2; but the max over one row of 64M
  // bf16 took 72.5 us split 132 (a block per SM, which the model prices level) against 52.1
  // split 264 (H100, L2 flushed: bench/results/2026-11-28-session23.md, run 3).
  if (fit.split > 1 && !rereads) {
    double best = price(fit.split);
    for (int64_t split = fit.split / 2; split >= 1 && rows * split > device.sm_count; split /= 2) {
      const double p = price(split);
      if (p < best) {
        best = p;
        fit.split = static_cast<int>(split);
      }
    }
  }
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
    // Few rows: no other warps hide a row's loads (rms_norm over 16 rows of 1024 bf16 took
    // 2.38 us against Triton's 1.56, its weight loaded only after the row's sum; layer_norm's
    // one row of 1024 with its two weights, 96 values a lane, was streamed twice: 2.48 against
    // 1.74; H200, CUDA graphs: bench/results/2026-11-29-session29.md, run 9). Such a row may
    // cache twice the values, and its weights are loaded with it.
    const bool few = rows <= kFewRowsPerSm * std::max(device.sm_count, 1);
    fit.cache_limit = few ? kFewRowsCacheFloatsPerThread : kRowCacheFloatsPerThread;
    fit.threads = kWarp;
    fit.per_thread = PerThread(n, fit.row_inputs, kWarp);
    fit.on_chip = fit.per_thread <= fit.cache_limit;
    int64_t weights = 0;
    for (const Node* in : region.inputs) weights += IsRowWeight(placement, in) ? 1 : 0;
    if (few && fit.on_chip && weights > 0 && PerThread(n, fit.row_inputs + weights, kWarp) <= fit.cache_limit) {
      fit.weights_cached = true;
      fit.row_inputs += weights;
      fit.per_thread = PerThread(n, fit.row_inputs, kWarp);
    }
    // The kernel's block: rows of `lanes` threads each, 128 threads a block, or 256 where 128
    // would read under 4 KB of rows (H200, L2 flushed, 128 against 256 threads: softmax over
    // rows of 197 f16 0.92x, layer_norm over 768 bf16 0.97x, softmax over 1024 bf16 0.98x, six
    // other short-row kernels level; but sums of rows of 16 f32, 2 KB a block, 1.18x:
    // bench/results/2026-11-27-session20, run 6).
    const int64_t lanes = ThreadsForShortRow(n, RowVector(region, placement), fit.row_inputs, fit.cache_limit,
                                             FewestShortRowLanes(rows, device));
    int64_t row_bytes = 0;
    for (const Node* in : region.inputs) {
      if (IsCachedRowInput(placement, in)) row_bytes += n * ByteSize(in->dtype());
    }
    fit.block = (128 / lanes) * row_bytes >= 4096 ? 128 : 256;
    fit.rows_per_block = fit.block / lanes;
  } else {
    fit.threads = kMinBlockThreads;
    while (fit.threads < max_threads && PerThread(n, fit.row_inputs, fit.threads) > kRowCacheFloatsPerThread) {
      fit.threads *= 2;
    }
    fit.threads = std::min(fit.threads, max_threads);
    fit.on_chip = PerThread(n, fit.row_inputs, fit.threads) <= kRowCacheFloatsPerThread;
    // The block the kernel runs (codegen/kernel_params.cc takes it from here): about four
    // 16-byte vectors' worth per thread, at least the threads the cache needs, at most 512 (at
    // 1024 the unrolled online loop spills on sm_90, and 48 registers besides a cache leave
    // none); a split row's blocks all resident, so at most 512 too. Where the row's runs allow
    // only narrower accesses (RowVector), the count stays in bytes (rows of runs of 7 x 7 bf16,
    // one element an access, 2048 rows: 128 threads took 11.4 us against 13.3 at 256;
    // bench/results/2026-11-29-session32, runs 1 and 5) unless the model prices the threads
    // four narrow accesses each would give cheaper (few rows: fewer threads leave the SMs'
    // bandwidth undrawn; 96 rows: 256 threads, 4.9 us). A split row's share takes the same
    // rule where the model prices it no dearer than the fewest threads that hold the share (the
    // wider block's registers may leave one block per SM): 128 threads for shares of 4096 f32
    // split over 3 blocks took 7.3 us against 6.5 at 256 (layer_norm over [16, 12288], H100,
    // kiln tune, warm L2: bench/results/2026-11-28-session21).
    const int64_t needed = fit.threads;
    auto price_at = [&](int64_t threads) {
      const int64_t cached = fit.on_chip ? PerThread(n, fit.row_inputs, threads) : 0;
      return LaunchPrice(device, row_bytes, 0, rows * fit.split, threads, fit.split, placement.levels,
                         cached + kBaseRegisters, 0, fit.on_chip && row_outputs, fit.split_waits, 0,
                         SplitInCluster(device, fit.split, fit.split_waits));
    };
    auto wide_for = [&](int vector) {
      const int64_t wide = std::clamp<int64_t>(RoundDownPow2(n / vector / 4), kMinBlockThreads, 512);
      return fit.on_chip ? std::max(needed, wide) : wide;
    };
    fit.threads = wide_for(VectorElements(region, 0));
    if (const int64_t narrow = wide_for(RowVector(region, placement));
        narrow > fit.threads && price_at(narrow) < price_at(fit.threads)) {
      fit.threads = narrow;
    }
    if (fit.split > 1 && fit.on_chip && fit.threads != needed && price_at(needed) < price_at(fit.threads)) {
      fit.threads = needed;
    }
    fit.per_thread = PerThread(n, fit.row_inputs, fit.threads);
    fit.block = fit.threads;
  }
  const std::string budget =
      absl::StrFormat("%d f32 values per thread x %d threads%s", fit.cache_limit, n <= kWarpRowMax ? kWarp : max_threads,
                      fit.cache_limit > kRowCacheFloatsPerThread ? " (few rows: no other warps hide their loads)" : "");
  if (n > kWarpRowMax) {
    const int passes = fit.on_chip ? 1 : std::max(1, placement.levels + (row_outputs ? 1 : 0));
    const int64_t registers = (fit.on_chip ? fit.per_thread : 0) + kBaseRegisters;
    const double current = LaunchPrice(device, row_bytes, (passes - 1) * row_bytes, rows * fit.split, fit.threads,
                                       fit.split, placement.levels, registers, 0, fit.on_chip && row_outputs,
                                       fit.split_waits, 0, SplitInCluster(device, fit.split, fit.split_waits));
    const bool shared = TryShared(region, placement, device, row_bytes, row_outputs, current, parallel_split, fit);
    fit.cluster = SplitInCluster(device, fit.split, fit.split_waits);
    if (shared) {
      if (fit.cluster) absl::StrAppend(&fit.reason, "; its blocks are one thread-block cluster");
      return fit;
    }
    fit.blocks_per_sm = static_cast<int>(BlocksPerSm(device, fit.threads, registers, 0, 1024 / fit.threads));
    if (fit.on_chip && row_outputs) fit.phase_us = LonePhaseUs(device, rows * fit.split, fit.threads, registers, 0);
  }
  const std::string cluster = fit.cluster ? "; its blocks are one thread-block cluster" : "";
  if (fit.on_chip) {
    fit.reason = absl::StrFormat("%s fits the register budget of %s: %d per thread over %d threads%s%s%s", what,
                                 budget, fit.per_thread, fit.threads,
                                 fit.weights_cached ? ", its weights loaded and kept with it" : "",
                                 fit.phase_us > 0 ? absl::StrFormat(" (one block per SM: +%.1f us of unoverlapped "
                                                                    "load, reduce and store phases)", fit.phase_us)
                                                  : "",
                                 cluster);
    return fit;
  }
  fit.online_max_sum = !placement.online_max.empty();
  const std::string pairs = placement.OnlinePairs().empty() ? "" : " with " + placement.OnlinePairs();
  const int statistics = placement.levels;
  fit.passes = std::max(1, statistics + (row_outputs ? 1 : 0));
  std::string how;
  if (!row_outputs || statistics == 0) {
    how = pairs;
  } else {
    how = absl::StrFormat(" (%d for the statistics%s, 1 for the row-shaped outputs)", statistics,
                          pairs);
  }
  fit.reason = absl::StrFormat("%s does not fit the register budget of %s: streamed, %d pass%s%s%s", what, budget,
                               fit.passes, fit.passes == 1 ? "" : "es", how, cluster);
  return fit;
}

}  // namespace kiln
