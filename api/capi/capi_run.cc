// The C ABI's running side (api/kiln.h): the primary context, loading an executable onto its
// GPU, kiln_executable_run on device pointers and a stream, and kiln_graph_reference on host
// buffers (the CPU interpreter, as `kiln run --reference`); the CUDA graph switch and the
// launch counts (runtime/cuda_graph.h).
//
// Contexts: Executable::Load and Run use whatever context is current on the calling thread
// (runtime/executable.cc's EnsureContext retains the primary context of device 0 only when none
// is). Here every GPU call first makes the executable's device's *primary* context current, so
// that device pointers from the CUDA runtime (PyTorch's caching allocator, cudaMalloc) are
// valid in it, on whichever thread the caller runs.
#include <cstring>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "api/capi/capi_internal.h"
#include "ir/base/status.h"
#include "ir/interpreter.h"
#include "ir/verifier.h"
#include "runtime/buffer_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_graph.h"

namespace kiln::capi {

absl::Status UsePrimaryContext(int ordinal) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  static std::mutex mutex;
  static auto* retained = new std::map<int, CUcontext>();
  CUcontext context = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = retained->find(ordinal);
    if (it != retained->end()) {
      context = it->second;
    } else {
      int count = 0;
      KILN_CU_RETURN_IF_ERROR(cu->cuDeviceGetCount(&count));
      if (ordinal >= count) {
        return absl::NotFoundError(absl::StrCat("no CUDA device ", ordinal, " (", count, " visible): CUDA_ERROR_NO_DEVICE"));
      }
      CUdevice device;
      KILN_CU_RETURN_IF_ERROR(cu->cuDeviceGet(&device, ordinal));
      KILN_CU_RETURN_IF_ERROR(cu->cuDevicePrimaryCtxRetain(&context, device));
      (*retained)[ordinal] = context;
    }
  }
  CUcontext current = nullptr;
  KILN_CU_RETURN_IF_ERROR(cu->cuCtxGetCurrent(&current));
  if (current != context) KILN_CU_RETURN_IF_ERROR(cu->cuCtxSetCurrent(context));
  return absl::OkStatus();
}

absl::Status Prepare(kiln_executable* executable) {
  std::lock_guard<std::mutex> lock(executable->mutex);
  if (executable->loaded) return absl::OkStatus();
  KILN_RETURN_IF_ERROR(UsePrimaryContext(executable->device_ordinal));
  KILN_ASSIGN_OR_RETURN(executable->loaded, Executable::Load(executable->program, executable->device_ordinal));
  return absl::OkStatus();
}

namespace {

// "input #1 'bias'" / "output #0 'y'", as the runtime names arguments.
std::string Argument(const char* kind, size_t i, const std::string& name) {
  return absl::StrCat(kind, " #", i, " '", name, "'");
}

// Checks the counts and that no pointer is NULL; messages name the argument.
int CheckArguments(const char* function, const Graph& graph, const void* const* inputs, int64_t num_inputs,
                   void* const* outputs, int64_t num_outputs) {
  const size_t n_in = graph.inputs().size(), n_out = graph.outputs().size();
  if (num_inputs != static_cast<int64_t>(n_in)) {
    std::string names;
    for (const Node* in : graph.inputs()) absl::StrAppend(&names, names.empty() ? "" : ", ", in->name());
    return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(function, ": graph '", graph.name(), "' takes ", n_in,
                                                          " inputs (", names, "), got ", num_inputs));
  }
  if (num_outputs != static_cast<int64_t>(n_out)) {
    return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(function, ": graph '", graph.name(), "' has ", n_out,
                                                          " outputs, got ", num_outputs));
  }
  if (n_in > 0 && inputs == nullptr) return NullArgument(function, "inputs");
  if (n_out > 0 && outputs == nullptr) return NullArgument(function, "outputs");
  for (size_t i = 0; i < n_in; ++i) {
    const Node& in = *graph.inputs()[i];
    if (inputs[i] == nullptr && in.num_bytes() > 0) {
      return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(function, ": ", Argument("input", i, in.name()), " is NULL"));
    }
  }
  for (size_t i = 0; i < n_out; ++i) {
    const Graph::Output& out = graph.outputs()[i];
    if (outputs[i] == nullptr && out.node->num_bytes() > 0) {
      return Fail(KILN_ERROR_INVALID_ARGUMENT, absl::StrCat(function, ": ", Argument("output", i, out.name), " is NULL"));
    }
  }
  return KILN_OK;
}

}  // namespace
}  // namespace kiln::capi

using namespace kiln::capi;  // NOLINT: this file implements the C functions of api/kiln.h

