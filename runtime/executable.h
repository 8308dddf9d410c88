// Executable: a Program loaded onto one GPU, ready to run (DESIGN.md §6).
//
// Load() checks the Program, refuses a GPU whose architecture differs from the CUBINs' (a
// "sm_90a" artifact runs on compute capability 9.0 only), loads every module with
// cuModuleLoadData, uploads the constant block, allocates the arena and the persistent block
// (zeroed once), and prepares every cuBLASLt plan. Run() then only validates and launches.
//
// Run(inputs, outputs, stream) validates every argument before anything is launched: the
// count, each tensor's dtype and shape against the graph's, that the pointer is device
// memory of this context with at least the tensor's bytes behind it and 16-byte aligned, and
// that no output overlaps an input or another output. Errors name the argument ("output #1
// 'y'"). The steps are launched asynchronously on `stream` (0: the legacy default stream);
// nothing synchronizes, so a run can be captured into a CUDA graph. One Executable runs on
// one stream at a time (the arena is shared by its runs).
//
// RunGraph (or Run after set_cuda_graph(true)) runs the same steps as one CUDA graph launch
// (runtime/cuda_graph.h: captured on a private stream, so the legacy stream works too;
// replayed while the input and output pointers stay the same, re-captured and updated in
// place when they change). Its first call also runs the steps once on `stream` before
// capturing (a warm-up). launches_per_run() counts the host's launch calls per run on either path.
#ifndef KILN_RUNTIME_EXECUTABLE_H_
#define KILN_RUNTIME_EXECUTABLE_H_

#include <cuda.h>

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/tensor.h"
#include "runtime/cuda_graph.h"
#include "runtime/program.h"

namespace kiln {

struct DeviceTensor {
  CUdeviceptr data = 0;
  DType dtype = DType::kF32;
  Shape shape;
};

// "sm_90a" for a device of compute capability 9.0 (the arch-specific target kiln compiles
// for on Hopper), "sm_80" for 8.0: the arch string NVRTC gets for the current device.
absl::StatusOr<std::string> CurrentDeviceArch();

// Makes device `ordinal`'s primary context current on this thread (retaining it) if no
// context is current. Returns the current context.
absl::StatusOr<CUcontext> EnsureContext(int ordinal = 0);

class Executable {
 public:
  static absl::StatusOr<std::unique_ptr<Executable>> Load(Program program, int device_ordinal = 0);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const Program& program() const { return program_; }

  absl::Status Run(absl::Span<const DeviceTensor> inputs, absl::Span<const DeviceTensor> outputs,
                   CUstream stream = nullptr);

  // Run through a CUDA graph, whatever cuda_graph() says. Same validation as Run.
  absl::Status RunGraph(absl::Span<const DeviceTensor> inputs, absl::Span<const DeviceTensor> outputs,
                        CUstream stream = nullptr);
  // Whether Run (and RunOnHost) go through RunGraph; off by default.
  void set_cuda_graph(bool on) { cuda_graph_ = on; }
  bool cuda_graph() const { return cuda_graph_; }
  // The launch calls one Run makes: kernels, cuBLASLt calls and copies, or with cuda_graph()
  // one graph launch (a run inside the caller's own capture launches the steps instead).
  LaunchCounts launches_per_run() const;
  // What the graph path has done so far (zeros before its first run).
  GraphStats graph_stats() const;

  // Runs once with an event recorded after every step, synchronizes, and returns the time of
  // each step in ms (for `kiln bench`). Same validation as Run.
  absl::StatusOr<std::vector<double>> RunTimingSteps(absl::Span<const DeviceTensor> inputs,
                                                     absl::Span<const DeviceTensor> outputs, CUstream stream);

  // Convenience for tools and tests: copies host tensors in (graph input order), runs,
  // synchronizes, copies the outputs back. Output device buffers are poisoned (0xFF) first,
  // so an element no step writes shows up as NaN.
  absl::StatusOr<std::vector<Tensor>> RunOnHost(const std::vector<Tensor>& inputs);

  // The bytes of an intermediate (arena, constant or persistent) buffer after the last run,
  // for debugging; synchronizes. With a shared arena a buffer holds its value only until the
  // bytes are reused (compile with share_arena = false to read them all).
  absl::StatusOr<Tensor> ReadBuffer(int id);

  class Impl;

 private:
  Executable(Program program, std::unique_ptr<Impl> impl);
  absl::Status ValidateArguments(absl::Span<const DeviceTensor> inputs, absl::Span<const DeviceTensor> outputs) const;
  // ValidateArguments, then EnqueueSteps.
  absl::Status Launch(absl::Span<const DeviceTensor> inputs, absl::Span<const DeviceTensor> outputs,
                      CUstream stream, std::vector<CUevent>* step_events);
  // Enqueues every step on `stream` (arguments already validated); nothing synchronizes or
  // allocates, so a capture can record it.
  absl::Status EnqueueSteps(absl::Span<const DeviceTensor> inputs, absl::Span<const DeviceTensor> outputs,
                            CUstream stream, std::vector<CUevent>* step_events);

  Program program_;
  std::unique_ptr<Impl> impl_;
  bool cuda_graph_ = false;
};

// Device memory that frees itself (used by RunOnHost, tools and tests).
class DeviceBuffer {
 public:
  static absl::StatusOr<DeviceBuffer> Allocate(int64_t bytes);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) { other.ptr_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();
  CUdeviceptr get() const { return ptr_; }
  int64_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_EXECUTABLE_H_
