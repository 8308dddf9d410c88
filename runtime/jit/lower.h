// LowerPlan: a FusionPlan over a graph -> a runtime Program (runtime/program.h).
//
//   every kind the kind table lowers to a kernel (passes/fusion/region_kind.h)
//        -> one kernel each: codegen's EmitKernel with the region's KernelParams (the
//           autotuner's choice in LowerOptions::params, else DefaultParams for the device),
//           compiled by NVRTC through the KernelCache, all kernels of the graph in parallel
//   matmul regions -> one cuBLASLt step: a transposed operand folds into the op, a bias add
//           into EPILOGUE_BIAS, a residual add into C with beta = 1; batch dims become a
//           strided batch (stride 0 where an operand is broadcast) or, failing that, one call
//           per batch
//   attention regions -> the tiled template's kernel (attention the template does not run
//           never reaches a plan: passes/lower_attention rewrote it before fusion)
//   view regions (reshapes) -> aliases, no step
// Every graph input gets an input buffer; a graph output is written in place by its producer
// (a view of it becomes an alias of the output), or copied when it is an input, a constant or
// another output. Intermediates are placed in the arena by the buffer plan; row kernels'
// scratch is persistent (zeroed once).
#ifndef KILN_RUNTIME_JIT_LOWER_H_
#define KILN_RUNTIME_JIT_LOWER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/kernel_params.h"
#include "codegen/kernel_source.h"
#include "ir/base/debug_options.h"
#include "ir/graph.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/priority_fusion.h"
#include "runtime/jit/kernel_cache.h"
#include "runtime/program.h"

namespace kiln {

struct LowerOptions {
  std::string arch = "sm_90a";  // NVRTC target; the Program runs on this arch only
  DeviceSpec device;            // for KernelParams defaults
  KernelCache* cache = nullptr; // nullptr: KernelCache::Default()
  int compile_threads = 0;      // 0: hardware concurrency
  std::string source_text;      // the imported graph, printed: hashed into Program::graph_hash
  bool share_arena = true;      // false: no two intermediates share bytes (debugging)
  DebugOptions debug;           // KILN_DUMP=cuda,ptx: each kernel's source / PTX
  std::map<int, KernelParams> params;  // region id -> KernelParams (runtime/jit/autotune.h)
};

// What happened while lowering, per region, for reports and the ledger.
struct LoweredRegion {
  int region = -1;
  RegionKind kind = RegionKind::kPointwise;
  std::vector<int> steps;          // indices into Program::steps
  std::vector<std::string> notes;  // the emitters' notes, e.g. "row cached in registers: 2 x 8 per thread"
  std::vector<std::string> kernels;
  std::vector<std::string> origins;  // per kernel: memory / disk / nvrtc
};

struct LowerResult {
  Program program;
  std::vector<LoweredRegion> regions;
  CacheStats cache_before, cache_after;
  double compile_wall_ms = 0;  // the whole parallel NVRTC batch
};

absl::StatusOr<LowerResult> LowerPlan(const Graph& graph, const FusionPlan& plan, const LowerOptions& options);

// The runtime's launch shape of a generated kernel whose count is `count`.
LaunchShape LaunchShapeOf(const KernelSource& kernel, int64_t count);

}  // namespace kiln

#endif  // KILN_RUNTIME_JIT_LOWER_H_
