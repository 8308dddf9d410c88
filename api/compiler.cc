#include "api/compiler.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontends/json/json_graph.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/base/status.h"
#include "ir/printer.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"

namespace kiln {
namespace {

void WriteDump(const DebugOptions& debug, const std::string& file, const std::string& text) {
  if (debug.dump_dir.empty()) {
    std::fprintf(stderr, "// ---- %s ----\n%s", file.c_str(), text.c_str());
    return;
  }
  std::ofstream(debug.dump_dir + "/" + file) << text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> LoadGraph(const std::string& path, const LoadOptions& options) {
  if (absl::EndsWith(path, ".json")) {
    if (!options.shapes.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": --shape binds ONNX symbolic dimensions; a kiln JSON ",
                                                     "graph's shapes are static"));
    }
    return ImportJsonGraphFile(path);
  }
  if (absl::EndsWith(path, ".onnx")) {
    OnnxImportOptions onnx;
    onnx.input_shapes = options.shapes;
    return ImportOnnxFile(path, onnx);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": unknown graph format; expected a .json (kiln) or .onnx file"));
}

absl::StatusOr<Analysis> Analyze(std::unique_ptr<Graph> graph, const AnalyzeOptions& options) {
  KILN_ASSIGN_OR_RETURN(DeviceSpec device, NamedDeviceSpec(options.device));
  Analysis analysis;
  analysis.imported_text = PrintGraph(*graph);
  if (options.debug.Dumps(DumpKind::kIr)) {
    WriteDump(options.debug, graph->name() + ".00.imported.kir", analysis.imported_text);
  }
  PassPipeline::Observer observer;
  if (options.keep_pass_snapshots) {
    observer = [&](const PassRecord& record, const Graph& g) {
      analysis.snapshots.push_back({record.name, PrintGraph(g)});
    };
  }
  KILN_ASSIGN_OR_RETURN(analysis.passes, DefaultPipeline().Run(*graph, options.debug, observer));
  FusionOptions fusion;
  fusion.fuel = options.debug.fusion_fuel;
  KILN_ASSIGN_OR_RETURN(analysis.plan, PlanFusion(*graph, device, fusion));
  if (options.debug.Dumps(DumpKind::kLedger)) {
    WriteDump(options.debug, graph->name() + ".ledger.jsonl", LedgerJsonLines(analysis.plan));
  }
  analysis.graph = std::move(graph);
  return analysis;
}

absl::StatusOr<Compiled> Compile(std::unique_ptr<Graph> graph, const CompileOptions& options) {
  Compiled compiled;
  KILN_ASSIGN_OR_RETURN(compiled.analysis, Analyze(std::move(graph), options.analyze));
  LowerOptions lower;
  lower.arch = options.arch;
  if (lower.arch.empty()) {
    if (HaveGpu()) {
      KILN_RETURN_IF_ERROR(EnsureContext().status());
      KILN_ASSIGN_OR_RETURN(lower.arch, CurrentDeviceArch());
    } else {
      lower.arch = "sm_90a";
    }
  }
  KILN_ASSIGN_OR_RETURN(lower.device, NamedDeviceSpec(options.analyze.device));
  if (options.tune) {
    KILN_RETURN_IF_ERROR(EnsureContext().status());
    KILN_ASSIGN_OR_RETURN(std::string gpu_arch, CurrentDeviceArch());
    if (gpu_arch != lower.arch) {
      return absl::FailedPreconditionError(absl::StrCat("cannot tune for ", lower.arch, " on this GPU (", gpu_arch,
                                                        "): tuning times the kernels on the GPU they are built for"));
    }
    TuneOptions tune;
    tune.arch = lower.arch;
    tune.device = lower.device;
    tune.cache = options.cache;
    tune.compile_threads = options.compile_threads;
    tune.reps = options.tune_reps;
    tune.reuse = !options.tune_afresh;
    KILN_ASSIGN_OR_RETURN(compiled.tuning, TunePlan(*compiled.analysis.graph, compiled.analysis.plan, tune));
    lower.params = compiled.tuning.params;
  }
  lower.cache = options.cache;
  lower.compile_threads = options.compile_threads;
  lower.share_arena = options.share_arena;
  lower.debug = options.analyze.debug;
  lower.source_text = compiled.analysis.imported_text;
  KILN_ASSIGN_OR_RETURN(compiled.lowered, LowerPlan(*compiled.analysis.graph, compiled.analysis.plan, lower));
  return compiled;
}

}  // namespace kiln
