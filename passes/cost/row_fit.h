// The row kernel's launch rule (templates/row_reduce.cuh): how many blocks share a row, whether
// each keeps its share of the row in registers, and if not, how many streaming passes over the
// row the streamed variant makes. One function decides it for both the cost model
// (passes/fusion/kind_reduction.cc) and the kernel parameters (codegen/kernel_params.cc), so the
// price and the kernel never disagree.
//
// Few long rows leave most SMs idle with a block per row, so a row longer than a warp's share
// is split over `split` blocks when there are fewer rows than kSplitTargetBlocksPerSm blocks per
// SM: each block takes a contiguous share and the blocks combine their partial results
// deterministically (a cooperative launch; each share is at least kMinSplitShare elements).
// The row kernel gives a row (or a share) a warp (rows of at most 1024 elements) or up to
// DeviceSpec::RowBudgetValues() / kRowCacheFloatsPerThread threads (512 on sm_90: 64 cached
// values leave 64 of the 128 registers a thread has at 512 threads per SM). A row fits when its
// row-shaped inputs, spread over those threads in 16-byte vectors (up to 8 elements), need at
// most kRowCacheFloatsPerThread f32 registers per thread. Otherwise the row is streamed from
// memory: one pass per dependency level of its reductions (a reduce_max followed by
// reduce_sum(exp(x - max)) is one pass, the online max+sum), plus one pass for row-shaped outputs.
#ifndef KILN_PASSES_COST_ROW_FIT_H_
#define KILN_PASSES_COST_ROW_FIT_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "passes/cost/cost_model.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/region.h"

namespace kiln {
struct ReducePlacement;
}

