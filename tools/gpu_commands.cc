#include "tools/gpu_commands.h"

#include <algorithm>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "api/compiler.h"
#include "api/lowering_ledger.h"
#include "api/reference.h"
#include "api/runtime.h"
#include "ir/base/status.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/promote.h"
#include "passes/fusion/region_kind.h"
#include "runtime/buffer_plan.h"
#include "tools/bench_floor.h"
#include "tools/cli_common.h"
#include "tools/summary.h"

namespace kiln {
namespace {

constexpr char kCompileUsage[] = R"(usage: kiln compile GRAPH -o FILE.kiln [--arch sm_90a] [--device auto] [--shape NAME=DIMS] [--no-cache] [--tune | --no-tune]

Compiles GRAPH (.json or .onnx) ahead of time: the pass pipeline, priority fusion, code
generation and NVRTC, into one artifact that `kiln run FILE.kiln` and the C++ runtime load
and run without NVRTC. Prints one line per step (kernel, registers, spills, compile ms and
whether the CUBIN came from NVRTC or the cache) and the artifact's size.

flags:
  -o, --output FILE   the artifact to write (required)
  --arch ARCH         NVRTC target, e.g. sm_90a (H100/H200), sm_80; default: this GPU's,
                      or sm_90a without one. The artifact runs on that architecture only.
  --device NAME       the cost model's device spec: auto (default: this GPU's query, the
                      h100 spec without a GPU), h100 or h200
  --shape BINDINGS    ONNX symbolic dimensions: NAME=DIM[,DIM...] separated by ';'
  --no-cache          compile every kernel with NVRTC (neither the memory nor the disk cache),
                      to time cold compiles
  --ledger FILE       write the ledger as JSON lines: every fusion decision and region (as
                      `kiln dump --format jsonl`), then a "lowered" record per region (its
                      kernels, KernelParams, registers, spills, NVRTC ms, origin, tuning)
  --tune, --no-tune   time every kernel's launch-parameter candidates on this GPU and keep the
                      fastest (the default when there is a GPU of the target arch; choices are
                      remembered in the cache directory); --no-tune: the heuristic defaults
)";

constexpr char kBenchUsage[] = R"(usage: kiln bench GRAPH|FILE.kiln [--reps N] [--flush-l2] [--cuda-graph] [--json FILE] [--arch ARCH] [--device NAME]

Times a compiled graph on the GPU with CUDA events, after warm-up: the median of N runs end
to end and of every step alone (events between steps), with the bytes each step moves and its
GB/s. In the same process it measures the device-to-device copy bandwidth (and, when the graph
has matmuls, the bf16 cuBLASLt rate) and reports the floor: compulsory bytes (graph inputs and
outputs) over that bandwidth, or FLOPs over that rate if larger, and time / floor.

