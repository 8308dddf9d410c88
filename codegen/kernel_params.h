// KernelParams: how a region's kernel is launched and tiled, as a hashable value (DESIGN.md §5,
// practice 11): passes decide *what* is fused, the autotuner (runtime/jit/autotune.h) picks among
// CandidateParams() *how* it runs. DefaultParams() is the heuristic used without tuning.
//
//   block_size      threads per block (a multiple of 32, at most 1024)
//   vector_width    elements each thread moves per access (16-byte loads for bf16 at 8); the
//                   emitter falls back to 1 where the innermost extent is not a multiple of it
//   rows_per_block  row kernels: rows a block owns at once; 1 = one row per block (the block
//                   reduces), block_size / G = one row per G threads, G in {4, 8, 16, 32}
//                   (short rows: a warp, or part of one); others refused
//   chunk           row kernels: 0 = the whole row is cached on chip (registers) across the
//                   passes; > 0 = the row is streamed from global memory, `chunk` elements per
//                   loop step (a multiple of threads-per-row x vector_width; the multiple is
//                   the loop's unroll factor)
//                   column kernels: 0 = cached in registers; 1 = streamed, four 16-byte
//                   vectors in flight per thread; 8 = streamed, eight in flight; with smem,
//                   the ring's depth
//                   norm_matmul: k32 chunks of W each warp loads at once (unroll)
//   smem            row kernels with chunk 0 and a block per row: the cache is the block's
//                   dynamic shared memory (raw bytes, cp.async) instead of registers
//                   column kernels with chunk > 0: the streamed loads in flight go through
//                   a ring of `chunk` vectors per thread in dynamic shared memory (cp.async)
//   split           reduction kernels: blocks that share one row (or one reduced extent),
//                   combining their partial results deterministically; 1 = none
//                   norm_matmul: blocks that share one output tile, each a slice of K
//   tile_m, tile_n  tiled kinds: the tile's extents; elementwise regions that stage a transposed
//                   read (templates/layout.cuh): tile_m x tile_n elements along (b, a), the
//                   staged inputs' innermost axis x the output's (0 x 0: the plain kernel)
//   stages, warps   tiled kinds: pipeline depth and warps per block (0: the kind's default)
//   warps_n         norm_matmul: of the warps, those along the features (the rest split k)
//   min_blocks      blocks per SM the compiler must fit (caps registers; 0: its own choice)
//   wgmma           attention: the sm_90a warpgroup kernel (templates/attention_sm90.cuh)
//                   instead of the mma.sync one; only on devices with DeviceSpec::wgmma
//   tma             attention (with wgmma): K and V copied by the tensor memory accelerator
//                   from a producer warpgroup (templates/attention_sm90_tma.cuh); the block
//                   has 32 x warps + 128 threads
#ifndef KILN_CODEGEN_KERNEL_PARAMS_H_
#define KILN_CODEGEN_KERNEL_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/base/hash.h"
#include "passes/cost/cost_model.h"
#include "passes/cost/device_spec.h"
#include "passes/cost/row_fit.h"  // kRowCacheFloatsPerThread, RowFit
#include "passes/fusion/region.h"

namespace kiln {

struct KernelParams {
  int block_size = 256;
  int vector_width = 1;
  int rows_per_block = 1;
  int64_t chunk = 0;
  int split = 1;
  int tile_m = 0, tile_n = 0;
  int stages = 0, warps = 0;
  int warps_n = 0;
  int min_blocks = 0;  // __launch_bounds__'s minimum resident blocks per SM (0: none)
  bool wgmma = false;
  bool tma = false;
  bool smem = false;
  bool cluster = false;  // the blocks of a split row (column tile) form one thread-block cluster
                         // (sm_90) and merge through distributed shared memory, not global memory
  int64_t max_grid = 0;  // a persistent launch (pointwise and unsplit row kernels, whose blocks
                         // loop over the work): at most this many blocks (0: one per work item)

  // "block=256 vec=8 rows=1 chunk=0", then the fields that are not at their default
  // (" split=4", " tile=64x64", " stages=2", " warps=4", " warps_n=4", " min_blocks=2", " wgmma", " tma", " smem",
  // " cluster", " max_grid=528").
  std::string ToString() const;
  // FNV-1a of ToString(): stable across processes and platforms (it names kernels and keys caches).
  uint64_t Hash() const;
  bool operator==(const KernelParams& other) const { return ToString() == other.ToString(); }
  bool operator!=(const KernelParams& other) const { return !(*this == other); }
};

// A streamed row's vectors in flight per thread (row_reduce.cuh's kUnroll): its chunk is
// threads per row x vector x this. Four: against two, the mean over N, H, W of [32, 256, 56,
// 56] bf16 took 16.7 us against 19.2, the GPT-2 cross entropy 64.2 against 65.1, amax over
// 64M bf16 37.5 against 37.9 (eight: 16.6, 72.8, 38.7; H200, kiln tune, L2 flushed:
// bench/results/2026-11-29-session32, run 6).
inline constexpr int kStreamedUnroll = 4;
inline int64_t StreamedChunk(int64_t threads_per_row, int vector_width) {
  return threads_per_row * vector_width * kStreamedUnroll;
}

// Checks the ranges above (not the fit to a region: EmitKernel does that).
// Threads that share one row of a row kernel: block_size / rows_per_block.
inline int ThreadsPerRow(const KernelParams& p) { return p.block_size / p.rows_per_block; }

absl::Status ValidateParams(const KernelParams& params);

// The heuristic default for `region` on `device`:
//  * elementwise kinds: 256 threads, vector = 16 bytes / the smallest element size among the
//    region's inputs and outputs (at most 8), halved until it divides the innermost extent; or
//    the LayoutPlan's plain_vector where it has one (passes/fusion/plain_vector.h).
//  * row reductions: vector as above (any N: rows have a head and a tail); the blocks per row
//    (split), the block's threads and whether the row is kept on chip, in registers or in
//    shared memory (smem, with min_blocks the residency that memory allows, at most 1536
//    threads' worth), are the region's RowFit (the cost model's rule, passes/cost/row_fit.h);
//    rows (or shares of a split row) of at most 1024 elements go one per warp (8 rows per
//    256-thread block); streamed rows take chunk = threads x V x 2.
//  * elementwise regions whose LayoutPlan is tiled: the tiled kernel's DefaultTile
//    (passes/fusion/layout_access.h; the cost model prices the same tile).
KernelParams DefaultParams(const Region& region, const DeviceSpec& device);

// The autotuner's candidates (the default first, no duplicates, all valid for the region).
std::vector<KernelParams> CandidateParams(const Region& region, const DeviceSpec& device);

// The cost model's time for `region` launched with `params` (EstimateRunTime over the fit the
// model would record for that launch: row_fit.h's FitColumnLaunch), so that `kiln tune` shows
// each candidate's prediction beside its measurement and the model's ranking can be checked
// against the tuner's. Column reductions only for now; -1 for the other kinds.
double CandidatePriceUs(const Region& region, const KernelParams& params, const DeviceSpec& device);
// Its terms (EstimateRunTime's: memory, compute and the column chains, launch); nullopt where -1.
std::optional<RunTimeEstimate> CandidateEstimate(const Region& region, const KernelParams& params,
                                                 const DeviceSpec& device);
// The fit CandidatePriceUs prices (row_fit.h's FitColumnLaunch for `params`' launch); nullopt
// for a kind it does not price.
std::optional<RowFit> CandidateColumnFit(const Region& region, const KernelParams& params, const DeviceSpec& device);

}  // namespace kiln

#endif  // KILN_CODEGEN_KERNEL_PARAMS_H_
