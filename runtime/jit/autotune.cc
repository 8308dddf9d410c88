#include "runtime/jit/autotune.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codegen/emit_kernel.h"
#include "ir/base/hash.h"
#include "ir/base/status.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/subgraph.h"
#include "runtime/cuda_driver.h"
#include "runtime/file_util.h"
#include "runtime/jit/lower.h"
#include "runtime/launch.h"
#include "runtime/repetitions.h"

namespace kiln {
namespace {

// Device memory freed on scope exit.
class DeviceMemory {
 public:
  DeviceMemory(const CudaDriver* cu, int64_t bytes) : cu_(cu), bytes_(std::max<int64_t>(bytes, 16)) {}
  ~DeviceMemory() {
    if (ptr_) cu_->cuMemFree(ptr_);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  absl::Status Allocate() {
    KILN_CU_RETURN_IF_ERROR(cu_->cuMemAlloc(&ptr_, bytes_));
    return absl::OkStatus();
  }
  CUdeviceptr& ptr() { return ptr_; }
  int64_t bytes() const { return bytes_; }

 private:
  const CudaDriver* cu_;
  int64_t bytes_;
  CUdeviceptr ptr_ = 0;
};

class LoadedModule {
 public:
  explicit LoadedModule(const CudaDriver* cu) : cu_(cu) {}
  ~LoadedModule() {
    if (module_) cu_->cuModuleUnload(module_);
  }
  absl::Status Load(const std::vector<char>& cubin, const std::string& name) {
    KILN_CU_RETURN_IF_ERROR(cu_->cuModuleLoadData(&module_, cubin.data()));
    KILN_CU_RETURN_IF_ERROR(cu_->cuModuleGetFunction(&function_, module_, name.c_str()));
    return absl::OkStatus();
  }
  CUfunction function() const { return function_; }

 private:
  const CudaDriver* cu_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

// One region's candidates: their kernels (index-aligned with `params`).
struct RegionCandidates {
  const Region* region = nullptr;
  std::vector<KernelParams> params;
  std::vector<KernelSource> sources;
  std::vector<int> compiled;  // index into the batch
  std::string key;            // of the remembered choice
};

std::string TuneDirectory(const KernelCache& cache) {
  return cache.directory().empty() ? "" : cache.directory() + "/tune";
}

absl::StatusOr<std::string> DeviceName(const CudaDriver* cu) {
  CUdevice device;
  KILN_CU_RETURN_IF_ERROR(cu->cuCtxGetDevice(&device));
  char name[256] = {};
  KILN_CU_RETURN_IF_ERROR(cu->cuDeviceGetName(name, sizeof(name), device));
  return std::string(name);
}

// Times the kernels of one region on its own random inputs and picks one.
class RegionTimer {
 public:
  RegionTimer(const CudaDriver* cu, const Graph& graph, const TuneOptions& options, const Repetitions& repetitions)
      : cu_(cu), graph_(graph), options_(options), repetitions_(repetitions) {}

  absl::Status Time(const RegionCandidates& rc, const std::vector<CachedKernel>& compiled, TunedRegion* out) {
    const Region& region = *rc.region;
    const KernelSource& first = rc.sources[0];
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Graph> sub,
                          ExtractSubgraph(graph_, region.nodes, region.inputs, region.outputs));
    const std::map<std::string, Tensor> inputs = RandomInputs(*sub, /*seed=*/1);
    // Every candidate takes the same arguments (the region's inputs, then its outputs).
    std::vector<std::unique_ptr<DeviceMemory>> buffers;
    for (const KernelArg& arg : first.args) {
      const int64_t bytes = NumElements(arg.shape) * ByteSize(arg.dtype);
      buffers.push_back(std::make_unique<DeviceMemory>(cu_, bytes));
      KILN_RETURN_IF_ERROR(buffers.back()->Allocate());
      if (!arg.is_output) {
        auto in = inputs.find(arg.tensor);
        KILN_CHECK(in != inputs.end()) << "no random input for kernel argument " << arg.tensor;
        KILN_CU_RETURN_IF_ERROR(cu_->cuMemcpyHtoD(buffers.back()->ptr(), in->second.data(), bytes));
      }
    }
    int64_t scratch_bytes = 0;
    for (const KernelSource& s : rc.sources) {
      if (s.has_scratch) scratch_bytes = std::max(scratch_bytes, s.ScratchBytes(s.count));
    }
    DeviceMemory scratch(cu_, scratch_bytes);
    if (scratch_bytes > 0) {
      KILN_RETURN_IF_ERROR(scratch.Allocate());
      KILN_CU_RETURN_IF_ERROR(cu_->cuMemsetD8(scratch.ptr(), 0, scratch.bytes()));  // counters start at 0
    }