namespace kiln {

// Per-thread budget, in f32 values, of row-shaped inputs cached in registers by a row kernel
// (64 of the 255 registers a thread may use, leaving room for addressing and the prologue).
inline constexpr int64_t kRowCacheFloatsPerThread = 64;
// A launch of at most kFewRowsPerSm short rows (of at most 1024) per SM has too few warps for
// one row's loads to hide another's latency: its rows may cache up to
// kFewRowsCacheFloatsPerThread values per thread (a block of at most 256 threads then takes
// at most 256 x (128 + 48) registers), and their weights with them (RowFit::weights_cached).
inline constexpr int64_t kFewRowsPerSm = 4;
inline constexpr int64_t kFewRowsCacheFloatsPerThread = 128;
// The most dynamic shared memory a row kernel's shared-memory cache takes: the largest opt-in
// block allowance of the GPUs we target (227 KB on sm_90) less 2 KB for the kernel's own
// static shared memory. A device's smaller allowance (DeviceSpec::smem_per_block_bytes) rules
// where it has one.
inline constexpr int64_t kMaxSharedCacheBytes = (227 - 2) * 1024;
// Blocks per SM a split aims for, and the smallest share of a row one block takes.
inline constexpr int64_t kSplitTargetBlocksPerSm = 2;
inline constexpr int64_t kMinSplitShare = 4096;
// The most blocks of a split row that form one thread-block cluster (row_reduce.cuh's
// ClusterMerge): the portable cluster size of sm_90 (CUDA programming guide; 16 needs the
// non-portable attribute and a GPC with room for it).
inline constexpr int kMaxClusterBlocks = 8;

struct RowFit {
  int split = 1;               // blocks that share one row (column tile)
  bool split_waits = false;    // its blocks wait for the merged partials (SplitBlocksWait)
  bool shared = false;         // on chip in the block's shared memory (cp.async), not registers
  int64_t smem_bytes = 0;      // shared: the dynamic shared memory a block takes
  int blocks_per_sm = 0;       // blocks of a block-per-row (or column) kernel that its registers
                               // or shared memory let reside on an SM, at most 1024 / threads
                               // (shared: at most 2048 / threads, and the kernel's
                               // __launch_bounds__ minimum, which caps its registers); 0: unknown
  double phase_us = 0;         // on chip with one block per SM: its unoverlapped phases, in all
                               // (DeviceSpec::lone_block_phase_us per wave)
  int lanes = 0;               // column reductions: threads along the inner axes (each kV columns)
  int vector = 1;              // column reductions: the vector width along the inner axes
  int64_t share = 0;           // elements of a row one block (or group) takes: ceil(N / split)
  bool on_chip = true;
  int64_t row_inputs = 0;      // row-shaped inputs the kernel caches (at least 1), weights
                               // included where weights_cached
  int64_t cache_limit = kRowCacheFloatsPerThread;  // cached f32 values a thread may hold
  bool weights_cached = false; // few short rows: the weights (IsRowWeight) are cached too
  int64_t threads = 0;         // threads that share a row: on chip, the fewest that hold it
  int64_t block = 0;           // threads of the kernel's block (several short rows, or one row)
  int64_t rows_per_block = 1;  // rows of at most kWarpRowMax: rows a block takes, lanes apiece
  int64_t per_thread = 0;      // cached f32 values per thread with `threads` threads
  int passes = 1;              // passes over the row inputs (1 when on chip)
  bool online_max_sum = false; // streamed: a max and sum(exp(x - max)) share one pass
  bool cluster = false;        // the split blocks are one thread-block cluster (SplitInCluster)
  bool chained = false;        // columns: tiles kept on chip that write full-space outputs
                               // after their reductions (priced by ColumnChainUs)
  int ahead = 4;               // columns streamed: vectors in flight per thread (column_reduce.cuh's
                               // kAhead, KernelParams::chunk 1 or 8)
  // Columns kept in shared memory: the shape the model prices lowest without it (lanes x
  // threads, split, vector, whether in registers), a tuning candidate beside the default.
  struct Unshared {
    int lanes = 0, vector = 1, split = 1;
    int64_t threads = 0;
    bool on_chip = false;
  } unshared;
  std::string reason;          // one sentence for the ledger and `kiln dump`
};

// The rule for a row-reduction region whose nodes `placement` places (PlaceReduction calls
// it; everyone else reads ReducePlacement::fit).
RowFit FitRowOnChip(const Region& region, const ReducePlacement& placement, const DeviceSpec& device);

// The waves a split kernel whose blocks wait for each other's partials (RowFit::split_waits)
// runs in, `blocks` of `threads` at the fit's residency; with e.memory_us (and e.total_us)
// quantised to them. 1 for other kernels.
double WaitingWaves(const DeviceSpec& device, const RowFit& fit, int64_t blocks, int64_t threads,
                    RunTimeEstimate& e);

// The column kernel's launch rule (templates/column_reduce.cuh), for a column-reduction region:
// of its launch shapes (tiles 8 to 32 lanes wide along the inner axes, each lane a 16-byte
// vector of a width dividing the inner extent; 32 to 1024 threads; a tile's K split over 1 to
// 512 blocks) the one ColumnEstimate prices lowest: cached on chip or streamed, waves, waits.
RowFit FitColumnOnChip(const Region& region, const ReducePlacement& placement, const DeviceSpec& device);

// Registers a reduction kernel's thread needs besides its cache: addressing, loop state and
// arithmetic (~48, read off ptxas reports of the row kernels).
inline constexpr int64_t kBaseRegisters = 48;
// Registers of a row kernel whose cache is in shared memory, bounded by the residency that
// memory allows (ptxas, sm_90a, 2026-11-24: 32 to 40 at 512 threads and 3 blocks per SM).
inline constexpr int64_t kSharedCacheRegisters = 40;

// One launch of the column kernel, as a tuning candidate runs it: tiles of `lanes` x `vector`
// columns, `threads` along K, a tile's K over `split` blocks (one cluster with `cluster`), its
// share streamed, held in registers or in shared memory.
enum class ColumnCache { kStreamed, kRegisters, kShared };
struct ColumnLaunch {
  int vector = 1, lanes = 1, split = 1;
  int64_t threads = 1;  // along K
  ColumnCache cache = ColumnCache::kStreamed;
  bool cluster = false;
  int ahead = 0;        // streamed: vectors in flight per thread; 0: the rule's (FitColumnOnChip)
};
// The fit FitColumnOnChip would record had it chosen `launch` (registers, residency, passes,
// shared bytes: the same pricing), so that a candidate the tuner times is priced as the default
// is (codegen's CandidatePriceUs). A cache that cannot hold the share streams, as the emitter's.
RowFit FitColumnLaunch(const Region& region, const ReducePlacement& placement, const DeviceSpec& device,
                       ColumnLaunch launch);
// The one price of a column launch `fit` (FitColumnOnChip's shapes, FitColumnLaunch's
// candidates, and the region's price, kinds::PriceColumn): `traffic`, the region's bytes and
// work (TrafficAndWork), at the bandwidth its blocks draw, every extra streamed pass re-reading
// the full-space inputs and paying the sectors their warps' segments straddle (SegmentWaste);
// waiting waves quantised (WaitingWaves); at least the chains of latencies (ColumnChainUs,
// ColumnBlockChainUs with its base); then the split's merge (SplitMergeUs) and a lone cached
// block's phases.
RunTimeEstimate ColumnEstimate(const Region& region, const ReducePlacement& placement, const RowFit& fit,
                               const DeviceSpec& device, RunTimeEstimate traffic);

// The model's time for a reduction launch of `blocks` blocks of `threads`: `bytes` once, the
// `reread_bytes` of extra streamed passes (from L2 when what is in flight fits in half of it),
// the waits of split rows (once per level and wave of resident blocks, which the `registers`
// a thread needs and the `smem_bytes` a block takes can make fewer), and for a kernel that
// holds its rows on chip and stores row-shaped outputs (`phases`) LonePhaseUs. Infinite for a
// block whose threads cannot all have their registers (it would spill) or whose shared memory
// does not fit an SM. The split terms are SplitMergeUs's: `split_waits` (SplitBlocksWait) and
// `fold_threads`, the threads of a block along the reduced axis (0: all of them).
double LaunchPrice(const DeviceSpec& device, int64_t bytes, int64_t reread_bytes, int64_t blocks, int64_t threads,
                   int64_t split, int levels, int64_t registers, int64_t smem_bytes = 0, bool phases = false,
                   bool split_waits = true, int64_t fold_threads = 0, bool cluster = false, double thread_worth = 1.0);

// A column thread whose vectors start anywhere (ragged: two loads, the shifts and selects per
// vector) keeps half the bytes in flight an aligned one does: a sum over 512 x 50257 bf16
// (H200, every launch shape timed by kiln tune, bench/results/2026-11-28-session24.md) ran at
// 35.5 us with 512 threads per SM and 20.1 with 1024, where aligned columns saturate at 512.
inline constexpr double kRaggedThreadWorth = 0.5;
// kRaggedThreadWorth for a column vector of `vector` elements that does not divide the inner
// extent `inner`, else 1.
double ColumnThreadWorth(int vector, int64_t inner);

// Whether the blocks of a split row (column tile) form one thread-block cluster and merge through distributed
// shared memory (row_reduce.cuh's ClusterMerge) instead of global memory: on a device with
// clusters, for 2 to kMaxClusterBlocks blocks that wait for the merge. The wait is then a
// cluster barrier, not a global-memory flag: on the lent H100 (kiln tune, 2026-11-26) layer_norm
// over 16 rows of 12288 f32 split over 3 blocks took 12.4 us merging through global memory and
// 7.9 us as a cluster; softmax over 256 rows of 151936 bf16 (4 blocks, shared memory) 86.7 and
// 77.8 us; log_softmax over 9 rows of 50257 f32 (7 blocks) 9.1 and 7.3 us.
//
// A column tile's split is a cluster of at most kMaxColumnClusterBlocks. Softmax over axis 1 of
// [32, 3000, 96], [64, 8192, 16] and [32, 3000, 16] f32 (shapes no kernel was tuned on), split
// over 8 blocks (H200, kiln tune, L2 flushed: bench/results/2026-11-29-session33, runs 4 and 7):
// through global memory 33.2, 32.5 and 13.9 us; as a cluster of 8, 71.6, 41.0 and 20.0 while
// ClusterMerge had every thread read every rank's slots, 35.9, 31.6 and 11.9 once it read each
// word once; as a cluster of 4, 30.4, 29.8 and 15.2. No size wins everywhere, but the model
// does not price what a cluster of 8 costs a column tile (clusters of 5 to 8 leave 6-23% of the
// SMs' block slots empty, run 2): it predicted 23.9 us for the first shape's cluster of 8, which
// measured 35.9, against 26.5 for the split through global memory, which measured 33.4.
inline constexpr int kMaxColumnClusterBlocks = 4;
inline bool SplitInCluster(const DeviceSpec& device, int64_t split, bool split_waits,
                           int most = kMaxClusterBlocks) {
  return device.clusters && split_waits && split >= 2 && split <= std::min(most, kMaxClusterBlocks);
}

// Whether the blocks of a split row (column tile) wait for the merged partials: only where they
// use them after, for another level or for outputs of the full space (`full_outputs`). Else the
// last block to arrive merges and stores, and the launch needs no residency (not cooperative).
// codegen/emit_reduce.cc emits the kernel by it and the cost model prices it by it.
inline bool SplitBlocksWait(int levels, bool full_outputs) { return levels > 1 || full_outputs; }

// Whether a column region stores its outputs of the full space during its first pass over K
// (column_reduce.cuh's kStoreInStep): it has such outputs and none of them waits for a
// reduction or a combine (a gradient written beside the bias gradient that sums it). Then no
// pass follows the reductions for them, and split blocks need not wait for the merge; the
// rules above take `full_outputs` as the outputs that do wait.
bool ColumnStoresInStep(const Region& region, const ReducePlacement& placement);

// What splitting a row (column tile) over `split` blocks adds to a launch (row_reduce.cuh's
// SplitMerge): the last block to arrive folds the split partials, each of its `fold_threads`
// threads along the reduced axis ceil(split / fold_threads) of them, four at a time, a
// global-memory round trip (grid_sync_us / 2) per round, after one round trip to count itself.
// With `wait` the blocks wait for that fold and a flag once per level and `waves` of resident
// blocks; without, only the launch's last fold is on its critical path.
// With `cluster` (SplitInCluster) instead a cluster barrier (DeviceSpec::cluster_sync_us) per
// level and one at the end of each row, per wave. Either way DeviceSpec::split_latency_us
// once per launch: what a split launch measured above these terms whatever its split.
double SplitMergeUs(const DeviceSpec& device, int64_t split, int64_t fold_threads, int levels, bool wait,
                    double waves, bool cluster = false);
// A column tile held on chip (registers) whose kernel writes outputs of the full space (softmax,
// a norm over a non-innermost axis) lives through a chain of latencies, its loads, a combine
// across its warps along K per level and its stores, that more bandwidth does not shorten: on
// the lent H200 and H100 (kiln tune, 2026-11-27) softmax over the 21 classes of [8, 21, 512,
// 512] f16 took 66.8 / 109.6 / 196.7 us at 128, 256 and 512 threads (109.4 us at 256 on the
// H100, whose copy bandwidth is 30% lower). With the residency ColumnRegisters gives (5, 3 and
// 2 blocks per SM: 13, 21 and 32 waves of resident blocks; refitted 2026-11-28 when that
// formula was corrected) that is 5.3, 5.3 and 6.2 us per level (one: the max and the sum
// share a pass) and wave after the first
// (whose chain the launch's own latency covers): kColumnLevelWaveUs. The time is then at least
// (waves - 1) x levels x that; elsewhere 0 (and 0 for one wave: a column region that fits one
// wave is not priced apart from its pointwise consumer). `per_sm`: resident blocks per SM.
inline constexpr double kColumnLevelWaveUs = 5.4;
double ColumnChainUs(const DeviceSpec& device, bool cached_with_outputs, int levels, int64_t blocks, int64_t per_sm);
// A column block's own chain, which bandwidth does not shorten: its rounds of loads (each pass
// over its share streams ceil(values / ahead) of them; a cached share, one) at kColumnRoundUs,
// each level's merge across its warps (ColumnMerge: kColumnLevelUs, and kColumnWarpFoldUs a
// warp), and a split block's partials (kColumnSplitBlockUs, beyond the merge SplitMergeUs
// prices). A launch takes at least that per wave of resident blocks.
// Fitted on the lent H200 (kiln tune, L2 flushed: bench/results/2026-11-29-session35 run 1, 715
// candidates of 39 column regions, 14 of them shapes never tuned on, kept out of the fit to test
// it): the model without the chain was 0.60 off in rms of log(measured / predicted) over all
// candidates, and 2-6x low for blocks of one to four vectors a thread (sum over axis 0 of [8192,
// 1536] bf16 split 64 over 512 threads: 26.8 us measured, 11.9 predicted; 13.5 split 16 over
// 256 threads); with it 0.40 (0.26 over the candidates within 1.5x of each region's fastest,
// against 0.29).
// A base of kColumnChainBaseUs per launch (a column kernel's ramp and drain) fits them better
// still, 0.23. Run 5 of that session found no such base in small pointwise and row kernels
// (predicted within 8%), so it is the column kernel's own, and ColumnEstimate carries it. It was
// first left out of the region's price (only the fit's ranking had it), after it took a tanh
// out of the bias gradient summing it, [3000, 200] bf16; the cause was that ranking and price
// were two functions that combined the split's merge differently (session 36: one price now).
// The split term fitted at 2 us; at that it took [1000, 96] apart the same way, so it is 1 us.
inline constexpr double kColumnRoundUs = 0.6;
inline constexpr double kColumnLevelUs = 0.8;
inline constexpr double kColumnWarpFoldUs = 0.05;
inline constexpr double kColumnChainBaseUs = 4.0;
inline constexpr double kColumnSplitBlockUs = 1.0;
double ColumnBlockChainUs(const DeviceSpec& device, const RowFit& fit, int levels, int64_t blocks);
// Blocks of `threads` per SM that `registers` a thread and `smem_bytes` of shared memory a
// block (plus the 1 KB the runtime reserves per block) allow, at most `cap`; 0 where a block
// does not fit at all. The one residency rule of the model, and of the lowering's check of
// what ptxas gave (runtime/jit/lower.cc).
int64_t BlocksPerSm(const DeviceSpec& device, int64_t threads, int64_t registers, int64_t smem_bytes, int64_t cap);
// A block that loads its row share, reduces it and then stores its row-shaped outputs reads
// and writes in turn, not at once, unless another block on the SM fills the gaps: where
// registers or shared memory let only one block per SM be resident, lone_block_phase_us per
// wave; else 0. (A block that only reduces streams its loads without a gap: measured at 0.96
// of the floor with one block per SM, row_max_vocab32000_bf16.)
double LonePhaseUs(const DeviceSpec& device, int64_t blocks, int64_t threads, int64_t registers, int64_t smem_bytes);
// 16 bytes / the smallest element among the region's inputs and outputs (at most 8), halved
// until it divides `must_divide` (0: no constraint).
int VectorElements(const Region& region, int64_t must_divide);
// The smallest element among the region's inputs and outputs of more than one element (8 at most).
int64_t NarrowestBytes(const Region& region);
// Sectors a warp's segment of a row (lanes x vector elements, `segment_bytes`) fetches over the
// fewest it needs. A segment that starts on a 32-byte boundary needs ceil(W / 32); rows that
// start off one (an odd number of 2-byte columns) put a segment at any offset of whole
// elements, (W + 32 - b) / 32 sectors on average: 1.47x for 32 lanes of one bf16, 1.06x for 32
// lanes of a ragged vector of 8.
double SegmentWaste(int64_t row_bytes, int64_t segment_bytes, int64_t element_bytes);

// The ragged vector a column region may take besides the one that divides its inner extent:
// the widest (codegen's LoadVecAt shifts aligned chunks into place), where the one that divides
// moves fewer than 8 bytes of the narrowest element (an odd extent: 2-byte loads that keep few
// bytes in flight), every full-space input is a whole number of its chunks, and there is no
// output of the full space (it would be stored element by element: a bias gradient beside its
// tanh, [16384, 4095] bf16, measured 2.3x slower). 0 where none is allowed.
int RaggedColumnVector(const Region& region, const ReducePlacement& placement);
// Bytes of a column block's shared-memory cache (column_reduce.cuh's kSharedCache): a slot of one
// `vector` of every input the tile caches (reduced, of the full inner extent) for each of a
// thread's share of K (ceil(K / (split x along_k))), for every thread of the block. The one
// count of the model (FitColumnOnChip), the tuning candidates and the emitter's launch.
int64_t ColumnSharedBytes(const Region& region, const ReducePlacement& placement, int vector, int64_t along_k,
                          int64_t split, int64_t block);
// Whether `n`'s buffer is a whole number of the naturally aligned chunks (at most 16 bytes) that
// a vector of `vector` elements loads: kiln::LoadVecAt reads a vector that starts anywhere only
// from such a buffer.
bool WholeChunks(const Node* n, int vector);

// Whether `input` of a row region is one the row kernel may cache on chip: it varies along the
// row and from row to row (a weight [N], the same for every row, is read from L1/L2 where it is
// used, except in a launch of few rows: IsRowWeight, RowFit::weights_cached).
bool IsCachedRowInput(const ReducePlacement& placement, const Node* input);
// Whether `input` of a row region is a weight: it varies along the row but is the same for
// every row of several (a norm's [N] scale). Cached beside the row only where
// RowFit::weights_cached; otherwise read where it is used, from L1/L2.
bool IsRowWeight(const ReducePlacement& placement, const Node* input);

}  // namespace kiln

#endif  // KILN_PASSES_COST_ROW_FIT_H_
