#include "runtime/launch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln {

absl::StatusOr<int64_t> PrepareKernel(const CudaDriver& cu, CUfunction function, const LaunchShape& shape) {
  if (shape.dynamic_smem_bytes > 0) {
    // Raised whenever there is dynamic shared memory, not only past 48 KB: the 48 KB a launch
    // may take without it counts the kernel's static shared memory too, so 48 KB of dynamic
    // memory beside a static flag fails with CUDA_ERROR_INVALID_VALUE (seen: the attention
    // kernel's 128 aligned static bytes and a 64x64 tile of 3 stages, exactly 48 KB).
    KILN_CU_RETURN_IF_ERROR(cu.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                  shape.dynamic_smem_bytes));
    // The whole unified L1 as shared memory: the driver otherwise picks a carveout that may fit
    // one block where two fit (measured: a 104 KB attention block ran alone on an H100 SM).
    KILN_CU_RETURN_IF_ERROR(cu.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                                  CU_SHAREDMEM_CARVEOUT_MAX_SHARED));
  }
  if (shape.cluster_x > 8) {
    KILN_CU_RETURN_IF_ERROR(cu.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
  }
  if (!shape.cooperative) return shape.grid;
  int per_sm = 0;
  KILN_CU_RETURN_IF_ERROR(
      cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, function, shape.block, shape.dynamic_smem_bytes));
  CUdevice device;
  KILN_CU_RETURN_IF_ERROR(cu.cuCtxGetDevice(&device));
  int sms = 0;
  KILN_CU_RETURN_IF_ERROR(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  const int64_t resident = static_cast<int64_t>(per_sm) * sms;
  const int64_t fits = resident - resident % shape.grid_multiple;
  if (fits < shape.grid_multiple) {
    return absl::ResourceExhaustedError(absl::StrCat("a cooperative kernel needs ", shape.grid_multiple,
                                                     " blocks resident at once; this GPU holds ", resident));
  }
  return std::min(shape.grid, fits);
}

absl::Status LaunchKernel(const CudaDriver& cu, CUfunction function, const LaunchShape& shape, int64_t grid_x,
                          void** params, CUstream stream) {
  if (!shape.cooperative && shape.cluster_x <= 1) {
    KILN_CU_RETURN_IF_ERROR(cu.cuLaunchKernel(function, static_cast<unsigned>(grid_x),
                                              static_cast<unsigned>(shape.grid_y), static_cast<unsigned>(shape.grid_z),
                                              shape.block, 1, 1, shape.dynamic_smem_bytes, stream, params, nullptr));
    return absl::OkStatus();
  }
  CUlaunchAttribute attrs[2];
  unsigned n = 0;
  if (shape.cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    ++n;
  }
  if (shape.cluster_x > 1) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = static_cast<unsigned>(shape.cluster_x);
    attrs[n].value.clusterDim.y = 1;
    attrs[n].value.clusterDim.z = 1;
    ++n;
  }
  CUlaunchConfig config = {};
  config.gridDimX = static_cast<unsigned>(grid_x);
  config.gridDimY = static_cast<unsigned>(shape.grid_y);
  config.gridDimZ = static_cast<unsigned>(shape.grid_z);
  config.blockDimX = static_cast<unsigned>(shape.block);
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = static_cast<unsigned>(shape.dynamic_smem_bytes);
  config.hStream = stream;
  config.attrs = attrs;
  config.numAttrs = n;
  KILN_CU_RETURN_IF_ERROR(cu.cuLaunchKernelEx(&config, function, params, nullptr));
  return absl::OkStatus();
}

}  // namespace kiln