    std::vector<Tensor> reference;  // the default's outputs
    out->us.assign(rc.sources.size(), 0.0);
    for (size_t c = 0; c < rc.sources.size(); ++c) {
      const KernelSource& ks = rc.sources[c];
      LoadedModule module(cu_);
      KILN_RETURN_IF_ERROR(module.Load(compiled[rc.compiled[c]].compiled.cubin, ks.name));
      long long count = ks.count;
      const LaunchShape shape = LaunchShapeOf(ks, count);
      absl::StatusOr<int64_t> prepared = PrepareKernel(*cu_, module.function(), shape);
      if (!prepared.ok() && c > 0) {  // e.g. a split whose blocks cannot all be resident here
        out->us[c] = std::numeric_limits<double>::infinity();
        continue;
      }
      KILN_RETURN_IF_ERROR(prepared.status());
      const int64_t grid = *prepared;
      LaunchArgs args;
      for (auto& b : buffers) args.pointers.push_back(b->ptr());
      if (ks.has_scratch) args.pointers.push_back(scratch.ptr());
      args.count = count;
      KILN_RETURN_IF_ERROR(args.Bind(*cu_, shape));
      auto launch = [&]() { return LaunchKernel(*cu_, module.function(), shape, grid, args.data(), nullptr); };
      // Scratch zeroed for each candidate: the candidates lay their counters out differently.
      if (ks.has_scratch) KILN_CU_RETURN_IF_ERROR(cu_->cuMemsetD8(scratch.ptr(), 0, scratch.bytes()));
      // Correctness first: poisoned outputs, one launch, compared with the default's.
      for (size_t a = 0; a < ks.args.size(); ++a) {
        if (ks.args[a].is_output) KILN_CU_RETURN_IF_ERROR(cu_->cuMemsetD8(buffers[a]->ptr(), 0xFF, buffers[a]->bytes()));
      }
      KILN_RETURN_IF_ERROR(launch());
      KILN_CU_RETURN_IF_ERROR(cu_->cuCtxSynchronize());
      int output = 0;
      for (size_t a = 0; a < ks.args.size(); ++a) {
        const KernelArg& arg = ks.args[a];
        if (!arg.is_output) continue;
        Tensor got(arg.dtype, arg.shape);
        KILN_CU_RETURN_IF_ERROR(cu_->cuMemcpyDtoH(got.data(), buffers[a]->ptr(), got.num_bytes()));
        if (c == 0) {
          reference.push_back(std::move(got));
        } else {
          const Tensor& want = reference[output];
          Comparison cmp = Compare(got, want, OrderTolerance(KernelTolerance(arg.dtype), want));
          if (!cmp.ok()) {
            return absl::InternalError(absl::StrCat("autotune: kernel ", ks.name, " (", rc.params[c].ToString(),
                                                    ") writes ", arg.tensor, " differently from the default ",
                                                    first.name, " (", rc.params[0].ToString(), "): ", cmp.ToString()));
          }
        }
        ++output;
      }
      // Then the time: warm-up, then `reps` launches, each after the lead (with a cold L2 by
      // default) and between two events.
      KILN_ASSIGN_OR_RETURN(const double ms, repetitions_.MedianMs(options_.warmup, options_.reps, launch));
      out->us[c] = ms * 1000.0;
    }
    out->chosen = 0;
    for (size_t c = 1; c < out->us.size(); ++c) {
      if (out->us[c] < out->us[out->chosen]) out->chosen = static_cast<int>(c);
    }
    const double gain = out->us[0] > options_.long_kernel_us ? options_.long_min_gain : options_.min_gain;
    if (out->chosen != 0 && out->us[out->chosen] > out->us[0] * (1.0 - gain)) out->chosen = 0;
    return absl::OkStatus();
  }

 private:
  const CudaDriver* cu_;
  const Graph& graph_;
  const TuneOptions& options_;
  const Repetitions& repetitions_;
};

}  // namespace

std::string TunedRegion::ToString() const {
  std::string s;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (!s.empty()) absl::StrAppend(&s, " | ");
    absl::StrAppend(&s, candidates[c].ToString());
    if (c < us.size()) absl::StrAppend(&s, absl::StrFormat(" %.1f us", us[c]));
    if (c < predicted_us.size() && predicted_us[c] >= 0) absl::StrAppend(&s, absl::StrFormat(" (pred %.1f)", predicted_us[c]));
    if (c < registers.size() && registers[c] >= 0) {
      absl::StrAppend(&s, " [", registers[c], " regs",
                      c < spill_bytes.size() && spill_bytes[c] > 0 ? absl::StrCat(", ", spill_bytes[c], " B spilled") : "",
                      "]");
    }
    if (c == 0) absl::StrAppend(&s, " (default)");
    if (static_cast<int>(c) == chosen) absl::StrAppend(&s, " <-");
  }
  if (cached) absl::StrAppend(&s, " (remembered)");
  return s;
}

absl::StatusOr<TuneResult> TunePlan(const Graph& graph, const FusionPlan& plan, const TuneOptions& options) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  KILN_ASSIGN_OR_RETURN(std::string device_name, DeviceName(cu));
  KernelCache& cache = options.cache != nullptr ? *options.cache : KernelCache::Default();
  const std::string directory = TuneDirectory(cache);