extern "C" {

int kiln_executable_prepare(kiln_executable* executable) {
  return Guard(__func__, [&] {
    if (executable == nullptr) return NullArgument(__func__, "executable");
    return FromStatus(Prepare(executable));
  });
}

int kiln_executable_run(kiln_executable* executable, const void* const* inputs, int64_t num_inputs,
                        void* const* outputs, int64_t num_outputs, uint64_t stream) {
  return Guard(__func__, [&] {
    if (executable == nullptr) return NullArgument(__func__, "executable");
    const kiln::Graph& graph = *executable->source.graph;
    if (int c = CheckArguments(__func__, graph, inputs, num_inputs, outputs, num_outputs)) return c;
    if (!kiln::HaveGpu()) {
      return Fail(KILN_ERROR_NO_DEVICE,
                  absl::StrCat(__func__, ": no GPU (or no CUDA driver) to run '", graph.name(), "' (compiled for ",
                               executable->program.arch,
                               "); save it as an artifact, or evaluate it on the CPU with kiln_graph_reference"));
    }
    if (int c = FromStatus(Prepare(executable))) return c;
    if (int c = FromStatus(UsePrimaryContext(executable->device_ordinal))) return c;
    std::vector<kiln::DeviceTensor> in(graph.inputs().size()), out(graph.outputs().size());
    for (size_t i = 0; i < in.size(); ++i) {
      const kiln::Node& node = *graph.inputs()[i];
      in[i] = {reinterpret_cast<CUdeviceptr>(inputs[i]), node.dtype(), node.shape()};
    }
    for (size_t i = 0; i < out.size(); ++i) {
      const kiln::Node& node = *graph.outputs()[i].node;
      out[i] = {reinterpret_cast<CUdeviceptr>(outputs[i]), node.dtype(), node.shape()};
    }
    executable->loaded->set_cuda_graph(executable->cuda_graph);
    return FromStatus(executable->loaded->Run(in, out, reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream))));
  });
}

int kiln_executable_set_cuda_graph(kiln_executable* executable, int cuda_graph) {
  return Guard(__func__, [&] {
    if (executable == nullptr) return NullArgument(__func__, "executable");
    executable->cuda_graph = cuda_graph != 0;
    return KILN_OK;
  });
}

int kiln_executable_launches(const kiln_executable* executable, int64_t* kernels, int64_t* library_calls,
                             int64_t* copies, int64_t* graph_launches) {
  return Guard(__func__, [&] {
    if (executable == nullptr) return NullArgument(__func__, "executable");
    kiln::LaunchCounts c;
    if (executable->cuda_graph) {
      c.graph_launches = 1;
    } else {
      c = kiln::CountLaunches(executable->program);
    }
    if (kernels != nullptr) *kernels = c.kernels;
    if (library_calls != nullptr) *library_calls = c.library_calls;
    if (copies != nullptr) *copies = c.copies;
    if (graph_launches != nullptr) *graph_launches = c.graph_launches;
    return KILN_OK;
  });
}

int kiln_executable_memory(const kiln_executable* executable, int64_t* arena_bytes, int64_t* live_bound_bytes,
                           int64_t* constant_bytes) {
  return Guard(__func__, [&] {
    if (executable == nullptr) return NullArgument(__func__, "executable");
    const kiln::Program& p = executable->program;
    if (arena_bytes != nullptr) *arena_bytes = p.arena_bytes;
    if (live_bound_bytes != nullptr) *live_bound_bytes = kiln::PeakLiveBytes(p);
    if (constant_bytes != nullptr) *constant_bytes = static_cast<int64_t>(p.constants.size());
    return KILN_OK;
  });
}

int kiln_graph_reference(const kiln_graph* graph, const void* const* inputs, int64_t num_inputs,
                         void* const* outputs, int64_t num_outputs) {
  return Guard(__func__, [&] {
    if (graph == nullptr) return NullArgument(__func__, "graph");
    const kiln::Graph& g = *graph->graph;
    if (int c = CheckArguments(__func__, g, inputs, num_inputs, outputs, num_outputs)) return c;
    if (absl::Status s = kiln::Verify(g); !s.ok()) {
      return Fail(ToCode(s), absl::StrCat(__func__, ": ", g.name(), ": ", s.message()));
    }
    std::map<std::string, kiln::Tensor> values;
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const kiln::Node& node = *g.inputs()[i];
      kiln::Tensor t(node.dtype(), node.shape());
      if (t.num_bytes() > 0) std::memcpy(t.data(), inputs[i], t.num_bytes());
      values.emplace(node.name(), std::move(t));
    }
    absl::StatusOr<std::vector<kiln::Tensor>> results = kiln::Interpret(g, values);
    if (!results.ok()) return FromStatus(results.status());
    if (results->size() != g.outputs().size()) {
      return Fail(KILN_ERROR_INTERNAL, absl::StrCat(__func__, ": the interpreter returned ", results->size(),
                                                    " outputs for ", g.outputs().size()));
    }
    for (size_t i = 0; i < results->size(); ++i) {
      const kiln::Tensor& t = (*results)[i];
      if (t.num_bytes() > 0) std::memcpy(outputs[i], t.data(), t.num_bytes());
    }
    return KILN_OK;
  });
}

}  // extern "C"
