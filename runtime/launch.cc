#include "runtime/launch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"

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

absl::StatusOr<CUtensorMap> EncodeTensorMap(const CudaDriver& cu, const TensorMapSpec& spec, CUdeviceptr base) {
  CUtensorMapDataType type;
  switch (spec.dtype) {
    case DType::kBF16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case DType::kF16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case DType::kF32: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("tensor map ", spec.ToString(), ": no TMA type for ",
                                                     DTypeName(spec.dtype)));
  }
  const CUdeviceptr origin = base + static_cast<CUdeviceptr>(spec.offset * ByteSize(spec.dtype));
  if (origin % 16 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor map ", spec.ToString(), ": its origin (argument ", spec.arg,
                                                   " + ", spec.offset, " elements) is not 16-byte aligned"));
  }
  cuuint64_t dims[TensorMapSpec::kMaxRank], strides[TensorMapSpec::kMaxRank];
  cuuint32_t box[TensorMapSpec::kMaxRank], element_strides[TensorMapSpec::kMaxRank];
  for (int d = 0; d < spec.rank; ++d) {
    dims[d] = static_cast<cuuint64_t>(spec.dims[d]);
    if (d > 0) strides[d - 1] = static_cast<cuuint64_t>(spec.strides[d]);
    box[d] = static_cast<cuuint32_t>(spec.box[d]);
    element_strides[d] = 1;
  }
  CUtensorMap map;
  KILN_CU_RETURN_IF_ERROR(cu.cuTensorMapEncodeTiled(
      &map, type, static_cast<cuuint32_t>(spec.rank), reinterpret_cast<void*>(origin), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      spec.swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return map;
}

absl::Status LaunchArgs::Bind(const CudaDriver& cu, const LaunchShape& shape) {
  maps.clear();
  maps.reserve(shape.tensor_maps.size());
  for (const TensorMapSpec& spec : shape.tensor_maps) {
    if (spec.arg < 0 || spec.arg >= static_cast<int>(pointers.size())) {
      return absl::InvalidArgumentError(absl::StrCat("tensor map ", spec.ToString(), " names argument ", spec.arg, " of ",
                                                     pointers.size()));
    }
    KILN_ASSIGN_OR_RETURN(CUtensorMap map, EncodeTensorMap(cu, spec, pointers[spec.arg]));
    maps.push_back(map);
  }
  params.clear();
  for (CUdeviceptr& p : pointers) params.push_back(&p);
  params.push_back(&count);
  for (CUtensorMap& m : maps) params.push_back(&m);
  return absl::OkStatus();
}

}  // namespace kiln
