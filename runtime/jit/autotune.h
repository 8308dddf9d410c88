// The autotuner: chooses each generated kernel's KernelParams by timing codegen's candidates
// on the GPU (DESIGN.md §5: the passes decide what is fused, the autotuner how it runs).
//
// For every region that gets a generated kernel, codegen's CandidateParams (the heuristic
// default first, then other block sizes, a warp or a block per row, the row cached in
// registers or streamed) are emitted and compiled through the KernelCache, every region's
// candidates in one parallel NVRTC batch. Then, one region at a time, on random inputs drawn
// for the region's own subgraph (ir/interpreter.h's RandomInputs, so integer indices stay
// within the axis they index):
//   * each candidate runs once with its outputs poisoned and must write what the default
//     writes, within ir/compare.h's KernelTolerance widened by OrderTolerance (another block
//     size or split adds in another order: a sum of 16384 f32 terms that cancels to 0.05
//     differs by 5e-5 between two orders); one that does not is a compiler bug, returned as an
//     Internal error naming both;
//   * each candidate is launched `warmup` times, then `reps` times between CUDA events, each
//     launch after a read of 256 MiB that empties L2 (TuneOptions::flush_l2, as `kiln bench
//     --flush-l2` and bench/zoo.py time whole graphs); its time is the median;
//   * the fastest wins if it beats the default by more than `min_gain` (a relative margin,
//     so that noise does not flip a choice between equals; `long_min_gain` where the default
//     takes over `long_kernel_us`, whose medians repeat far closer: decoding attention's 1.5 ms
//     default measured 1499.8 and 1499.1 us in two runs on the lent H100); otherwise the
//     default stays.
// Choices are remembered on disk under <kernel cache directory>/tune/, keyed by the default
// kernel's source, the candidates, the GPU's name and the arch, so a graph tuned once on a GPU
// is not timed again (TunedRegion::cached; TuneOptions::reuse = false times it anyway);
// KILN_CACHE_DIR=off keeps nothing.
#ifndef KILN_RUNTIME_JIT_AUTOTUNE_H_
#define KILN_RUNTIME_JIT_AUTOTUNE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/kernel_params.h"
#include "ir/graph.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/priority_fusion.h"
#include "runtime/jit/kernel_cache.h"

namespace kiln {

struct TuneOptions {
  std::string arch;             // NVRTC target of the current GPU ("sm_90a")
  DeviceSpec device;            // for CandidateParams
  KernelCache* cache = nullptr; // nullptr: KernelCache::Default()
  int compile_threads = 0;      // 0: hardware concurrency
  int warmup = 3;
  int reps = 15;
  double min_gain = 0.03;       // a candidate must be this much faster than the default
  double long_min_gain = 0.01;  // ... when the default takes more than long_kernel_us
  double long_kernel_us = 200;
  bool reuse = true;            // take a remembered choice instead of timing
  bool remember = true;         // write the choices to disk
  bool flush_l2 = true;         // each timed launch starts with a cold L2 (runtime/repetitions.h), as
                                // `kiln bench --flush-l2` and the zoo time them: with a warm L2 a
                                // region whose bytes fit in it is tuned for the wrong bandwidth
};

struct TunedRegion {
  int region = -1;
  std::vector<KernelParams> candidates;  // [0] is the default
  std::vector<double> us;                // median per candidate; empty when `cached`
  std::vector<double> predicted_us;      // the cost model's time per candidate (codegen's
                                         // CandidatePriceUs); -1 where it prices none
  std::vector<int> registers;            // ptxas's registers a thread per candidate (-1: not reported)
  std::vector<int64_t> spill_bytes;      // ptxas's spill stores per candidate, bytes
  int chosen = 0;                        // index into candidates
  bool cached = false;                   // the choice came from disk, nothing was timed
  // "block=128 ... 101.2 us (pred 98.0) [64 regs] (default) | block=256 ... 95.3 us [40 regs, 16 B spilled] <-"
  std::string ToString() const;
};

struct TuneResult {
  std::map<int, KernelParams> params;  // region id -> chosen (LowerOptions::params)
  std::vector<TunedRegion> regions;    // every kernel region with more than one candidate
};

// Needs a GPU (and a current context, runtime/executable.h's EnsureContext).
absl::StatusOr<TuneResult> TunePlan(const Graph& graph, const FusionPlan& plan, const TuneOptions& options);

}  // namespace kiln

#endif  // KILN_RUNTIME_JIT_AUTOTUNE_H_
