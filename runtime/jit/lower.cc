#include "runtime/jit/lower.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/emit_kernel.h"
#include "codegen/kernel_params.h"
#include "ir/base/hash.h"
#include "ir/base/status.h"
#include "passes/cost/row_fit.h"
#include "passes/fusion/ledger.h"
#include "passes/fusion/matmul_epilogue.h"
#include "passes/fusion/reduce_placement.h"
#include "passes/fusion/region_kind.h"
#include "runtime/buffer_plan.h"

namespace kiln {
namespace {

int64_t Align(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

class Lowerer {
 public:
  Lowerer(const LowerOptions& options, LowerResult& result)
      : options_(options), result_(result), program_(result.program) {}

  absl::Status LowerTop(const Graph& graph, const FusionPlan& plan) {
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      const Node* in = graph.inputs()[i];
      Buffer b = Describe(in, in->name());
      b.kind = BufferKind::kInput;
      b.index = static_cast<int>(i);
      program_.inputs.push_back(Add(b));
      buffers_[in] = program_.inputs.back();
    }
    for (const Region& region : plan.regions) {
      LoweredRegion report;
      report.region = region.id;
      report.kind = region.kind;
      size_t first_step = program_.steps.size();
      KILN_RETURN_IF_ERROR(LowerRegion(region, report));
      for (size_t s = first_step; s < program_.steps.size(); ++s) report.steps.push_back(static_cast<int>(s));
      if (report.steps.size() > 0 && region.id < static_cast<int>(plan.estimates.size())) {
        program_.steps[first_step].predicted_us = plan.estimates[region.id].total_us;
      }
      result_.regions.push_back(std::move(report));
    }
    KILN_RETURN_IF_ERROR(Compile());
    BindOutputs(graph);
    PlanArena(program_, options_.share_arena);
    return program_.Validate();
  }

 private:
  Buffer Describe(const Node* n, const std::string& name) {
    Buffer b;
    b.name = name;
    b.dtype = n->dtype();
    b.shape = n->shape();
    b.bytes = n->num_elements() * ByteSize(n->dtype());
    return b;
  }
  int Add(const Buffer& b) {
    program_.buffers.push_back(b);
    return static_cast<int>(program_.buffers.size()) - 1;
  }

  // The buffer holding `n`'s value, made on first use: constants go to the constant block,
  // everything else to the arena (outputs are bound at the end).
  int BufferOf(const Node* n) {
    auto it = buffers_.find(n);
    if (it != buffers_.end()) return it->second;
    Buffer b = Describe(n, n->name());
    if (n->op() == OpKind::kConstant) {
      b.kind = BufferKind::kConstant;
      b.offset = Align(static_cast<int64_t>(program_.constants.size()), kArenaAlignment);
      program_.constants.resize(b.offset);
      program_.constants.append(reinterpret_cast<const char*>(n->value()->data()), n->value()->num_bytes());
    } else {
      KILN_CHECK(n->op() != OpKind::kInput) << "input " << n->name() << " has no buffer";
      b.kind = BufferKind::kArena;
    }
    return buffers_[n] = Add(b);
  }

  Step NewStep(Step::Kind kind, int region, const std::string& label) {
    Step s;
    s.kind = kind;
    s.region = region;
    s.label = label;
    return s;
  }

  std::string Label(const Region& r) {
    return absl::StrCat("region ", r.id, " ", RegionKindName(r.kind), ": ", r.NodeList(4));
  }

  // By how the region's kind runs (passes/fusion/region_kind.h).
  absl::Status LowerRegion(const Region& r, LoweredRegion& report) {
    switch (KindInfo(r.kind).lowering) {
      case Lowering::kAlias: return LowerView(r);
      case Lowering::kLibrary: return LowerMatmul(r);
      case Lowering::kKernel: return LowerKernel(r, report);
    }
    return absl::InternalError("unknown lowering");
  }

  absl::Status LowerKernel(const Region& r, LoweredRegion& report) {
    auto tuned = options_.params.find(r.id);
    const KernelParams params = tuned != options_.params.end() ? tuned->second : DefaultParams(r, options_.device);
    absl::StatusOr<KernelSource> source = EmitKernel(r, params);
    if (!source.ok()) {
      return absl::Status(source.status().code(),
                          absl::StrCat("region ", r.id, " (", r.NodeList(4), "): ", source.status().message()));
    }
    auto [it, inserted] = module_of_.try_emplace(source->name, static_cast<int>(program_.modules.size()));
    if (inserted) {
      if (options_.debug.Dumps(DumpKind::kCuda)) WriteDump(options_.debug, source->name + ".cu", source->source);
      Module m;
      m.name = source->name;
      m.params = source->params.ToString();
      program_.modules.push_back(m);
      kernels_.push_back({source->name, source->source});
    }
    Step step = NewStep(Step::Kind::kKernel, r.id, Label(r));
    KernelStep& k = step.kernel;
    k.name = source->name;
    k.module = it->second;
    std::map<std::string, const Node*> by_name;
    for (const Node* n : r.inputs) by_name[n->name()] = n;
    for (const Node* n : r.outputs) by_name[n->name()] = n;
    for (const KernelArg& arg : source->args) {
      auto found = by_name.find(arg.tensor);
      KILN_CHECK(found != by_name.end()) << "kernel " << source->name << " argument " << arg.tensor
                                         << " is not a region input or output";
      k.args.push_back(BufferOf(found->second));
      step.bytes += program_.buffers[k.args.back()].bytes;
    }
    if (source->has_scratch) {
      Buffer b;
      b.name = absl::StrCat(source->name, ".scratch");
      b.dtype = DType::kI32;
      b.bytes = source->ScratchBytes(source->count);
      b.shape = {b.bytes / 4};
      b.kind = BufferKind::kPersistent;
      b.offset = program_.persistent_bytes;
      program_.persistent_bytes = Align(b.offset + b.bytes, kArenaAlignment);
      k.scratch = Add(b);
    }
    k.count = source->count;
    k.in_place = source->in_place;
    k.launch = LaunchShapeOf(*source, source->count);
    for (const std::string& note : source->notes) report.notes.push_back(absl::StrCat(source->name, ": ", note));
    report.kernels.push_back(source->name);
    program_.steps.push_back(std::move(step));
    return absl::OkStatus();
  }

  // Reshapes: each output is an alias of the tensor the chain starts from.
  absl::Status LowerView(const Region& r) {
    for (const Node* out : r.outputs) {
      const Node* src = out;
      while (r.Contains(src)) src = src->operand(0);
      const int from = BufferOf(src);
      if (auto bound = buffers_.find(out); bound != buffers_.end()) {
        Step step = NewStep(Step::Kind::kCopy, r.id, absl::StrCat("view ", out->name(), " (copy)"));
        step.copy = {from, bound->second};
        step.bytes = 2 * program_.buffers[from].bytes;
        step.predicted_us = CopyUs(step.bytes);
        program_.steps.push_back(step);
        continue;
      }
      Buffer b = Describe(out, out->name());
      b.kind = BufferKind::kAlias;
      b.alias_of = from;
      buffers_[out] = Add(b);
    }
    return absl::OkStatus();
  }

  // One cuBLASLt call, as the region's analysis (passes/fusion/matmul_epilogue.h) describes it.
  absl::Status LowerMatmul(const Region& r) {
    KILN_CHECK(r.matmul != nullptr) << "matmul region " << r.id << " has no analysis";
    const MatmulEpilogue& e = *r.matmul;
    const Node* mm = e.matmul;
    MatmulStep m;
    MatmulSpec& spec = m.spec;
    spec.dtype = mm->dtype();
    if (!IsFloat(spec.dtype)) {
      return absl::UnimplementedError(absl::StrCat("matmul ", mm->name(), ": ", DTypeName(spec.dtype),
                                                   " matmuls are not supported (f32, f16, bf16 are)"));
    }
    spec.trans_a = e.trans_a;
    spec.trans_b = e.trans_b;
    const Node* a = e.a;
    const Node* b = e.b;
    const Shape& out = mm->shape();
    const size_t rank = out.size();
    if (rank < 2 || a->shape().size() < 2 || b->shape().size() < 2) {
      return absl::UnimplementedError(absl::StrCat("matmul ", mm->name(), ": operands of rank 1 are not supported"));
    }
    spec.m = out[rank - 2];
    spec.n = out[rank - 1];
    const Shape& as = a->shape();
    spec.k = spec.trans_a ? as[as.size() - 2] : as[as.size() - 1];
    if (mm->num_elements() == 0) return absl::OkStatus();  // nothing to write
    if (spec.k == 0) {
      return absl::UnimplementedError(absl::StrCat("matmul ", mm->name(), ": a product over an empty K (",
                                                   ShapeToString(a->shape()), " @ ", ShapeToString(b->shape()),
                                                   ") is not supported"));
    }
    if (e.residual != nullptr) {
      m.residual = BufferOf(e.residual);
      spec.has_residual = true;
    }
    if (e.bias != nullptr) {
      m.bias = BufferOf(e.bias);
      spec.has_bias = true;
    }
    spec.gelu = e.gelu;
    spec.relu = e.relu;
    KILN_RETURN_IF_ERROR(PlanBatches(a, b, out, m));
    m.a = BufferOf(a);
    m.b = BufferOf(b);
    m.d = BufferOf(e.output);
    Step step = NewStep(Step::Kind::kMatmul, r.id, Label(r));
    for (int id : {m.a, m.b, m.d, m.bias, m.residual}) {
      if (id >= 0) step.bytes += program_.buffers[id].bytes;
    }
    step.matmul = std::move(m);
    program_.steps.push_back(std::move(step));
    return absl::OkStatus();
  }

  // The batch: one plain matmul over [batch*M, K] when B is shared, else a strided batch, else
  // one call per batch (stride 0 where an operand is broadcast).
  absl::Status PlanBatches(const Node* a, const Node* b, const Shape& out, MatmulStep& m) {
    MatmulSpec& spec = m.spec;
    // Batch: offsets of each operand's matrix for every output batch index.
    const Shape batch(out.begin(), out.end() - 2);
    const int64_t batches = NumElements(batch);
    auto offsets = [&](const Node* x, int64_t matrix) {
      const Shape& s = x->shape();
      const size_t xb = s.size() - 2;  // x's batch rank, right-aligned to `batch`
      std::vector<int64_t> result(batches, 0);
      for (int64_t i = 0; i < batches; ++i) {
        int64_t rest = i, offset = 0, stride = matrix;
        for (size_t d = batch.size(); d-- > 0;) {
          int64_t idx = rest % batch[d];
          rest /= batch[d];
          size_t back = batch.size() - d;  // 1 = last batch dim
          if (back <= xb) {
            int64_t extent = s[xb - back];
            if (extent != 1) offset += idx * stride;
            stride *= extent;
          }
        }
        result[i] = offset;
      }
      return result;
    };
    std::vector<int64_t> ao = offsets(a, spec.m * spec.k), bo = offsets(b, spec.k * spec.n);
    auto linear = [&](const std::vector<int64_t>& o, int64_t* stride) {
      *stride = batches > 1 ? o[1] : 0;
      for (int64_t i = 0; i < batches; ++i) {
        if (o[i] != i * *stride) return false;
      }
      return true;
    };
    int64_t sa = 0, sb = 0;
    bool b_broadcast = std::all_of(bo.begin(), bo.end(), [](int64_t x) { return x == 0; });
    if (batches > 1 && b_broadcast && !spec.trans_a && linear(ao, &sa) && sa == spec.m * spec.k) {
      spec.m *= batches;  // [batch*M, K] @ [K, N]: one plain matmul
    } else if (linear(ao, &sa) && linear(bo, &sb)) {
      spec.batch = batches;
      spec.stride_a = sa;
      spec.stride_b = sb;
      spec.stride_d = spec.m * spec.n;
    } else {
      // One call per batch; a call starting inside a buffer may lose 16-byte alignment.
      m.calls.clear();
      int64_t common = 16;
      for (int64_t i = 0; i < batches; ++i) {
        m.calls.push_back({ao[i], bo[i], i * spec.m * spec.n});
        for (int64_t offset : {ao[i], bo[i], i * spec.m * spec.n}) {
          while (offset * ByteSize(spec.dtype) % common != 0) common /= 2;
        }
      }
      spec.alignment = static_cast<int>(common);
    }
    return absl::OkStatus();
  }

  absl::Status Compile() {
    if (kernels_.empty()) return absl::OkStatus();
    KernelCache& cache = options_.cache ? *options_.cache : KernelCache::Default();
    result_.cache_before = cache.stats();
    auto start = std::chrono::steady_clock::now();
    KILN_ASSIGN_OR_RETURN(std::vector<CachedKernel> compiled,
                          cache.GetOrCompileAll(kernels_, options_.arch, options_.compile_threads));
    result_.compile_wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    result_.cache_after = cache.stats();
    std::map<std::string, std::string> origin;
    for (size_t i = 0; i < compiled.size(); ++i) {
      Module& m = program_.modules[i];
      const CompiledCuda& c = compiled[i].compiled;
      m.cubin.assign(c.cubin.begin(), c.cubin.end());
      m.registers = c.registers;
      m.spill_bytes = c.spill_store_bytes + c.spill_load_bytes;
      m.compile_ms = c.compile_ms;
      origin[m.name] = compiled[i].origin;
      if (options_.debug.Dumps(DumpKind::kPtx) && !c.ptx.empty()) WriteDump(options_.debug, m.name + ".ptx", c.ptx);
    }
    for (LoweredRegion& r : result_.regions) {
      for (const std::string& k : r.kernels) r.origins.push_back(origin[k]);
    }
    return absl::OkStatus();
  }

  // Graph outputs: the producer writes the caller's buffer directly where it can.
  void BindOutputs(const Graph& graph) {
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      const Graph::Output& o = graph.outputs()[i];
      int id = buffers_.count(o.node) ? buffers_[o.node] : BufferOf(o.node);
      int root = ResolveAlias(program_.buffers, id);
      if (program_.buffers[root].kind == BufferKind::kArena) {
        if (id != root) {
          program_.buffers[root].kind = BufferKind::kAlias;
          program_.buffers[root].alias_of = id;
        }
        program_.buffers[id].kind = BufferKind::kOutput;
        program_.buffers[id].alias_of = -1;
        program_.buffers[id].index = static_cast<int>(i);
        program_.buffers[id].name = o.name;
        program_.outputs.push_back(id);
      } else {
        Buffer b = Describe(o.node, o.name);
        b.kind = BufferKind::kOutput;
        b.index = static_cast<int>(i);
        int dst = Add(b);
        Step step = NewStep(Step::Kind::kCopy, -1, absl::StrCat("output ", o.name, " (copy)"));
        step.copy = {id, dst};
        step.bytes = 2 * b.bytes;
        step.predicted_us = CopyUs(step.bytes);
        program_.steps.push_back(step);
        program_.outputs.push_back(dst);
      }
      program_.output_names.push_back(o.name);
    }
  }

