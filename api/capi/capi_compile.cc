// The C ABI's compile side (api/kiln.h): options, kiln_compile, artifacts, the executable's
// accessors and ledgers, and the fusion report (kiln_graph_dump). The same calls as the `kiln`
// CLI's compile and dump commands (tools/gpu_commands.cc, tools/dump_command.cc).
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/capi/capi_internal.h"
#include "api/compiler.h"
#include "api/fusion_report.h"
#include "ir/parser.h"
#include "ir/verifier.h"
#include "passes/fusion/ledger.h"
#include "runtime/artifact.h"
#include "runtime/cuda_driver.h"

namespace kiln::capi {
namespace {

// One KernelCache per directory for the process, so repeated compiles hit its memory layer.
KernelCache* CacheFor(const std::string& directory) {
  static std::mutex mutex;
  static auto* caches = new std::map<std::string, std::unique_ptr<KernelCache>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& cache = (*caches)[directory];
  if (!cache) cache = std::make_unique<KernelCache>(directory);
  return cache.get();
}

// An executable handle around `program`, its source graph parsed for the queries.
int NewExecutable(Program program, int ordinal, kiln_executable** out) {
  absl::StatusOr<std::unique_ptr<Graph>> source = ParseGraph(program.source_graph);
  if (!source.ok()) {
    return Fail(KILN_ERROR_INTERNAL, absl::StrCat("the executable's source graph does not parse: ",
                                                  source.status().message()));
  }
  auto handle = std::make_unique<kiln_executable>();
  handle->program = std::move(program);
  handle->source.graph = std::move(*source);
  handle->source.borrowed = true;
  handle->device_ordinal = ordinal;
  *out = handle.release();
  return KILN_OK;
}

int CompileGraph(const kiln_graph& graph, const kiln_options& opt, kiln_executable** out) {
  if (absl::Status s = Verify(*graph.graph); !s.ok()) {
    return Fail(ToCode(s), absl::StrCat("kiln_compile: ", graph.graph->name(), ": ", s.message()));
  }
  CompileOptions options;
  absl::StatusOr<DebugOptions> debug = DebugOptionsFromEnv();
  if (!debug.ok()) return FromStatus(debug.status());
  options.analyze.debug = *debug;
  options.analyze.device = opt.cost_device;
  // As `kiln compile`: the target is this GPU's unless given, sm_90a without a GPU.
  std::string gpu_arch;
  if (HaveGpu()) {
    if (int c = FromStatus(UsePrimaryContext(opt.device_ordinal))) return c;
    absl::StatusOr<std::string> arch = CurrentDeviceArch();
    if (!arch.ok()) return FromStatus(arch.status());
    gpu_arch = *arch;
  }
  options.arch = !opt.arch.empty() ? opt.arch : !gpu_arch.empty() ? gpu_arch : "sm_90a";
  if (opt.tune && gpu_arch.empty()) {
    return Fail(KILN_ERROR_NO_DEVICE, "kiln_compile: tuning times kernels on the GPU, and there is none");
  }
  if (opt.tune && options.arch != gpu_arch) {
    return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat("kiln_compile: tuning needs a GPU of the target arch ",
                                                          options.arch, "; this GPU is ", gpu_arch));
  }
  options.tune = opt.tune;
  if (opt.has_cache_dir) options.cache = CacheFor(opt.cache_dir);
  absl::StatusOr<Compiled> compiled = Compile(graph.graph->Clone(), options);
  if (!compiled.ok()) return FromStatus(compiled.status());
  if (int c = NewExecutable(std::move(compiled->lowered.program), opt.device_ordinal, out)) return c;
  (*out)->cuda_graph = opt.cuda_graph;
  return KILN_OK;
}

// The fusion report in `format` (kiln dump's --format).
int Dump(const kiln_graph& graph, const std::string& format, const std::string& device, char** out) {
  if (format != "text" && format != "json" && format != "jsonl" && format != "dot") {
    return Fail(KILN_ERROR_INVALID_ARGUMENT,
                absl::StrCat("kiln_graph_dump: unknown format \"", format, "\"; expected text, json, jsonl or dot"));
  }
  if (absl::Status s = Verify(*graph.graph); !s.ok()) {
    return Fail(ToCode(s), absl::StrCat("kiln_graph_dump: ", graph.graph->name(), ": ", s.message()));
  }
  AnalyzeOptions options;
  absl::StatusOr<DebugOptions> debug = DebugOptionsFromEnv();
  if (!debug.ok()) return FromStatus(debug.status());
  options.debug = *debug;
  options.device = device;
  absl::StatusOr<Analysis> analysis = Analyze(graph.graph->Clone(), options);
  if (!analysis.ok()) return FromStatus(analysis.status());
  std::string text = format == "json"    ? FusionPlanJson(analysis->plan) + "\n"
                     : format == "jsonl" ? LedgerJsonLines(analysis->plan)
                     : format == "dot"   ? FusionDot(*analysis)
                                         : FusionReport(*analysis);
  *out = CopyString(text);
  return KILN_OK;
}

}  // namespace
}  // namespace kiln::capi

using namespace kiln::capi;  // NOLINT: this file implements the C functions of api/kiln.h

