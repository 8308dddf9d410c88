#include "runtime/executable.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/base/status.h"
#include "runtime/buffer_plan.h"
#include "runtime/cuda_graph.h"
#include "runtime/cuda_driver.h"
#include "runtime/launch.h"
#include "runtime/matmul.h"

namespace kiln {

absl::StatusOr<CUcontext> EnsureContext(int ordinal) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  CUcontext context = nullptr;
  KILN_CU_RETURN_IF_ERROR(cu->cuCtxGetCurrent(&context));
  if (context != nullptr) return context;
  CUdevice device;
  KILN_CU_RETURN_IF_ERROR(cu->cuDeviceGet(&device, ordinal));
  KILN_CU_RETURN_IF_ERROR(cu->cuDevicePrimaryCtxRetain(&context, device));
  KILN_CU_RETURN_IF_ERROR(cu->cuCtxSetCurrent(context));
  return context;
}

absl::StatusOr<std::string> CurrentDeviceArch() {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  KILN_RETURN_IF_ERROR(EnsureContext().status());
  CUdevice device;
  KILN_CU_RETURN_IF_ERROR(cu->cuCtxGetDevice(&device));
  int major = 0, minor = 0;
  KILN_CU_RETURN_IF_ERROR(cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  KILN_CU_RETURN_IF_ERROR(cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  // Hopper's arch-specific target (wgmma, setmaxnreg) is only valid on 9.0 itself.
  return absl::StrFormat("sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");
}

// ---- DeviceBuffer ----

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(int64_t bytes) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  DeviceBuffer b;
  b.bytes_ = bytes;
  if (bytes > 0) KILN_CU_RETURN_IF_ERROR(cu->cuMemAlloc(&b.ptr_, static_cast<size_t>(bytes)));
  return b;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    this->~DeviceBuffer();
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.ptr_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ == 0) return;
  if (auto cu = LoadCudaDriver(); cu.ok()) (*cu)->cuMemFree(ptr_);
  ptr_ = 0;
}

// ---- Executable ----

class Executable::Impl {
 public:
  const CudaDriver* cu = nullptr;
  CUcontext context = nullptr;
  std::vector<CUmodule> modules;
  std::vector<CUfunction> functions;  // per step (null for non-kernel steps)
  std::vector<int64_t> grids;         // per step: the x extent to launch with (PrepareKernel)
  std::vector<int> matmul_plans;      // per step (-1 for non-matmul steps)
  DeviceBuffer constants, arena, persistent;
  std::unique_ptr<MatmulRunner> matmuls;
  std::unique_ptr<CudaGraphRunner> graph;  // created by the first RunGraph

  ~Impl() {
    graph.reset();  // its exec refers to the modules
    for (CUmodule m : modules) cu->cuModuleUnload(m);
  }
};

Executable::Executable(Program program, std::unique_ptr<Impl> impl)
    : program_(std::move(program)), impl_(std::move(impl)) {}
Executable::~Executable() = default;

absl::StatusOr<std::unique_ptr<Executable>> Executable::Load(Program program, int device_ordinal) {
  KILN_RETURN_IF_ERROR(program.Validate());
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  auto impl = std::make_unique<Impl>();
  impl->cu = cu;
  KILN_ASSIGN_OR_RETURN(impl->context, EnsureContext(device_ordinal));
  KILN_ASSIGN_OR_RETURN(std::string arch, CurrentDeviceArch());
  if (!program.modules.empty() && arch != program.arch) {
    return absl::FailedPreconditionError(absl::StrCat(
        "graph '", program.graph_name, "' was compiled for ", program.arch, " but this GPU is ", arch,
        ": recompile it for this GPU (kiln compile --arch ", arch, ")"));
  }
  for (const Module& m : program.modules) {
    CUmodule module;
    CUresult r = cu->cuModuleLoadData(&module, m.cubin.data());
    if (r != CUDA_SUCCESS) {
      absl::Status e = CuResultToStatus(r, "cuModuleLoadData", __FILE__, __LINE__);
      return absl::Status(e.code(), absl::StrCat("loading kernel ", m.name, ": ", e.message()));
    }
    impl->modules.push_back(module);
  }
  impl->functions.assign(program.steps.size(), nullptr);
  impl->grids.assign(program.steps.size(), 0);
  impl->matmul_plans.assign(program.steps.size(), -1);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    if (step.kind == Step::Kind::kKernel) {
      KILN_CU_RETURN_IF_ERROR(cu->cuModuleGetFunction(&impl->functions[s], impl->modules[step.kernel.module],
                                                      step.kernel.name.c_str()));
      absl::StatusOr<int64_t> grid = PrepareKernel(*cu, impl->functions[s], step.kernel.launch);
      if (!grid.ok()) {
        return absl::Status(grid.status().code(),
                            absl::StrCat("step ", s, " (", step.label, ") kernel ", step.kernel.name, ": ",
                                         grid.status().message()));
      }
      impl->grids[s] = *grid;
    } else if (step.kind == Step::Kind::kMatmul) {
      if (!impl->matmuls) {
        KILN_ASSIGN_OR_RETURN(impl->matmuls, MatmulRunner::Create());
      }
      KILN_ASSIGN_OR_RETURN(impl->matmul_plans[s], impl->matmuls->Prepare(step.matmul.spec));
    }
  }
  KILN_ASSIGN_OR_RETURN(impl->constants, DeviceBuffer::Allocate(program.constants.size()));
  if (!program.constants.empty()) {
    KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyHtoD(impl->constants.get(), program.constants.data(), program.constants.size()));
  }
  KILN_ASSIGN_OR_RETURN(impl->arena, DeviceBuffer::Allocate(program.arena_bytes));
  KILN_ASSIGN_OR_RETURN(impl->persistent, DeviceBuffer::Allocate(program.persistent_bytes));
  if (program.persistent_bytes > 0) {
    KILN_CU_RETURN_IF_ERROR(cu->cuMemsetD8(impl->persistent.get(), 0, program.persistent_bytes));
  }
  KILN_CU_RETURN_IF_ERROR(cu->cuCtxSynchronize());
  return std::unique_ptr<Executable>(new Executable(std::move(program), std::move(impl)));
}