  // A device-to-device copy (cuMemcpyDtoDAsync) moving `bytes` (read + write): one launch
  // plus the bytes at the copy bandwidth the device spec was measured at.
  double CopyUs(int64_t bytes) const {
    const DeviceSpec& d = options_.device;
    return d.dram_bytes_per_us > 0 ? d.launch_us + static_cast<double>(bytes) / d.dram_bytes_per_us : 0;
  }

  const LowerOptions& options_;
  LowerResult& result_;
  Program& program_;
  std::map<const Node*, int> buffers_;
  std::map<std::string, int> module_of_;
  std::vector<KernelToCompile> kernels_;
};

absl::StatusOr<LowerResult> LowerOnce(const Graph& graph, const FusionPlan& plan, const LowerOptions& options) {
  LowerResult result;
  Program& p = result.program;
  p.graph_name = graph.name();
  p.arch = options.arch;
  p.device = options.device.name;
  p.graph_hash = Hex64(Fnv1a64(options.source_text));
  p.ledger_json = FusionPlanJson(plan);
  p.source_graph = options.source_text;
  Lowerer lowerer(options, result);
  KILN_RETURN_IF_ERROR(lowerer.LowerTop(graph, plan));
  return result;
}

// A reduction kernel whose registers (ptxas's count) let fewer blocks reside on an SM than its
// price assumed (RowFit::blocks_per_sm, from the model's estimate of them) runs below that
// price: its region gets a note that says so, and for a split whose blocks wait for each other
// (a cooperative launch, clamped to the blocks that fit) in how many rounds the split now runs.
// Written for softmax over [4, 1000000] f32: 182 registers, one 256-thread block per SM where
// the price assumed two; 264 blocks in two rounds, measured 1.5x its prediction (H100,
// bench/results/2026-11-28-session21). row_reduce.cuh's SureIters took that kernel to 120
// registers; no zoo or example kernel gets the note now.
// Regions in `tuned` run the tuner's measured choice, not the priced default: no note.
void NoteResidency(const FusionPlan& plan, const DeviceSpec& device, const std::map<int, KernelParams>& tuned,
                   LowerResult& result) {
  std::map<std::string, const Module*> modules;
  for (const Module& m : result.program.modules) modules[m.name] = &m;
  for (LoweredRegion& lowered : result.regions) {
    if (lowered.kernels.size() != 1 || device.registers_per_sm <= 0) continue;
    const Module* m = modules.at(lowered.kernels[0]);
    for (const Region& r : plan.regions) {
      if (r.id != lowered.region || !r.reduce || m->registers <= 0 || tuned.count(r.id)) continue;
      const RowFit& fit = r.reduce->fit;
      if (fit.blocks_per_sm <= 0) continue;
      const int64_t threads = DefaultParams(r, device).block_size;
      // As the model counts residency, with ptxas's registers.
      const int64_t fits = BlocksPerSm(device, threads, m->registers, fit.shared ? fit.smem_bytes : 0,
                                       (fit.shared ? 2048 : 1024) / threads);
      if (fits >= fit.blocks_per_sm) continue;
      std::string note = absl::StrCat(lowered.kernels[0], ": ptxas gave ", m->registers, " registers a thread, so ",
                                      fits, fits == 1 ? " block" : " blocks", " of ", threads, " threads ",
                                      fits == 1 ? "fits" : "fit", " an SM where the price assumed ", fit.blocks_per_sm);
      if (r.kind == RegionKind::kRowReduction && fit.split > 1 && fit.split_waits && !fit.cluster && fits > 0 &&
          device.sm_count > 0) {
        const int64_t blocks = r.reduce->space.outer * fit.split;  // a row's blocks, every row
        const int64_t resident = fits * device.sm_count;
        absl::StrAppend(&note, "; the split's ", blocks, " waiting blocks run in ", (blocks + resident - 1) / resident,
                        " rounds of ", resident);
      }
      lowered.notes.push_back(note);
    }
  }
}

}  // namespace

