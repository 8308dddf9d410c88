#include "api/compiler.h"

#include <filesystem>
#include <fstream>
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/lowering_ledger.h"
#include "codegen/emit_kernel.h"
#include "codegen/kernel_params.h"
#include "frontends/json/json_graph.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/base/status.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#include "runtime/file_util.h"

namespace kiln {
absl::StatusOr<std::unique_ptr<Graph>> LoadGraph(const std::string& path, const LoadOptions& options) {
  const bool json = absl::EndsWith(path, ".json"), text = absl::EndsWith(path, ".kir");
  if ((json || text) && !options.shapes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": --shape binds ONNX symbolic dimensions; a kiln ",
                                                   json ? "JSON" : "IR text", " graph's shapes are static"));
  }
  if (json) return ImportJsonGraphFile(path);
  if (text) {  // the IR text form (ir/printer.h): what kiln_graph_diff saves
    KILN_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
    absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraph(bytes);
    if (!graph.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", graph.status().message()));
    return graph;
  }
  if (absl::EndsWith(path, ".onnx")) {
    OnnxImportOptions onnx;
    onnx.input_shapes = options.shapes;
    return ImportOnnxFile(path, onnx);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": unknown graph format; expected a .json (kiln), .onnx or .kir (kiln IR text) file"));
}

DeviceSpec DeviceSpecFromInfo(const DeviceInfo& info) {
  const DeviceSpec h100 = H100Spec();
  DeviceSpec s;
  s.name = absl::StrCat(info.name, " (sm_", info.compute_capability(), ")");
  s.sm_count = info.sm_count;                                   // queried
  // Queried clock x bus, times 0.9: the copy efficiency measured on the lent H100 (3.0 of
  // 3.35 TB/s) and H200 (4.3 of 4.8 TB/s), see passes/cost/device_spec.cc.
  s.dram_bytes_per_us = 0.9 * info.theoretical_bandwidth_gbps() * 1e3;
  s.l2_bytes = info.l2_cache_bytes;                             // queried
  s.smem_per_block_bytes = info.shared_memory_per_block_optin_bytes;  // queried
  s.registers_per_sm = info.registers_per_sm;                   // queried
  s.launch_us = h100.launch_us;                                 // not queryable: the same estimate
  s.grid_sync_us = h100.grid_sync_us;                           // not queryable: the same estimate
  s.cluster_sync_us = h100.cluster_sync_us;                     // not queryable: the same estimate
  s.split_latency_us = h100.split_latency_us;                   // not queryable: the h100 fit
  s.lone_block_phase_us = h100.lone_block_phase_us;             // not queryable: the h100 fit
  s.smem_per_sm_bytes = s.smem_per_block_bytes + 1024;          // the block allowance and its 1 KB
  // What one SM draws alone: the h100 estimate scaled by this GPU's bandwidth per SM.
  s.sm_bytes_per_us = h100.sm_bytes_per_us * (s.dram_bytes_per_us / std::max(info.sm_count, 1)) /
                      (h100.dram_bytes_per_us / h100.sm_count);
  // runtime/device_info does not read the SM clock: the h100 per-SM rates (GH100 at its boost
  // clock) times the SM count; for another architecture they are a guess.
  const double per_sm = h100.sm_count > 0 ? static_cast<double>(info.sm_count) / h100.sm_count : 1.0;
  s.l2_bytes_per_us = h100.l2_bytes_per_us * per_sm;  // the h100 estimate, by SM count
  s.f32_flops_per_us = h100.f32_flops_per_us * per_sm;
  s.sfu_ops_per_us = h100.sfu_ops_per_us * per_sm;
  s.index_ops_per_us = h100.index_ops_per_us * per_sm;
  s.matmul_bf16_flops_per_us = h100.matmul_bf16_flops_per_us * per_sm;
  s.matmul_f32_flops_per_us = h100.matmul_f32_flops_per_us * per_sm;
  s.attention_flops_per_us = h100.attention_flops_per_us * per_sm;
  s.wgmma = info.compute_capability() == 90;  // sm_90a's wgmma (not on sm_100 and later)
  s.clusters = info.compute_capability() >= 90;
  s.attention_wgmma_flops_per_us = s.wgmma ? h100.attention_wgmma_flops_per_us * per_sm : 0;
  s.attention_tma_flops_per_us = s.wgmma ? h100.attention_tma_flops_per_us * per_sm : 0;
  s.provenance = absl::StrCat(
      "auto: device ", info.ordinal, " ", info.name, "; queried SMs, L2, shared memory, registers; DRAM ",
      "bandwidth 0.9 x the memory clock x bus width; launch overhead and per-SM compute rates from the h100 spec",
      info.compute_capability() == 90 ? "" : " (a guess for this architecture)", " scaled by the SM count");
  return s;
}