  // Every candidate kernel of every region, compiled as one batch.
  std::vector<RegionCandidates> regions;
  std::vector<KernelToCompile> batch;
  for (const Region& region : plan.regions) {
    if (!HasKernel(region.kind)) continue;
    RegionCandidates rc;
    rc.region = &region;
    for (const KernelParams& p : CandidateParams(region, options.device)) {
      absl::StatusOr<KernelSource> ks = EmitKernel(region, p);
      if (!ks.ok()) {
        if (rc.params.empty()) {  // the default must emit: lowering would fail the same way
          return absl::Status(ks.status().code(), absl::StrCat("region ", region.id, ": ", ks.status().message()));
        }
        continue;  // a variant this region cannot take
      }
      bool same = false;  // two parameter sets can give one kernel (e.g. a vector width lowered)
      for (const KernelSource& s : rc.sources) same |= s.name == ks->name;
      if (same) continue;
      rc.params.push_back(p);
      rc.compiled.push_back(static_cast<int>(batch.size()));
      batch.push_back({ks->name, ks->source});
      rc.sources.push_back(std::move(*ks));
    }
    if (rc.params.size() < 2) continue;
    std::string key_text = absl::StrCat("kiln-tune-1\n", device_name, "\n", options.arch, "\n", options.warmup, " ",
                                        options.reps, " ", options.min_gain, options.flush_l2 ? " flushed" : " warm", "\n");
    for (size_t c = 0; c < rc.sources.size(); ++c) {
      absl::StrAppend(&key_text, rc.params[c].ToString(), "\n", c == 0 ? rc.sources[c].source : rc.sources[c].name,
                      "\n");
    }
    rc.key = Hex64(Fnv1a64(key_text));
    regions.push_back(std::move(rc));
  }
  TuneResult result;
  if (regions.empty()) return result;
  KILN_ASSIGN_OR_RETURN(std::vector<CachedKernel> compiled,
                        cache.GetOrCompileAll(batch, options.arch, options.compile_threads));

  // The timing harness (its 256 MiB flush buffer) only once a region is actually timed: a
  // compile whose choices are all remembered needs none.
  std::optional<Repetitions> repetitions;
  std::optional<RegionTimer> timer;
  for (const RegionCandidates& rc : regions) {
    TunedRegion tuned;
    tuned.region = rc.region->id;
    tuned.candidates = rc.params;
    for (const KernelParams& p : rc.params) tuned.predicted_us.push_back(CandidatePriceUs(*rc.region, p, options.device));
    // What ptxas gave each candidate, beside the model's price: the residency it really has.
    for (const int index : rc.compiled) {
      tuned.registers.push_back(compiled[index].compiled.registers);
      tuned.spill_bytes.push_back(compiled[index].compiled.spill_store_bytes);
    }
    const std::string path = directory.empty() ? "" : absl::StrCat(directory, "/", rc.key);
    std::optional<int> remembered;
    if (!path.empty() && options.reuse) {
      absl::StatusOr<std::string> text = ReadWholeFile(path);
      if (text.ok()) {
        for (size_t c = 0; c < rc.params.size(); ++c) {
          if (*text == rc.params[c].ToString() + "\n") remembered = static_cast<int>(c);
        }
      }
    }
    if (remembered) {
      tuned.chosen = *remembered;
      tuned.cached = true;
    } else {
      if (!timer) {
        KILN_ASSIGN_OR_RETURN(Repetitions created, Repetitions::Create(options.flush_l2));
        repetitions.emplace(std::move(created));
        timer.emplace(cu, graph, options, *repetitions);
      }
      KILN_RETURN_IF_ERROR(timer->Time(rc, compiled, &tuned));
      if (!path.empty() && options.remember) {
        // A choice that cannot be remembered is only timed again next time.
        WriteFileAtomically(path, rc.params[tuned.chosen].ToString() + "\n").IgnoreError();
      }
    }
    result.params[tuned.region] = rc.params[tuned.chosen];
    result.regions.push_back(std::move(tuned));
  }
  return result;
}

}  // namespace kiln
