// The C++ API every entry point shares (DESIGN.md §1): load a graph from a file, run the
// pass pipeline, and plan fusion. The CLI and the examples call these,
// never the layers below directly. Running a compiled Program is runtime/executable.h's job
// (and runtime/artifact.h saves and loads it).
#ifndef KILN_API_COMPILER_H_
#define KILN_API_COMPILER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/base/debug_options.h"
#include "ir/graph.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/ledger.h"
#include "passes/fusion/priority_fusion.h"
#include "passes/pass_pipeline.h"
#include "runtime/device_info.h"
#include "runtime/jit/autotune.h"
#include "runtime/jit/kernel_cache.h"
#include "runtime/jit/lower.h"

namespace kiln {

struct LoadOptions {
  // ONNX only: binds symbolic dimensions or whole input shapes (OnnxImportOptions::input_shapes;
  // the CLI's --shape NAME=16384,4096). Given for a JSON graph, whose shapes are static, it is
  // an error.
  std::map<std::string, std::vector<int64_t>> shapes;
};

// Imports a graph file by its extension: .json (kiln's format) or .onnx.
absl::StatusOr<std::unique_ptr<Graph>> LoadGraph(const std::string& path, const LoadOptions& options = {});

// The cost model's DeviceSpec for `name`: "h100" or "h200" (named, no GPU needed), or "auto":
// built from GPU 0 (DeviceSpecFromInfo) when there is one, else the named h100 spec (the spec
// of the default AOT target sm_90a), renamed "h100 (auto: no GPU)" so every report says so.
absl::StatusOr<DeviceSpec> ResolveDeviceSpec(const std::string& name);
// A DeviceSpec from the runtime's device query (runtime/device_info.h). Queried: SM count, L2,
// opt-in shared memory, registers per SM, and DRAM bandwidth from the memory clock and bus;
// the rest is derived from the h100 spec, as its provenance line says.
DeviceSpec DeviceSpecFromInfo(const DeviceInfo& info);

// Writes `graph` in kiln's JSON format to `path` (docs/graph-format.md); constants over 4 KiB
// go to the side file <stem>.bin next to it (so `path` must not itself end in .bin).
absl::Status SaveGraphAsJson(const Graph& graph, const std::string& path);

struct AnalyzeOptions {
  // ResolveDeviceSpec: auto (the GPU in hand; the h100 spec without one), h100 or h200.
  std::string device = "auto";
  DebugOptions debug;            // usually DebugOptionsFromEnv()
  bool keep_pass_snapshots = false;  // record the printed graph after every pass
};

struct Analysis {
  std::unique_ptr<Graph> graph;  // after the pipeline; the plan's regions point into it
  std::string imported_text;     // the graph as imported, printed
  std::vector<PassRecord> passes;
  std::vector<std::pair<std::string, std::string>> snapshots;  // pass name -> graph after it
  FusionPlan plan;
};

// The passes Analyze runs, in order.
std::vector<std::string> PipelinePassNames();

// Runs the default pipeline on `graph`, then priority fusion on the named device. Honours
// KILN_DUMP=ir,passes,ledger (to KILN_DUMP_DIR or stderr) and KILN_FUSION_FUEL.
absl::StatusOr<Analysis> Analyze(std::unique_ptr<Graph> graph, const AnalyzeOptions& options);

// Compiles `graph` for this GPU (heuristic launch parameters, no tuning) and runs it once on
// host tensors given by input name; returns the outputs in graph order. For tests and quick
// checks (ONNX node tests and fixtures on the GPU); needs a GPU.
absl::StatusOr<std::vector<Tensor>> CompileAndRunOnHost(const Graph& graph,
                                                        const std::map<std::string, Tensor>& inputs);

// A kernel region's CUDA source as codegen emits it with the heuristic KernelParams on the
// plan's device (no NVRTC; `kiln dump --code`). `error` says why there is none.
struct RegionSource {
  int region = -1;
  std::string kernel, params, source, error;
};
std::vector<RegionSource> KernelSources(const Analysis& analysis);

struct CompileOptions {
  AnalyzeOptions analyze;       // analyze.device: the cost model's spec ("auto": the GPU's)
  std::string arch;             // NVRTC target; empty: this GPU's, or sm_90a without one
  KernelCache* cache = nullptr; // nullptr: KernelCache::Default() (memory + disk)
  int compile_threads = 0;      // 0: hardware concurrency
  bool share_arena = true;      // false: every intermediate keeps its own bytes (debugging)
  // Time every kernel's KernelParams candidates on this GPU and compile the fastest
  // (runtime/jit/autotune.h; choices remembered in the cache directory). Needs a GPU whose
  // arch is `arch` (or `arch` empty); false: codegen's heuristic DefaultParams.
  bool tune = false;
  int tune_reps = 15;
  bool tune_afresh = false;  // time every kernel even when a choice is remembered (`kiln tune`)
};

struct Compiled {
  Analysis analysis;
  TuneResult tuning;    // empty unless options.tune
  LowerResult lowered;  // lowered.program is what runs (and what an artifact holds)
};

// Analyze, then (with options.tune) autotune, then lower every region to kernels / cuBLASLt
// calls and compile the kernels with NVRTC (runtime/jit/lower.h). Needs no GPU when `arch` is
// given and `tune` is false.
absl::StatusOr<Compiled> Compile(std::unique_ptr<Graph> graph, const CompileOptions& options);

}  // namespace kiln

#endif  // KILN_API_COMPILER_H_
