// The column kernel's launch rule (templates/column_reduce.cuh), the model's side: which tile
// shape a column-reduction region gets (FitColumnOnChip) and what any of its launch shapes costs
// (FitColumnLaunch, for the tuner's candidates). A region reduces K of [outer, K, inner] for
// each column of inner; a tile is `lanes` threads along inner, each a `vector` of columns, and
// `threads` along K; a tile's K may be split over blocks (merged through global memory or one
// cluster). Every shape, the region's own included, has one price, ColumnEstimate: its bytes at
// the bandwidth its blocks draw with the column kernel's registers, its passes over K (one where
// the tile's share is cached in registers or shared memory), its chains of latencies
// (ColumnChainUs, ColumnBlockChainUs) and its split's merge. The fit ranks shapes by it,
// fusion sees it (kinds::PriceColumn) and every tuning candidate gets it (FitColumnLaunch).
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "passes/cost/cost_model.h"
#include "passes/cost/row_fit.h"
#include "passes/fusion/reduce_placement.h"

namespace kiln {
namespace {

constexpr int64_t kWarp = 32;

// A column thread also keeps a vector of per-column accumulators and values (a word or two per
// reduction and per-column value, for each of its kV lanes), and streamed, the four 16-byte
// vectors per full-space input its loop has in flight (column_reduce.cuh's ForColumn): at 1024
// threads (64 registers) a streamed f16 or f32 column spills (ptxas, sm_90a, 2026-11-25).
// A cached column keeps its values and little else besides them: cached + 16 + 4 x vector, read
// off ptxas for the zoo's three cached column kernels (sm_90a, 2026-11-28): softmax over axis 1
// of [8, 1024, 512] f32 (32 cached, vector 4) 64, layer_norm over axis 1 of [32, 96, 56, 56] f32
// (48, vector 4) 80, softmax over axis 1 of [8, 21, 512, 512] f16 (48, vector 8) 96. The
// streamed formula gave them 104, 128 and 144, and so priced a split of 8 blocks per tile at one
// block per SM where ptxas allows two.
int64_t ColumnRegisters(int64_t cached, int vector, int64_t row_inputs, const ReducePlacement& placement) {
  if (cached > 0) return cached + 16 + 4 * vector;
  int64_t words = 0;
  for (const Node* red : placement.reductions) words += placement.IsPairedMax(red) ? 2 : 1;
  return kBaseRegisters + 2 * words * vector + 16 * row_inputs;
}

int64_t RoundUpPow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace

double ColumnThreadWorth(int vector, int64_t inner) {
  return inner % std::max(vector, 1) != 0 ? kRaggedThreadWorth : 1.0;
}

int RaggedColumnVector(const Region& region, const ReducePlacement& placement) {
  const int64_t inner = placement.space.inner;
  const int widest = VectorElements(region, 0), dividing = VectorElements(region, inner);
  if (dividing * NarrowestBytes(region) >= 8) return 0;
  for (const Node* out : region.outputs) {
    if (placement.Of(out).reduced()) return 0;
  }
  for (const Node* in : region.inputs) {
    const Placement& p = placement.Of(in);
    if (p.reduced() && NumElements(p.Part(in, 2)) == inner && !WholeChunks(in, widest)) return 0;
  }
  return widest;
}

int64_t ColumnSharedBytes(const Region& region, const ReducePlacement& placement, int vector, int64_t along_k,
                          int64_t split, int64_t block) {
  const ReduceSpace& space = placement.space;
  int64_t slot = 0;
  for (const Node* in : region.inputs) {
    const Placement& p = placement.Of(in);
    if (p.reduced() && NumElements(p.Part(in, 2)) == space.inner) slot += ByteSize(in->dtype()) * vector;
  }
  const int64_t per_block = std::max<int64_t>(split, 1) * std::max<int64_t>(along_k, 1);
  return slot * ((space.reduced + per_block - 1) / per_block) * block;
}

bool ColumnStoresInStep(const Region& region, const ReducePlacement& placement) {
  bool any = false;
  for (const Node* o : region.outputs) {
    const Placement& p = placement.Of(o);
    if (!p.reduced()) continue;
    if (p.level > 0 || p.combined) return false;
    any = true;
  }
  return any;
}

double ColumnBlockChainUs(const DeviceSpec& device, const RowFit& fit, int levels, int64_t blocks) {
  if (device.sm_count <= 0 || fit.threads <= 0) return 0;
  const int64_t iters = fit.per_thread / std::max<int64_t>(fit.row_inputs * fit.vector, 1);
  const int64_t ahead = std::max(fit.ahead, 1);
  const int64_t rounds = fit.on_chip ? 1 : fit.passes * ((iters + ahead - 1) / ahead);
  const int64_t warps = (fit.threads * fit.lanes + 31) / 32;
  const double block_us = static_cast<double>(rounds) * kColumnRoundUs +
                          levels * (kColumnLevelUs + static_cast<double>(warps) * kColumnWarpFoldUs) +
                          (fit.split > 1 && !fit.cluster ? kColumnSplitBlockUs : 0.0);
  const double resident = static_cast<double>(device.sm_count * std::max(fit.blocks_per_sm, 1));
  return std::ceil(static_cast<double>(blocks) / resident) * block_us;
}

double ColumnChainUs(const DeviceSpec& device, bool cached_with_outputs, int levels, int64_t blocks, int64_t per_sm) {
  if (!cached_with_outputs || levels < 1 || device.sm_count <= 0) return 0;
  const double resident = static_cast<double>(device.sm_count * std::max<int64_t>(per_sm, 1));
  return (std::ceil(static_cast<double>(blocks) / resident) - 1) * levels * kColumnLevelWaveUs;
}

// A column fit keeps its share in shared memory only where the model prices that at most this
// fraction of its best shape without (see FitColumnOnChip).
constexpr double kSharedColumnWin = 0.80;

namespace {

// What every launch shape of one column region shares: the bytes it moves once, the bytes of
// its full-space inputs (re-read by each extra streamed pass), how many there are, whether
// outputs of the full space wait for the reductions, and the passes a streamed tile makes.
struct ColumnTraffic {
  int64_t bytes = 0, row_bytes = 0, row_inputs = 0;
  bool full_outputs = false;
  int streamed_passes = 1;
};

ColumnTraffic TrafficOf(const Region& region, const ReducePlacement& placement) {
  ColumnTraffic t;
  for (const Node* in : region.inputs) {
    const Placement& p = placement.Of(in);
    const bool full = p.reduced() && NumElements(p.Part(in, 2)) == placement.space.inner;
    t.row_inputs += full;
    t.row_bytes += full ? in->num_bytes() : 0;
    t.bytes += in->num_bytes();
  }
  for (const Node* out : region.outputs) t.bytes += out->num_bytes();
  t.row_inputs = std::max<int64_t>(t.row_inputs, 1);
  t.full_outputs = !ColumnStoresInStep(region, placement) &&
                   std::any_of(region.outputs.begin(), region.outputs.end(),
                               [&](const Node* o) { return placement.Of(o).reduced(); });
  t.streamed_passes = std::max(1, placement.levels + (t.full_outputs ? 1 : 0));
  return t;
}

// Values of the full-space inputs one thread of `launch` takes along K (f32 words).
int64_t ColumnPerThread(const ReduceSpace& space, const ColumnTraffic& t, const ColumnLaunch& launch) {
  const int64_t along = std::max<int64_t>(launch.split, 1) * std::max<int64_t>(launch.threads, 1);
  return t.row_inputs * ((space.reduced + along - 1) / along) * launch.vector;
}

// A streamed tile's vectors in flight per thread (column_reduce.cuh's kAhead): four 16-byte
// vectors, eight of a narrower vector (an odd width's single elements: measured 27.1 against
// 30.8 us, 512 x 50257 bf16, 2026-11-25). Eight 16-byte vectors too where a block has its SM to
// itself (at most one block per SM) and each thread loads at least eight: four per thread then
// keep too few bytes in flight. H200, L2 flushed, bench/results/2026-11-27-session20 run 5: the
// bias gradient over [16384, 4096] bf16 (128 blocks of 512 threads) 36.3 against 40.5 us,
// nhw_sum over [32, 56, 56, 256] f16 (128 blocks of 512) 21.3 against 24.0; but with 256 blocks
// of 256 threads (two on most SMs) 1-2.5% slower: col_sum_1Mx16_f32, mid_mean_frames_f32,
// mid_max_points_f32, col_sum_tokens_3d_f32.
int StreamedAhead(const Region& region, const ReducePlacement& placement, const DeviceSpec& device,
                  const ColumnLaunch& launch, int64_t blocks) {
  int64_t widest = 1;
  for (const Node* in : region.inputs) {
    if (placement.Of(in).reduced()) widest = std::max<int64_t>(widest, ByteSize(in->dtype()));
  }
  const int64_t vectors = placement.space.reduced / (std::max<int64_t>(launch.split, 1) * std::max<int64_t>(launch.threads, 1));
  const bool alone = device.sm_count > 0 && blocks <= device.sm_count && vectors >= 8;
  return widest * launch.vector < 16 || alone ? 8 : 4;
}

// Sets the fields of `f` for `launch` (its cache as given): its shape, the registers and shared
// memory that give its residency, its passes and vectors in flight, and what every column fit
// carries besides (the share, whether split blocks wait). Its price is ColumnEstimate's.
void ShapeColumnFit(const Region& region, const ReducePlacement& placement, const DeviceSpec& device,
                    const ColumnTraffic& t, const ColumnLaunch& launch, RowFit& f) {
  const ReduceSpace& space = placement.space;
  const int64_t lanes = launch.lanes, block = lanes * launch.threads;
  const int64_t tiles = space.outer * ((space.inner + lanes * launch.vector - 1) / (lanes * launch.vector));
  const int64_t per_thread = ColumnPerThread(space, t, launch);
  const bool in_registers = launch.cache == ColumnCache::kRegisters;
  const bool in_smem = launch.cache == ColumnCache::kShared;
  const bool cached = in_registers || in_smem;
  const int64_t registers = in_smem ? kSharedCacheRegisters
                                    : ColumnRegisters(in_registers ? per_thread : 0, launch.vector, t.row_inputs, placement);
  const int64_t smem_bytes =
      in_smem ? ColumnSharedBytes(region, placement, launch.vector, launch.threads, launch.split, block) : 0;
  f.row_inputs = t.row_inputs;
  f.vector = launch.vector;
  f.lanes = launch.lanes;
  f.threads = launch.threads;
  f.split = launch.split;
  f.cluster = launch.cluster;
  f.per_thread = per_thread;
  f.on_chip = cached;
  f.shared = in_smem;
  f.smem_bytes = smem_bytes;
  f.chained = cached && t.full_outputs;
  f.passes = cached ? 1 : t.streamed_passes;
  f.blocks_per_sm = static_cast<int>(BlocksPerSm(device, block, registers, smem_bytes, 1024 / block));
  // A cached tile that stores its columns loads, reduces and stores in turn, as a row block
  // does (LonePhaseUs): softmax over axis 1 of [8, 1024, 512] f32, 128 tiles of 512 threads
  // alone on their SMs 14.8 us, 256 tiles of 256 threads two an SM 12.9 (H200, kiln tune:
  // bench/results/2026-11-29-session33, run 1).
  f.phase_us = f.chained ? LonePhaseUs(device, tiles * launch.split, block, registers, smem_bytes) : 0;
  f.ahead = launch.ahead > 0 ? launch.ahead : StreamedAhead(region, placement, device, launch, tiles * launch.split);
  f.share = (space.reduced + f.split - 1) / f.split;
  f.split_waits = SplitBlocksWait(placement.levels, t.full_outputs);
  f.online_max_sum = !placement.online_max.empty();
}

}  // namespace

RunTimeEstimate ColumnEstimate(const Region& region, const ReducePlacement& placement, const RowFit& fit,
                               const DeviceSpec& device, RunTimeEstimate e) {
  e.row_on_chip = fit.on_chip;
  e.passes = fit.passes;
  e.row_fit = fit.reason;
  const ReduceSpace& s = placement.space;
  for (const Node* in : region.inputs) {
    const Placement& p = placement.Of(in);
    if (p.reduced()) e.bytes_read += (e.passes - 1) * in->num_bytes();
    if (!p.reduced() || NumElements(p.Part(in, 2)) != s.inner) continue;
    const int64_t b = ByteSize(in->dtype());
    const double waste = SegmentWaste(s.inner * b, std::min(fit.lanes, 32) * fit.vector * b, b);
    e.wasted_bytes += static_cast<int64_t>((waste - 1) * static_cast<double>(e.passes * in->num_bytes()));
  }
  const int64_t tiles = s.outer * ((s.inner + fit.lanes * fit.vector - 1) / (fit.lanes * fit.vector));
  const int64_t block = fit.threads * fit.lanes;
  e.blocks = tiles * fit.split;
  FinishEstimate(device, device.f32_flops_per_us,
                 DrawnBandwidth(device, e.blocks, block, fit.blocks_per_sm, ColumnThreadWorth(fit.vector, s.inner)), 1, e);
  const double waves = WaitingWaves(device, fit, e.blocks, block, e);
  const double merge_us =
      SplitMergeUs(device, fit.split, fit.threads, placement.levels, fit.split_waits, waves, fit.cluster);
  e.compute_us = std::max({e.compute_us, ColumnChainUs(device, fit.chained, placement.levels, e.blocks, fit.blocks_per_sm),
                           ColumnBlockChainUs(device, fit, placement.levels, e.blocks) + kColumnChainBaseUs});
  e.total_us = std::max(e.memory_us, e.compute_us) + e.launch_us;
  e.launch_us += merge_us + fit.phase_us;
  e.total_us += merge_us + fit.phase_us;
  return e;
}

RowFit FitColumnLaunch(const Region& region, const ReducePlacement& placement, const DeviceSpec& device,
                       ColumnLaunch launch) {
  const ColumnTraffic t = TrafficOf(region, placement);
  const ReduceSpace& space = placement.space;
  const int64_t block = static_cast<int64_t>(launch.lanes) * launch.threads;
  // As the emitter falls back (codegen/emit_reduce.cc): a cache that does not hold the share
  // streams it, and a ragged vector is not copied raw.
  if (launch.cache == ColumnCache::kRegisters && ColumnPerThread(space, t, launch) > kRowCacheFloatsPerThread) {
    launch.cache = ColumnCache::kStreamed;
  }
  if (launch.cache == ColumnCache::kShared &&
      (space.inner % launch.vector != 0 ||
       ColumnSharedBytes(region, placement, launch.vector, launch.threads, launch.split, block) > kMaxSharedCacheBytes)) {
    launch.cache = ColumnCache::kStreamed;
  }
  RowFit fit;
  ShapeColumnFit(region, placement, device, t, launch, fit);
  fit.reason = "a tuning candidate's launch";
  return fit;
}

RowFit FitColumnOnChip(const Region& region, const ReducePlacement& placement, const DeviceSpec& device) {
  RowFit fit;
  const ReduceSpace& space = placement.space;
  const int64_t K = space.reduced, I = space.inner;
  const ColumnTraffic traffic = TrafficOf(region, placement);
  const RunTimeEstimate work = TrafficAndWork(region);
  fit.row_inputs = traffic.row_inputs;
  const int streamed_passes = traffic.streamed_passes;
  // The launch shapes the column kernel has, priced: tiles of 32, 16 or 8 lanes of a vector
  // (at least 64 bytes of a row at once), 32 to 1024 threads, a tile's K over 1 to 512 blocks;
  // with the vector that divides the inner extent and, where one is allowed, a ragged vector
  // over unsplit tiles (split ragged tiles measured slower than unsplit ones at every shape
  // tried: a sum over 4096 x 32001 bf16 split 32, 136 us, against 66 with narrower tiles).
  const int ragged = RaggedColumnVector(region, placement);
  double best = -1, best_smem = -1;  // the shapes in registers or streamed, and in shared memory
  RowFit smem_fit = fit;
  for (const int vector : {VectorElements(region, I), ragged}) {
    if (vector == 0) continue;
    // At least 64 bytes of a row at once: 4 lanes of a 16-byte vector, whatever its dtype (a
    // lane counted as 2-byte elements kept f32 columns at 8 lanes, where 4 measured up to 21%
    // faster: the mean over the middle axis of [16, 3000, 80] f32, 8.6 against 10.9 us, H200).
    int64_t lane_bytes = 1;
    for (const Node* in : region.inputs) {
      if (placement.Of(in).reduced()) lane_bytes = std::max<int64_t>(lane_bytes, vector * ByteSize(in->dtype()));
    }
    const int64_t min_lanes = std::max<int64_t>(1, 64 / lane_bytes);
    const int64_t most_split = I % vector != 0 ? 1 : 512;
    for (int64_t lanes = std::min<int64_t>(kWarp, RoundUpPow2((I + vector - 1) / vector)); lanes >= 1; lanes /= 2) {
      if (lanes < min_lanes && lanes < RoundUpPow2((I + vector - 1) / vector)) break;
      // 128 and fewer last: taken only where clearly better. Blocks of one or two warps merge K
      // within a warp (or two) and keep up to 32 tiles an SM in their own phases: softmax over
      // the 21 classes of [8, 21, 512, 512] f16, 64 threads of 32 lanes streamed (2 along K),
      // measured 59.2 us against 64.5 for 128 threads holding the tile in registers (H200, L2
      // flushed; bench/results/2026-11-28-session28.md).
      for (int64_t block : {256, 512, 1024, 128, 64, 32}) {
        const int64_t threads = block / lanes;  // along K
        for (int64_t split = 1; split <= most_split && (split == 1 || K >= split * threads); split *= 2) {
          for (const bool smem_variant : {false, true}) {  // streamed, or kept in shared memory
            ColumnLaunch launch;
            launch.vector = vector;
            launch.lanes = static_cast<int>(lanes);
            launch.threads = threads;
            launch.split = static_cast<int>(split);
            const int64_t per_thread = ColumnPerThread(space, traffic, launch);
            // One pass reads everything once either way: caching would only take registers.
            const bool in_registers = streamed_passes > 1 && per_thread <= kRowCacheFloatsPerThread;
            // A share the registers do not hold is kept in shared memory instead (column_reduce.cuh's
            // kSharedCache), where a block's copy leaves room for two an SM: softmax over the 21
            // classes of [8, 21, 512, 512] f16, 32 threads of one lane each holding 21 rows,
            // 51.2 us against 59.3 streamed twice (H200, kiln tune: bench/results/
            // 2026-11-29-session34, run 3). Where the registers hold it they measured faster.
            const int64_t smem = ColumnSharedBytes(region, placement, vector, threads, split, block);
            const bool in_smem = smem_variant && streamed_passes > 1 && !in_registers && I % vector == 0 &&
                                 device.smem_per_sm_bytes > 0 && 2 * (smem + 1024) <= device.smem_per_sm_bytes;
            if (smem_variant && !in_smem) continue;
            launch.cache = in_smem ? ColumnCache::kShared : in_registers ? ColumnCache::kRegisters : ColumnCache::kStreamed;
            RowFit shape;
            ShapeColumnFit(region, placement, device, traffic, launch, shape);
            if (shape.blocks_per_sm < 1) continue;  // its threads cannot all have their registers
            const double price = ColumnEstimate(region, placement, shape, device, work).total_us;
            double& b = in_smem ? best_smem : best;
            if (b >= 0 && price >= b * 0.98) continue;  // a clearly better shape only
            b = price;
            (in_smem ? smem_fit : fit) = shape;
          }
        }
      }
    }
  }
  // The shared-memory cache only where the model prices it well below every other shape. It
  // does not see what the shared copy costs: where a register cache holds the share, the
  // shared one measured 9-15% slower at the model's favourite shapes (softmax over axis 1 of
  // [32, 3000, 96], [64, 8192, 16] and [8, 1024, 512] f32). Priced at 0.76-0.78 of the
  // alternative, it measured 7% faster (the 21 classes of [8, 21, 512, 512] f16), 3% ([4, 50,
  // 1000, 64] bf16), 2% and -4% ([1, 81, 50000] bf16 and f16); at 0.85, 4-5% slower
  // (log_softmax over axis 1 of [2, 150, 128, 128] bf16 and f16). H200, kiln tune, L2 flushed:
  // bench/results/2026-11-29-session34, runs 3, 5, 7 and 8.
  const bool take_smem = best_smem >= 0 && (best < 0 || best_smem < kSharedColumnWin * best);
  if (take_smem) {
    smem_fit.unshared = {fit.lanes, fit.vector, fit.split, fit.threads, fit.on_chip};
    fit = smem_fit;
  }
  // The split is chosen as merged through global memory, then run as one cluster where it can
  // be: pricing the cluster into the choice took softmax over the middle axis of [8, 1024, 512]
  // f32 from 16 blocks per tile (23.6 us) to a cluster of 8 (26.8 us; H100, L2 flushed).
  fit.cluster = SplitInCluster(device, fit.split, fit.split_waits, kMaxColumnClusterBlocks);
  const int64_t tiles = space.outer * ((I + fit.lanes * fit.vector - 1) / (fit.lanes * fit.vector));
  fit.reason = absl::StrFormat(
      "columns [%d | %d | %d]: %d lanes of %d along i x %d threads along K, %d tile%s%s; %d values per thread %s",
      space.outer, K, I, fit.lanes, fit.vector, fit.threads, tiles, tiles == 1 ? "" : "s",
      fit.split > 1 ? absl::StrFormat(" split over %d blocks each%s", fit.split, fit.cluster ? " (one cluster)" : "")
                    : "",
      fit.per_thread,
      fit.shared                           ? absl::StrFormat("kept in shared memory (%d bytes per block)", fit.smem_bytes)
      : fit.on_chip                        ? "kept in registers"
      : streamed_passes == 1               ? "read once, streamed (one pass: caching would only take registers)"
      : absl::StrFormat("do not fit: streamed, %d passes", fit.passes));
  return fit;
}

}  // namespace kiln
