// The one place kiln launches a generated kernel (runtime/program.h's LaunchShape; the kernel
// ABI is codegen/kernel_source.h). The executable and the autotuner both go through it, so a
// kernel runs the same way when it is timed and when it is used.
#ifndef KILN_RUNTIME_LAUNCH_H_
#define KILN_RUNTIME_LAUNCH_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/cuda_driver.h"
#include "runtime/program.h"

namespace kiln {

// Readies a loaded kernel for its shape (raises its dynamic shared memory limit to the shape's,
// allows non-portable cluster sizes) and returns the x extent to launch with for `count`:
// the shape's grid, or for a cooperative kernel at most what is resident on this GPU at once
// (a multiple of grid_multiple; an error when not even one group fits).
absl::StatusOr<int64_t> PrepareKernel(const CudaDriver& cu, CUfunction function, const LaunchShape& shape);

// Launches with x extent `grid_x` on `stream`; `params` as cuLaunchKernel takes them.
// cuLaunchKernel for a plain grid, cuLaunchKernelEx with the cluster and cooperative attributes
// otherwise.
absl::Status LaunchKernel(const CudaDriver& cu, CUfunction function, const LaunchShape& shape, int64_t grid_x,
                          void** params, CUstream stream);

// A TMA tensor map for `spec` over the tensor at `base` (the pointer argument spec.arg names):
// cuTensorMapEncodeTiled, 128-byte swizzle where the spec says so, zeros outside the tensor.
// InvalidArgument when the address base + offset is not 16-byte aligned, as TMA requires.
absl::StatusOr<CUtensorMap> EncodeTensorMap(const CudaDriver& cu, const TensorMapSpec& spec, CUdeviceptr base);

// A kernel's parameters in the ABI's order (codegen/kernel_source.h): the pointers (the args,
// then the scratch), the count, then one tensor map per shape.tensor_maps entry, encoded from
// the pointer it names. Fill `pointers` and `count`, then Bind; `params` points into this
// object, so keep it in place (and Bind again after changing a pointer) while launching.
struct LaunchArgs {
  std::vector<CUdeviceptr> pointers;
  long long count = 0;
  std::vector<CUtensorMap> maps;
  std::vector<void*> params;

  absl::Status Bind(const CudaDriver& cu, const LaunchShape& shape);
  void** data() { return params.data(); }
};

}  // namespace kiln

#endif  // KILN_RUNTIME_LAUNCH_H_