extern "C" {

int kiln_options_create(kiln_options** out) {
  return Guard(__func__, [&] {
    if (out == nullptr) return NullArgument(__func__, "out");
    *out = new kiln_options();
    return KILN_OK;
  });
}

void kiln_options_free(kiln_options* options) { delete options; }

int kiln_options_set_arch(kiln_options* options, const char* arch) {
  return Guard(__func__, [&] {
    if (options == nullptr) return NullArgument(__func__, "options");
    options->arch = arch != nullptr ? arch : "";
    return KILN_OK;
  });
}

int kiln_options_set_cost_device(kiln_options* options, const char* cost_device) {
  return Guard(__func__, [&] {
    if (options == nullptr) return NullArgument(__func__, "options");
    std::string device = cost_device != nullptr && *cost_device != '\0' ? cost_device : "auto";
    if (device != "auto") {  // "auto" is resolved when compiling (it may query the GPU)
      absl::StatusOr<kiln::DeviceSpec> spec = kiln::ResolveDeviceSpec(device);
      if (!spec.ok()) return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(__func__, ": ", spec.status().message()));
    }
    options->cost_device = device;
    return KILN_OK;
  });
}

int kiln_options_set_tune(kiln_options* options, int tune) {
  return Guard(__func__, [&] {
    if (options == nullptr) return NullArgument(__func__, "options");
    options->tune = tune != 0;
    return KILN_OK;
  });
}

int kiln_options_set_cache_dir(kiln_options* options, const char* cache_dir) {
  return Guard(__func__, [&] {
    if (options == nullptr) return NullArgument(__func__, "options");
    options->has_cache_dir = cache_dir != nullptr;
    options->cache_dir = cache_dir != nullptr ? cache_dir : "";
    return KILN_OK;
  });
}

int kiln_options_set_device_ordinal(kiln_options* options, int ordinal) {
  return Guard(__func__, [&] {
    if (options == nullptr) return NullArgument(__func__, "options");
    if (ordinal < 0) return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(__func__, ": negative ordinal ", ordinal));
    options->device_ordinal = ordinal;
    return KILN_OK;
  });
}

int kiln_options_set_cuda_graph(kiln_options* options, int cuda_graph) {
  return Guard(__func__, [&] {
    if (options == nullptr) return NullArgument(__func__, "options");
    options->cuda_graph = cuda_graph != 0;
    return KILN_OK;
  });
}

int kiln_compile(const kiln_graph* graph, const kiln_options* options, kiln_executable** out) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (out == nullptr) return NullArgument(__func__, "out");
    kiln_options defaults;
    return CompileGraph(*graph, options != nullptr ? *options : defaults, out);
  });
}

int kiln_artifact_save(const kiln_executable* executable, const char* path) {
  return Guard(__func__, [&] {
    if (executable == nullptr) return NullArgument(__func__, "executable");
    if (path == nullptr) return NullArgument(__func__, "path");
    return FromStatus(kiln::SaveArtifact(executable->program, path));
  });
}

int kiln_artifact_load(const char* path, const kiln_options* options, kiln_executable** out) {
  return Guard(__func__, [&] {
    if (path == nullptr) return NullArgument(__func__, "path");
    if (out == nullptr) return NullArgument(__func__, "out");
    absl::StatusOr<kiln::Program> program = kiln::LoadArtifact(path);
    if (!program.ok()) return FromStatus(program.status());
    if (int c = NewExecutable(std::move(*program), options != nullptr ? options->device_ordinal : 0, out)) return c;
    (*out)->cuda_graph = options != nullptr && options->cuda_graph;
    return KILN_OK;
  });
}

void kiln_executable_free(kiln_executable* executable) {
  try {
    delete executable;
  } catch (...) {
  }
}

int kiln_executable_graph(const kiln_executable* executable, const kiln_graph** graph) {
  return Guard(__func__, [&] {
    if (executable == nullptr) return NullArgument(__func__, "executable");
    if (graph == nullptr) return NullArgument(__func__, "graph");
    *graph = &executable->source;
    return KILN_OK;
  });
}

int kiln_executable_arch(const kiln_executable* executable, const char** arch) {
  return Guard(__func__, [&] {
    if (executable == nullptr) return NullArgument(__func__, "executable");
    if (arch == nullptr) return NullArgument(__func__, "arch");
    *arch = executable->program.arch.c_str();
    return KILN_OK;
  });
}

int kiln_executable_ledger(const kiln_executable* executable, char** out) {
  return Guard(__func__, [&] {
    if (executable == nullptr) return NullArgument(__func__, "executable");
    if (out == nullptr) return NullArgument(__func__, "out");
    const kiln::Program& p = executable->program;
    std::string text = absl::StrCat("{\"fusion\": ", p.ledger_json.empty() ? "null" : p.ledger_json, ",\n\"lowered\": [");
    bool first = true;
    for (absl::string_view line : absl::StrSplit(p.lowering_ledger, '\n', absl::SkipWhitespace())) {
      absl::StrAppend(&text, first ? "\n" : ",\n", line);
      first = false;
    }
    absl::StrAppend(&text, "]}\n");
    *out = CopyString(text);
    return KILN_OK;
  });
}

int kiln_graph_dump(const kiln_graph* graph, const char* format, const char* cost_device, char** out) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    if (out == nullptr) return NullArgument(__func__, "out");
    return Dump(*graph, format != nullptr && *format != '\0' ? format : "text",
                cost_device != nullptr && *cost_device != '\0' ? cost_device : "auto", out);
  });
}

}  // extern "C"