absl::StatusOr<DeviceSpec> ResolveDeviceSpec(const std::string& name) {
  if (name != "auto") {
    absl::StatusOr<DeviceSpec> named = NamedDeviceSpec(name);
    if (!named.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(named.status().message(), ", or auto (the GPU's)"));
    }
    return named;
  }
  if (DeviceCount() == 0) {
    DeviceSpec s = H100Spec();
    s.name = "h100 (auto: no GPU)";
    s.provenance = absl::StrCat("auto without a GPU: ", s.provenance);
    return s;
  }
  KILN_ASSIGN_OR_RETURN(DeviceInfo info, QueryDevice(0));
  return DeviceSpecFromInfo(info);
}

absl::Status SaveGraphAsJson(const Graph& graph, const std::string& path) {
  const std::filesystem::path out = path;
  if (out.stem().empty() || out.extension() == ".bin") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": name a file not ending in .bin (the weights go to its side file STEM.bin)"));
  }
  JsonExportOptions options;
  options.data_dir = out.has_parent_path() ? out.parent_path().string() : ".";
  options.data_prefix = out.stem().string();
  KILN_ASSIGN_OR_RETURN(std::string text, ExportJsonGraph(graph, options));
  std::ofstream file(out, std::ios::binary);
  if (!(file << text) || !file.flush()) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::vector<std::string> PipelinePassNames() {
  std::vector<std::string> names;
  const PassPipeline pipeline = DefaultPipeline();  // a named object: passes() refers into it
  for (const auto& pass : pipeline.passes()) names.push_back(pass->name());
  return names;
}

absl::StatusOr<Analysis> Analyze(std::unique_ptr<Graph> graph, const AnalyzeOptions& options) {
  KILN_ASSIGN_OR_RETURN(DeviceSpec device, ResolveDeviceSpec(options.device));
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
  fusion.forced_rules = options.debug.forced_rules;
  KILN_ASSIGN_OR_RETURN(analysis.plan, PlanFusion(*graph, device, fusion));
  for (const PassRecord& p : analysis.passes) {
    for (const PassDecision& d : p.decisions) analysis.plan.pass_decisions.push_back({p.name, d});
  }
  if (options.debug.Dumps(DumpKind::kLedger)) {
    WriteDump(options.debug, graph->name() + ".ledger.jsonl", LedgerJsonLines(analysis.plan));
  }
  analysis.graph = std::move(graph);
  return analysis;
}

absl::StatusOr<std::vector<Tensor>> CompileAndRunOnHost(const Graph& graph,
                                                        const std::map<std::string, Tensor>& inputs) {
  KILN_RETURN_IF_ERROR(EnsureContext().status());
  CompileOptions options;
  KILN_ASSIGN_OR_RETURN(options.arch, CurrentDeviceArch());
  KILN_ASSIGN_OR_RETURN(Compiled compiled, Compile(graph.Clone(), options));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, Executable::Load(std::move(compiled.lowered.program)));
  std::vector<Tensor> in;
  for (const Node* n : graph.inputs()) {
    auto it = inputs.find(n->name());
    if (it == inputs.end()) return absl::InvalidArgumentError(absl::StrCat("no value for input ", n->name()));
    in.push_back(it->second);
  }
  return exe->RunOnHost(in);
}

std::vector<RegionSource> KernelSources(const Analysis& analysis) {
  std::vector<RegionSource> out;
  for (const Region& r : analysis.plan.regions) {
    if (!HasKernel(r.kind)) continue;
    RegionSource rs;
    rs.region = r.id;
    absl::StatusOr<KernelSource> ks = EmitKernel(r, DefaultParams(r, analysis.plan.device));
    if (ks.ok()) {
      rs.kernel = ks->name;
      rs.params = ks->params.ToString();
      rs.source = ks->source;
    } else {
      rs.error = std::string(ks.status().message());
    }
    out.push_back(std::move(rs));
  }
  return out;
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
  lower.device = compiled.analysis.plan.device;  // the spec the plan was priced on
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
  Program& program = compiled.lowered.program;
  program.lowering_ledger = LoweringJsonLines(compiled.lowered, compiled.tuning, /*with_origin=*/false);
  if (options.analyze.debug.Dumps(DumpKind::kLedger)) {
    WriteDump(options.analyze.debug, program.graph_name + ".lowering.jsonl",
              LoweringJsonLines(compiled.lowered, compiled.tuning, /*with_origin=*/true));
  }
  return compiled;
}

}  // namespace kiln