// A default whose __launch_bounds__ minimum (KernelParams::min_blocks, the cost model's blocks
// per SM) leaves ptxas too few registers spills to local memory, and then runs far below its
// price (an LM head's cross-entropy backward, 512 threads x 3 blocks: 40 registers, 560 bytes
// of spill, 312 us against 131 streamed, H200). Such regions are lowered again with the same
// tiles and no minimum; a tuned choice is kept as measured.
absl::StatusOr<LowerResult> LowerPlan(const Graph& graph, const FusionPlan& plan, const LowerOptions& options) {
  KILN_ASSIGN_OR_RETURN(LowerResult result, LowerOnce(graph, plan, options));
  std::map<std::string, const Module*> modules;
  for (const Module& m : result.program.modules) modules[m.name] = &m;
  LowerOptions again = options;
  std::map<int, std::string> why;
  for (const LoweredRegion& lowered : result.regions) {
    if (options.params.count(lowered.region)) continue;
    for (const std::string& kernel : lowered.kernels) {
      const Module* m = modules.at(kernel);
      if (m->spill_bytes == 0) continue;
      for (const Region& r : plan.regions) {
        if (r.id != lowered.region) continue;
        KernelParams p = DefaultParams(r, options.device);
        if (p.min_blocks == 0) continue;
        why[r.id] = absl::StrCat("the default ", p.ToString(), " spilled ", m->spill_bytes, " bytes (", m->registers,
                                 " registers): built without its blocks-per-SM minimum");
        p.min_blocks = 0;
        again.params[r.id] = p;
      }
    }
  }
  if (why.empty()) {
    NoteResidency(plan, options.device, options.params, result);
    return result;
  }
  KILN_ASSIGN_OR_RETURN(LowerResult second, LowerOnce(graph, plan, again));
  second.cache_before = result.cache_before;  // the report covers both compiles
  second.compile_wall_ms += result.compile_wall_ms;
  for (LoweredRegion& lowered : second.regions) {
    if (why.count(lowered.region)) lowered.notes.push_back(why[lowered.region]);
  }
  NoteResidency(plan, options.device, options.params, second);
  return second;
}

LaunchShape LaunchShapeOf(const KernelSource& kernel, int64_t count) {
  LaunchShape shape;
  const LaunchRule& rule = kernel.launch;
  shape.grid = rule.Grid(count);
  shape.grid_y = rule.grid_y;
  shape.grid_z = rule.grid_z;
  shape.block = rule.block;
  shape.dynamic_smem_bytes = rule.dynamic_smem_bytes;
  shape.cluster_x = rule.cluster_x;
  shape.cooperative = rule.cooperative;
  shape.grid_multiple = rule.blocks_per_item_group;
  shape.tensor_maps = rule.tensor_maps;
  return shape;
}

}  // namespace kiln