namespace {

std::string ArgName(const char* role, int index, const Buffer& b) {
  return absl::StrCat(role, " #", index, " '", b.name, "'");
}

absl::Status CheckTensor(const CudaDriver* cu, CUcontext context, const char* role, int index, const Buffer& b,
                         const DeviceTensor& t) {
  std::string name = ArgName(role, index, b);
  if (t.dtype != b.dtype || t.shape != b.shape) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is ", DTypeName(t.dtype), ShapeToString(t.shape),
                                                   "; the graph expects ", DTypeName(b.dtype), ShapeToString(b.shape)));
  }
  if (b.bytes == 0) return absl::OkStatus();
  if (t.data == 0) return absl::InvalidArgumentError(absl::StrCat(name, " is a null pointer"));
  if (t.data % 16 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, " at 0x", absl::Hex(t.data),
                                                   " is not 16-byte aligned (kiln's vector loads need it)"));
  }
  CUcontext owner = nullptr;
  CUresult r = cu->cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, t.data);
  unsigned int memory_type = 0;
  if (r == CUDA_SUCCESS) r = cu->cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, t.data);
  if (r != CUDA_SUCCESS || memory_type != CU_MEMORYTYPE_DEVICE) {
    return absl::InvalidArgumentError(absl::StrCat(name, " at 0x", absl::Hex(t.data), " is not device memory"));
  }
  if (owner != nullptr && owner != context) {
    return absl::InvalidArgumentError(absl::StrCat(name, " belongs to another CUDA context (another device?)"));
  }
  CUdeviceptr start = 0;
  size_t size = 0;
  if (cu->cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, t.data) == CUDA_SUCCESS &&
      cu->cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, t.data) == CUDA_SUCCESS &&
      t.data + b.bytes > start + size) {
    return absl::InvalidArgumentError(absl::StrCat(name, " needs ", b.bytes, " bytes but its allocation has only ",
                                                   start + size - t.data, " from that address"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Executable::ValidateArguments(absl::Span<const DeviceTensor> inputs,
                                           absl::Span<const DeviceTensor> outputs) const {
  const Program& p = program_;
  const CudaDriver* cu = impl_->cu;
  if (inputs.size() != p.inputs.size() || outputs.size() != p.outputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("graph '", p.graph_name, "' takes ", p.inputs.size(),
                                                   " inputs and ", p.outputs.size(), " outputs; got ", inputs.size(),
                                                   " and ", outputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_RETURN_IF_ERROR(CheckTensor(cu, impl_->context, "input", i, p.buffers[p.inputs[i]], inputs[i]));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    KILN_RETURN_IF_ERROR(CheckTensor(cu, impl_->context, "output", i, p.buffers[p.outputs[i]], outputs[i]));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Buffer& o = p.buffers[p.outputs[i]];
    auto overlaps = [&](const DeviceTensor& t, int64_t bytes) {
      return o.bytes > 0 && bytes > 0 && outputs[i].data < t.data + bytes && t.data < outputs[i].data + o.bytes;
    };
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (overlaps(inputs[j], p.buffers[p.inputs[j]].bytes)) {
        return absl::InvalidArgumentError(absl::StrCat(ArgName("output", i, o), " overlaps ",
                                                       ArgName("input", j, p.buffers[p.inputs[j]])));
      }
    }
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      if (overlaps(outputs[j], p.buffers[p.outputs[j]].bytes)) {
        return absl::InvalidArgumentError(absl::StrCat(ArgName("output", i, o), " overlaps ",
                                                       ArgName("output", j, p.buffers[p.outputs[j]])));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Executable::Launch(absl::Span<const DeviceTensor> inputs, absl::Span<const DeviceTensor> outputs,
                                CUstream stream, std::vector<CUevent>* step_events) {
  KILN_RETURN_IF_ERROR(ValidateArguments(inputs, outputs));
  return EnqueueSteps(inputs, outputs, stream, step_events);
}

absl::Status Executable::EnqueueSteps(absl::Span<const DeviceTensor> inputs, absl::Span<const DeviceTensor> outputs,
                                      CUstream stream, std::vector<CUevent>* step_events) {
  const Program& p = program_;
  const CudaDriver* cu = impl_->cu;
  // Every buffer's address for this run.
  std::vector<CUdeviceptr> address(p.buffers.size(), 0);
  for (size_t id = 0; id < p.buffers.size(); ++id) {
    const Buffer& b = p.buffers[id];
    switch (b.kind) {
      case BufferKind::kInput: address[id] = inputs[b.index].data; break;
      case BufferKind::kOutput: address[id] = outputs[b.index].data; break;
      case BufferKind::kConstant: address[id] = impl_->constants.get() + b.offset; break;
      case BufferKind::kArena: address[id] = impl_->arena.get() + b.offset; break;
      case BufferKind::kPersistent: address[id] = impl_->persistent.get() + b.offset; break;
      case BufferKind::kAlias: break;  // below, once every owner has its address
    }
  }
  for (size_t id = 0; id < p.buffers.size(); ++id) {
    if (p.buffers[id].kind == BufferKind::kAlias) address[id] = address[ResolveAlias(p.buffers, id)];
  }
  LaunchArgs args;
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const Step& step = p.steps[s];
    switch (step.kind) {
      case Step::Kind::kKernel: {
        const KernelStep& k = step.kernel;
        args.pointers.clear();
        for (int id : k.args) args.pointers.push_back(address[id]);
        if (k.scratch >= 0) args.pointers.push_back(address[k.scratch]);
        args.count = k.count;
        absl::Status launched = args.Bind(*cu, k.launch);
        if (launched.ok()) {
          launched = LaunchKernel(*cu, impl_->functions[s], k.launch, impl_->grids[s], args.data(), stream);
        }
        if (!launched.ok()) {
          return absl::Status(launched.code(),
                              absl::StrCat("step ", s, " (", step.label, ") kernel ", k.name, ": ", launched.message()));
        }
        break;
      }
      case Step::Kind::kMatmul: {
        const MatmulStep& m = step.matmul;
        int64_t size = ByteSize(m.spec.dtype);
        for (const MatmulStep::Call& call : m.calls) {
          MatmulPointers ptrs;
          ptrs.a = address[m.a] + call.a * size;
          ptrs.b = address[m.b] + call.b * size;
          ptrs.d = address[m.d] + call.d * size;
          if (m.bias >= 0) ptrs.bias = address[m.bias];
          if (m.residual >= 0) ptrs.residual = address[m.residual] + call.d * size;
          absl::Status st = impl_->matmuls->Run(impl_->matmul_plans[s], ptrs, stream);
          if (!st.ok()) return absl::Status(st.code(), absl::StrCat("step ", s, " (", step.label, "): ", st.message()));
        }
        break;
      }
      case Step::Kind::kCopy:
        if (p.buffers[step.copy.src].bytes > 0) {
          KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyDtoDAsync(address[step.copy.dst], address[step.copy.src],
                                                        p.buffers[step.copy.src].bytes, stream));
        }
        break;
    }
    if (step_events != nullptr) KILN_CU_RETURN_IF_ERROR(cu->cuEventRecord((*step_events)[s + 1], stream));
  }
  return absl::OkStatus();
}

absl::Status Executable::Run(absl::Span<const DeviceTensor> inputs, absl::Span<const DeviceTensor> outputs,
                             CUstream stream) {
  if (cuda_graph_) return RunGraph(inputs, outputs, stream);
  return Launch(inputs, outputs, stream, nullptr);
}

absl::Status Executable::RunGraph(absl::Span<const DeviceTensor> inputs, absl::Span<const DeviceTensor> outputs,
                                  CUstream stream) {
  KILN_RETURN_IF_ERROR(ValidateArguments(inputs, outputs));
  if (!impl_->graph) impl_->graph = std::make_unique<CudaGraphRunner>(impl_->cu);
  GraphKey key;
  for (const DeviceTensor& t : inputs) key.inputs.push_back(t.data);
  for (const DeviceTensor& t : outputs) key.outputs.push_back(t.data);
  return impl_->graph->Run(
      key, [&](CUstream s) { return EnqueueSteps(inputs, outputs, s, nullptr); }, stream);
}

LaunchCounts Executable::launches_per_run() const {
  if (!cuda_graph_) return CountLaunches(program_);
  LaunchCounts c;
  c.graph_launches = 1;
  return c;
}

GraphStats Executable::graph_stats() const { return impl_->graph ? impl_->graph->stats() : GraphStats{}; }

absl::StatusOr<std::vector<double>> Executable::RunTimingSteps(absl::Span<const DeviceTensor> inputs,
                                                               absl::Span<const DeviceTensor> outputs,
                                                               CUstream stream) {
  const CudaDriver* cu = impl_->cu;
  std::vector<CUevent> events(program_.steps.size() + 1);
  for (CUevent& e : events) KILN_CU_RETURN_IF_ERROR(cu->cuEventCreate(&e, CU_EVENT_DEFAULT));
  absl::Status status = [&]() -> absl::Status {
    KILN_CU_RETURN_IF_ERROR(cu->cuEventRecord(events[0], stream));
    KILN_RETURN_IF_ERROR(Launch(inputs, outputs, stream, &events));
    KILN_CU_RETURN_IF_ERROR(cu->cuEventSynchronize(events.back()));
    return absl::OkStatus();
  }();
  std::vector<double> ms(program_.steps.size(), 0);
  for (size_t s = 0; status.ok() && s < ms.size(); ++s) {
    float t = 0;
    CUresult r = cu->cuEventElapsedTime(&t, events[s], events[s + 1]);
    if (r != CUDA_SUCCESS) status = CuResultToStatus(r, "cuEventElapsedTime", __FILE__, __LINE__);
    ms[s] = t;
  }
  for (CUevent e : events) cu->cuEventDestroy(e);
  if (!status.ok()) return status;
  return ms;
}

absl::StatusOr<Tensor> Executable::ReadBuffer(int id) {
  const CudaDriver* cu = impl_->cu;
  if (id < 0 || id >= static_cast<int>(program_.buffers.size())) {
    return absl::InvalidArgumentError(absl::StrCat("no buffer ", id));
  }
  const Buffer& b = program_.buffers[ResolveAlias(program_.buffers, id)];
  CUdeviceptr base = b.kind == BufferKind::kArena        ? impl_->arena.get()
                     : b.kind == BufferKind::kConstant   ? impl_->constants.get()
                     : b.kind == BufferKind::kPersistent ? impl_->persistent.get()
                                                         : 0;
  if (base == 0) return absl::InvalidArgumentError(absl::StrCat("buffer ", b.name, " is ", BufferKindName(b.kind)));
  KILN_CU_RETURN_IF_ERROR(cu->cuCtxSynchronize());
  Tensor t(program_.buffers[id].dtype, program_.buffers[id].shape);
  if (t.num_bytes() > 0) KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyDtoH(t.data(), base + b.offset, t.num_bytes()));
  return t;
}

absl::StatusOr<std::vector<Tensor>> Executable::RunOnHost(const std::vector<Tensor>& inputs) {
  const CudaDriver* cu = impl_->cu;
  const Program& p = program_;
  if (inputs.size() != p.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("graph '", p.graph_name, "' takes ", p.inputs.size(),
                                                   " inputs; got ", inputs.size()));
  }
  std::vector<DeviceBuffer> memory;
  std::vector<DeviceTensor> in, out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(inputs[i].num_bytes()));
    if (inputs[i].num_bytes() > 0) {
      KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyHtoD(b.get(), inputs[i].data(), inputs[i].num_bytes()));
    }
    in.push_back({b.get(), inputs[i].dtype(), inputs[i].shape()});
    memory.push_back(std::move(b));
  }
  for (int id : p.outputs) {
    const Buffer& o = p.buffers[id];
    KILN_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(o.bytes));
    if (o.bytes > 0) KILN_CU_RETURN_IF_ERROR(cu->cuMemsetD8(b.get(), 0xFF, o.bytes));
    out.push_back({b.get(), o.dtype, o.shape});
    memory.push_back(std::move(b));
  }
  KILN_RETURN_IF_ERROR(Run(in, out, nullptr));
  KILN_CU_RETURN_IF_ERROR(cu->cuCtxSynchronize());
  std::vector<Tensor> results;
  for (size_t i = 0; i < out.size(); ++i) {
    Tensor t(out[i].dtype, out[i].shape);
    if (t.num_bytes() > 0) KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyDtoH(t.data(), out[i].data, t.num_bytes()));
    results.push_back(std::move(t));
  }
  return results;
}

}  // namespace kiln
