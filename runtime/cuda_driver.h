// The CUDA driver API, loaded at run time. kiln binaries do not link libcuda: the first call
// dlopen()s libcuda.so.1 and resolves every entry point below by the versioned symbol name
// cuda.h maps it to. A machine without a driver (CI, a laptop) therefore
// still runs `kiln check`, `kiln dump`, `kiln compile --arch sm_90` and the interpreter; any
// GPU work answers with a Status saying there is no driver.
//
//   KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
//   KILN_CU_RETURN_IF_ERROR(cu->cuMemAlloc(&ptr, bytes));
//
// KILN_CU_RETURN_IF_ERROR(call) is the one check for driver calls (DESIGN.md §6): on failure
// it returns a Status naming the call, the CUresult's name and description, and file:line.
#ifndef KILN_RUNTIME_CUDA_DRIVER_H_
#define KILN_RUNTIME_CUDA_DRIVER_H_

#include <cuda.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln {

// Every driver entry point kiln uses. cuda.h maps names such as cuMemAlloc to their versioned
// symbols (cuMemAlloc_v2) by macro; decltype(&::name) takes the prototype it maps to, and the
// loader looks up that same versioned symbol. The graph calls (runtime/cuda_graph.h) resolve
// to cuStreamBeginCapture_v2 (with a CUstreamCaptureMode), cuGraphInstantiateWithFlags and
// cuGraphExecUpdate_v2 (CUDA 12's form, with a CUgraphExecUpdateResultInfo*).
#define KILN_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit)                           \
  X(cuDriverGetVersion)               \
  X(cuGetErrorName)                   \
  X(cuGetErrorString)                 \
  X(cuDeviceGet)                      \
  X(cuDeviceGetCount)                 \
  X(cuDeviceGetName)                  \
  X(cuDeviceGetAttribute)             \
  X(cuDeviceTotalMem)                 \
  X(cuDevicePrimaryCtxRetain)         \
  X(cuCtxSetCurrent)                  \
  X(cuCtxGetCurrent)                  \
  X(cuCtxGetDevice)                   \
  X(cuCtxSynchronize)                 \
  X(cuModuleLoadData)                 \
  X(cuModuleUnload)                   \
  X(cuModuleGetFunction)              \
  X(cuFuncGetAttribute)               \
  X(cuFuncSetAttribute)               \
  X(cuLaunchKernel)                   \
  X(cuLaunchKernelEx)                 \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuTensorMapEncodeTiled)           \
  X(cuMemAlloc)                       \
  X(cuMemFree)                        \
  X(cuMemGetInfo)                     \
  X(cuMemcpyHtoD)                     \
  X(cuMemcpyDtoH)                     \
  X(cuMemcpyHtoDAsync)                \
  X(cuMemcpyDtoHAsync)                \
  X(cuMemcpyDtoDAsync)                \
  X(cuMemsetD8)                       \
  X(cuMemsetD8Async)                  \
  X(cuPointerGetAttribute)            \
  X(cuStreamCreate)                   \
  X(cuStreamDestroy)                  \
  X(cuStreamSynchronize)              \
  X(cuStreamIsCapturing)              \
  X(cuStreamBeginCapture)             \
  X(cuStreamEndCapture)               \
  X(cuGraphInstantiate)               \
  X(cuGraphExecUpdate)                \
  X(cuGraphLaunch)                    \
  X(cuGraphExecDestroy)               \
  X(cuGraphDestroy)                   \
  X(cuEventCreate)                    \
  X(cuEventDestroy)                   \
  X(cuEventRecord)                    \
  X(cuEventSynchronize)               \
  X(cuEventElapsedTime)

struct CudaDriver {
#define KILN_CUDA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DRIVER_MEMBER)
#undef KILN_CUDA_DRIVER_MEMBER
};

// The process-wide table, loaded (and cuInit(0) called) on first use. Fails with
// FailedPrecondition when libcuda.so.1 cannot be loaded, an entry point is missing, or cuInit
// fails; the answer is remembered, so later calls are cheap.
absl::StatusOr<const CudaDriver*> LoadCudaDriver();

// Whether a driver loads and reports at least one device.
bool HaveGpu();

// "cuInit(0) failed: CUDA_ERROR_NO_DEVICE (100, no CUDA-capable device is detected) at f:l".
absl::Status CuResultToStatus(CUresult result, const char* call, const char* file, int line);

#define KILN_CU_RETURN_IF_ERROR(call)                                              \
  do {                                                                             \
    CUresult kiln_cu_result_ = (call);                                             \
    if (kiln_cu_result_ != CUDA_SUCCESS) {                                         \
      return ::kiln::CuResultToStatus(kiln_cu_result_, #call, __FILE__, __LINE__); \
    }                                                                              \
  } while (0)

}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_DRIVER_H_