flags:
  --reps N       timed repetitions (default 50)
  --flush-l2     start every repetition with a cold L2: before each one (of every measurement,
                 warm-ups included) read a 256 MiB buffer (the size triton's do_bench uses) on
                 the timed stream, outside the timed region (a read leaves no dirty lines for
                 the timed work to write back). Without it
                 repetitions run back to back, and a graph that fits in L2 (50 MB on H100) runs
                 from it. The text and JSON ("l2": "flushed" or "warm") say which was used.
  --cuda-graph   also time the run replayed as one CUDA graph (captured once, before the
                 warm-ups), next to the stream launches, under the same L2 policy; the text
                 and JSON ("cuda_graph_us") show both, and every report gives the launches
                 per run ("launches_per_run": kernels, cuBLASLt calls, copies; a graph
                 replay is 1)
  --json FILE    also write the figures as JSON (bench/results/ keeps these)
  --no-tune      (GRAPH) compile with the heuristic launch parameters instead of autotuning
  --ledger FILE  write the compiled graph's "lowered" records (JSON lines, as `kiln compile
                 --ledger`) and a "measured" record per region: its steps' median times summed
)";

constexpr char kTuneUsage[] = R"(usage: kiln tune GRAPH [--reps N] [--device NAME] [--shape NAME=DIMS]

Autotunes GRAPH's kernels on this GPU: for every generated kernel, codegen's launch-parameter
candidates (block size, a warp or a block per row, the row cached in registers or streamed)
are compiled, checked against the default's outputs, and timed (median of N launches after
warm-up, random inputs, each launch after a 256 MiB read that leaves the L2 cold, as
`kiln bench --flush-l2` times); the fastest is kept when it beats the default by more than 3%.
Prints each kernel's candidates and times. The choices are remembered in the cache directory
($KILN_CACHE_DIR), so `kiln compile`, `run` and `bench` on this GPU use them without timing
again; `kiln tune` itself always times afresh.

flags:
  --reps N       timed launches per candidate (default 15)
)";

// --device, --arch (default: this GPU's, or sm_90a without one), --tune / --no-tune (default:
// tune when there is a GPU of the target arch) and the KILN_DUMP switches.
absl::StatusOr<CompileOptions> CompileOptionsFromFlags(const ParsedArgs& args) {
  CompileOptions options;
  KILN_ASSIGN_OR_RETURN(options.analyze.debug, DebugOptionsFromEnv());
  if (args.values.count("device")) options.analyze.device = args.values.at("device");
  std::string gpu_arch;
  if (HaveGpu()) {
    KILN_ASSIGN_OR_RETURN(gpu_arch, CurrentDeviceArch());
  }
  options.arch = args.values.count("arch") ? args.values.at("arch") : gpu_arch;
  if (args.Has("tune") && args.Has("no-tune")) return absl::InvalidArgumentError("--tune and --no-tune together");
  if (args.Has("tune") && gpu_arch.empty()) return absl::InvalidArgumentError("--tune needs a GPU");
  options.tune = args.Has("tune") || (!args.Has("no-tune") && !gpu_arch.empty() && options.arch == gpu_arch);
  return options;
}

// "  tuned region 3: block=128 ... 101.2 us (default) | block=256 ... 95.3 us <-" per region.
void PrintTuning(const TuneResult& tuning) {
  for (const TunedRegion& t : tuning.regions) {
    std::cout << absl::StrFormat("  tuned region %-3d %s\n", t.region, t.ToString());
  }
}

struct Target {
  std::unique_ptr<Executable> executable;
  std::unique_ptr<Graph> reference;  // the source graph (for inputs and --check)
  std::string what;
};

// The exit-code contract (docs/cli.md): a bad graph is exit 2 whatever the machine, so the
// GPU commands read and verify GRAPH here, before they look for a GPU (exit 1 without one);
// an artifact is read by LoadTarget.
LoadedGraph LoadUnlessArtifact(const std::string& command, const ParsedArgs& args) {
  if (LooksLikeArtifact(args.positional[0])) return {};
  return LoadAndVerify(command, args.positional[0], &args);
}

// GRAPH (`loaded`, compiled now) or FILE.kiln (loaded here), loaded onto the GPU.
absl::StatusOr<Target> LoadTarget(const ParsedArgs& args, LoadedGraph loaded) {
  const std::string& path = args.positional[0];
  Target t;
  Program program;
  if (LooksLikeArtifact(path)) {
    KILN_ASSIGN_OR_RETURN(program, LoadArtifact(path));
    t.what = absl::StrCat("artifact ", path, " (", program.arch, ", no NVRTC)");
  } else {
    KILN_ASSIGN_OR_RETURN(CompileOptions options, CompileOptionsFromFlags(args));
    auto start = std::chrono::steady_clock::now();
    KILN_ASSIGN_OR_RETURN(Compiled compiled, Compile(std::move(loaded.graph), options));
    program = std::move(compiled.lowered.program);
    t.what = absl::StrFormat("%s compiled for %s in %.0f ms (%s)", path, program.arch, MillisSince(start),
                             options.tune ? absl::StrCat("autotuned: ", compiled.tuning.regions.size(),
                                                         " kernels with a choice")
                                          : "heuristic launch parameters");
  }
  KILN_ASSIGN_OR_RETURN(t.reference, ParseGraph(program.source_graph));
  KILN_ASSIGN_OR_RETURN(t.executable, Executable::Load(std::move(program)));
  return t;
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.good()) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::vector<Tensor> InOrder(const Graph& g, std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> v;
  for (const Node* in : g.inputs()) v.push_back(inputs.at(in->name()));
  return v;
}

}  // namespace

int CompileCommand(const std::vector<std::string>& raw) {
  std::vector<std::string> argv = raw;
  for (std::string& a : argv) {
    if (a == "-o") a = "--output";
  }
  auto args = ParseArgs(argv, {{"output", true}, {"arch", true}, {"device", true}, {"shape", true},
                               {"no-cache", false}, {"tune", false}, {"no-tune", false}, {"ledger", true}});
  if (!args.ok()) return UsageError("compile", std::string(args.status().message()));
  if (args->help) {
    std::cout << kCompileUsage;
    return kExitOk;
  }
  int code = kExitOk;
  if (!OneGraph("compile", *args, &code)) return code;
  if (!args->values.count("output")) return UsageError("compile", "missing -o FILE.kiln");
  LoadedGraph loaded = LoadAndVerify("compile", args->positional[0], &*args);
  if (!loaded.graph) return loaded.exit_code;
  absl::StatusOr<CompileOptions> options = CompileOptionsFromFlags(*args);
  if (!options.ok()) return Error("compile", std::string(options.status().message()), kExitUsage);
  KernelCache uncached("");  // --no-cache: memory only, and empty, so every kernel is compiled cold
  if (args->Has("no-cache")) options->cache = &uncached;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Compiled> compiled = Compile(std::move(loaded.graph), *options);
  if (!compiled.ok()) return Error("compile", std::string(compiled.status().message()), kExitFailure);
  double ms = MillisSince(start);
  const Program& p = compiled->lowered.program;
  const FusionPlan& plan = compiled->analysis.plan;
  std::cout << absl::StrFormat("%s: %d ops -> %d regions -> %d steps (%d kernels, %d cuBLASLt), arch %s\n",
                               p.graph_name, plan.ops, plan.regions.size(), p.steps.size(), p.modules.size(),
                               std::count_if(p.steps.begin(), p.steps.end(),
                                             [](const Step& s) { return s.kind == Step::Kind::kMatmul; }),
                               p.arch);
  for (const LoweredRegion& r : compiled->lowered.regions) {
    for (size_t k = 0; k < r.kernels.size(); ++k) {
      auto m = std::find_if(p.modules.begin(), p.modules.end(), [&](const Module& m) { return m.name == r.kernels[k]; });
      std::cout << absl::StrFormat("  region %-3d %-16s %s  %s  regs %d spills %d B  nvrtc %.0f ms (%s)\n", r.region,
                                   RegionKindName(r.kind), m->name, m->params, m->registers, m->spill_bytes, m->compile_ms,
                                   k < r.origins.size() ? r.origins[k] : "?");
    }
    if (r.kernels.empty()) std::cout << absl::StrFormat("  region %-3d %-16s (library call or view)\n", r.region, RegionKindName(r.kind));
    for (const std::string& note : r.notes) std::cout << "      note: " << note << "\n";
  }
  PrintTuning(compiled->tuning);
  const CacheStats &a = compiled->lowered.cache_before, &b = compiled->lowered.cache_after;
  std::cout << absl::StrFormat("kernels: %d compiled by NVRTC, %d from the disk cache, %d from memory; %.0f ms wall\n",
                               b.compiles - a.compiles, b.disk_hits - a.disk_hits, b.memory_hits - a.memory_hits,
                               compiled->lowered.compile_wall_ms);
  if (args->values.count("ledger")) {
    const std::string lowered = LoweringJsonLines(compiled->lowered, compiled->tuning, /*with_origin=*/true);
    if (absl::Status s = WriteText(args->values.at("ledger"), LedgerJsonLines(plan) + lowered); !s.ok()) {
      return Error("compile", std::string(s.message()), kExitFailure);
    }
  }
  const std::string& out = args->values.at("output");
  if (absl::Status s = SaveArtifact(p, out); !s.ok()) return Error("compile", std::string(s.message()), kExitFailure);
  std::cout << absl::StrFormat("wrote %s (%d bytes; arena %d B, liveness bound %d B, constants %d B) in %.0f ms\n",
                               out, SerializeProgram(p).size(), p.arena_bytes, PeakLiveBytes(p), p.constants.size(),
                               ms);
  return kExitOk;
}

int RunGpuCommand(const std::vector<std::string>& argv) {
  auto args = ParseArgs(argv, {{"inputs", true}, {"random", true}, {"outputs", true}, {"check", false},
                               {"arch", true}, {"device", true}, {"shape", true}, {"tune", false}, {"no-tune", false},
                               {"cuda-graph", false}});
  if (!args.ok()) return UsageError("run", std::string(args.status().message()));
  int code = kExitOk;
  if (!OneGraph("run", *args, &code)) return code;
  LoadedGraph loaded = LoadUnlessArtifact("run", *args);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  if (!HaveGpu()) {
    return Error("run", "no GPU (or no driver): use `kiln run --reference` for the CPU interpreter", kExitFailure);
  }
  absl::StatusOr<Target> target = LoadTarget(*args, std::move(loaded));
  if (!target.ok()) return Error("run", std::string(target.status().message()), kExitFailure);
  std::cout << target->what << "\n";
  const Graph& graph = *target->reference;
  auto inputs = InputsFromFlags("run", graph, *args);
  if (!inputs.ok()) return Error("run", std::string(inputs.status().message()), kExitUsage);
  std::vector<Tensor> in = InOrder(graph, *inputs);
  target->executable->set_cuda_graph(args->Has("cuda-graph"));
  absl::StatusOr<std::vector<Tensor>> outputs = target->executable->RunOnHost(in);
  if (!outputs.ok()) return Error("run", std::string(outputs.status().message()), kExitFailure);
  auto start = std::chrono::steady_clock::now();
  outputs = target->executable->RunOnHost(in);  // the second run is the one timed (warm)
  double run_ms = MillisSince(start);
  if (!outputs.ok()) return Error("run", std::string(outputs.status().message()), kExitFailure);
  const Program& p = target->executable->program();
  for (size_t i = 0; i < outputs->size(); ++i) {
    std::cout << FormatSummary(p.output_names[i], (*outputs)[i], Summarize((*outputs)[i]));
  }
  bool all_ok = true;
  if (args->Has("check")) {
    // The reference evaluates the same plan region by region, in f32 inside a region and
    // rounding where the GPU stores (api/reference.h); the whole graph in f32 is shown too.
    AnalyzeOptions analyze;
    // The named spec the artifact was priced on, or this GPU's where it was "auto" (its name is
    // the GPU's, "NVIDIA H200 (sm_90)", which names no spec).
    analyze.device = NamedDeviceSpec(p.device).ok() ? p.device : "auto";
    auto analysis = Analyze(graph.Clone(), analyze);
    if (!analysis.ok()) return Error("run", std::string(analysis.status().message()), kExitFailure);
    auto want = InterpretAsPlanned(*analysis->graph, analysis->plan, *inputs);
    if (!want.ok()) return Error("run", std::string(want.status().message()), kExitFailure);
    auto promoted = PromoteTo32(graph);
    if (!promoted.ok()) return Error("run", std::string(promoted.status().message()), kExitFailure);
    auto whole = Interpret(**promoted, *inputs);
    if (!whole.ok()) return Error("run", std::string(whole.status().message()), kExitFailure);
    for (size_t i = 0; i < outputs->size(); ++i) {
      Comparison c = Compare((*outputs)[i], (*want)[i], GraphTolerance((*want)[i].dtype()));
      Comparison f = Compare((*outputs)[i], (*whole)[i], GraphTolerance((*want)[i].dtype()));
      all_ok &= c.ok();
      std::cout << absl::StrFormat("check %s: %s  vs the plan's reference: %s\n      vs the whole graph in f32: %s\n",
                                   p.output_names[i], c.ok() ? "ok" : "FAILED", c.ToString(), f.ToString());
    }
  }
  if (args->values.count("outputs")) {
    if (absl::Status s = WriteOutputs(p.output_names, *outputs, args->values.at("outputs")); !s.ok()) {
      return Error("run", std::string(s.message()), kExitFailure);
    }
  }
  std::cout << "launches per run: " << target->executable->launches_per_run().ToString();
  if (args->Has("cuda-graph")) {
    std::cout << "; the graph holds " << CountLaunches(p).ToString() << "\ncuda graph: "
              << target->executable->graph_stats().ToString();
  }
  std::cout << "\n";
  std::cout << absl::StrFormat("time: %.3f ms for a run with host copies (use kiln bench for kernel times)\n", run_ms);
  return all_ok ? kExitOk : kExitFailure;
}

int BenchCommand(const std::vector<std::string>& argv) {
  auto args = ParseArgs(argv, {{"reps", true}, {"flush-l2", false}, {"json", true}, {"arch", true}, {"device", true},
                               {"shape", true}, {"tune", false}, {"no-tune", false}, {"ledger", true},
                               {"cuda-graph", false}});
  if (!args.ok()) return UsageError("bench", std::string(args.status().message()));
  if (args->help) {
    std::cout << kBenchUsage;
    return kExitOk;
  }
  int code = kExitOk;
  if (!OneGraph("bench", *args, &code)) return code;
  absl::StatusOr<int> reps = PositiveIntFlag(*args, "reps", 50);
  if (!reps.ok()) return UsageError("bench", std::string(reps.status().message()));
  LoadedGraph loaded = LoadUnlessArtifact("bench", *args);
  if (loaded.exit_code != kExitOk) return loaded.exit_code;
  if (!HaveGpu()) return Error("bench", "no GPU (or no driver)", kExitFailure);
  absl::StatusOr<Target> target = LoadTarget(*args, std::move(loaded));
  if (!target.ok()) return Error("bench", std::string(target.status().message()), kExitFailure);
  std::cout << target->what << "\n";
  const BenchOptions options{*reps, args->Has("flush-l2"), args->Has("cuda-graph")};
  absl::StatusOr<BenchReport> report = BenchExecutable(*target->executable, *target->reference, options);
  if (!report.ok()) return Error("bench", std::string(report.status().message()), kExitFailure);
  std::cout << report->ToText();
  if (args->values.count("json")) {
    std::ofstream(args->values.at("json")) << report->ToJson();
    std::cout << "wrote " << args->values.at("json") << "\n";
  }
  if (args->values.count("ledger")) {
    std::string ledger = target->executable->program().lowering_ledger;
    std::map<int, std::pair<double, double>> per_region;  // measured, predicted
    std::map<int, int> steps;
    for (const BenchStep& s : report->steps) {
      per_region[s.region].first += s.measured_us;
      per_region[s.region].second += s.predicted_us;
      ++steps[s.region];
    }
    for (const auto& [region, t] : per_region) ledger += MeasuredJsonLine(region, t.first, t.second, steps[region]);
    if (absl::Status s = WriteText(args->values.at("ledger"), ledger); !s.ok()) {
      return Error("bench", std::string(s.message()), kExitFailure);
    }
    std::cout << "wrote " << args->values.at("ledger") << "\n";
  }
  return kExitOk;
}

int TuneCommand(const std::vector<std::string>& argv) {
  auto args = ParseArgs(argv, {{"reps", true}, {"device", true}, {"shape", true}});
  if (!args.ok()) return UsageError("tune", std::string(args.status().message()));
  if (args->help) {
    std::cout << kTuneUsage;
    return kExitOk;
  }
  int code = kExitOk;
  if (!OneGraph("tune", *args, &code)) return code;
  absl::StatusOr<int> reps = PositiveIntFlag(*args, "reps", 15);
  if (!reps.ok()) return UsageError("tune", std::string(reps.status().message()));
  LoadedGraph loaded = LoadAndVerify("tune", args->positional[0], &*args);  // bad input: 2 on any machine
  if (!loaded.graph) return loaded.exit_code;
  if (!HaveGpu()) return Error("tune", "no GPU (or no driver): tuning times kernels on the GPU", kExitFailure);
  absl::StatusOr<CompileOptions> options = CompileOptionsFromFlags(*args);
  if (!options.ok()) return Error("tune", std::string(options.status().message()), kExitUsage);
  options->tune = true;
  options->tune_reps = *reps;
  options->tune_afresh = true;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Compiled> compiled = Compile(std::move(loaded.graph), *options);
  if (!compiled.ok()) return Error("tune", std::string(compiled.status().message()), kExitFailure);
  std::cout << absl::StrFormat("%s: %d kernels with more than one candidate, tuned on %s in %.0f ms\n",
                               compiled->lowered.program.graph_name, compiled->tuning.regions.size(),
                               compiled->lowered.program.arch, MillisSince(start));
  PrintTuning(compiled->tuning);
  return kExitOk;
}

}  // namespace kiln
