#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace kiln {
namespace {

#define KILN_CUDA_SYMBOL_TEXT(x) #x
#define KILN_CUDA_SYMBOL(x) KILN_CUDA_SYMBOL_TEXT(x)  // expands cuda.h's version macros first

absl::StatusOr<CudaDriver> Load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* error = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA driver: cannot load libcuda.so.1 (", error ? error : "unknown error",
                     "); GPU work needs an NVIDIA driver"));
  }
  CudaDriver d;
  // dlsym by the exact symbol cuda.h maps each name to (cuMemAlloc -> "cuMemAlloc_v2"), so the
  // pointer has the prototype decltype took. (cuGetProcAddress would return the newest
  // version for the toolkit's CUDA_VERSION instead, e.g. the two-argument cuCtxGetDevice_v2
  // of CUDA 13 for "cuCtxGetDevice", whose header prototype is the one-argument v1.)
#define KILN_CUDA_DRIVER_RESOLVE(name)                                                          \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(lib, KILN_CUDA_SYMBOL(name)));              \
  if (d.name == nullptr) {                                                                      \
    return absl::FailedPreconditionError(absl::StrCat("the CUDA driver lacks ", KILN_CUDA_SYMBOL(name), \
                                                      ": it is older than the CUDA ",           \
                                                      CUDA_VERSION / 1000, " kiln was built with")); \
  }
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DRIVER_RESOLVE)
#undef KILN_CUDA_DRIVER_RESOLVE
  CUresult init = d.cuInit(0);
  if (init != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(init, &name);
    return absl::FailedPreconditionError(
        absl::StrCat("cuInit(0) failed: ", name ? name : "unknown CUresult", " (no usable GPU)"));
  }
  return d;
}

}  // namespace

absl::StatusOr<const CudaDriver*> LoadCudaDriver() {
  static const absl::StatusOr<CudaDriver>* loaded = new absl::StatusOr<CudaDriver>(Load());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

bool HaveGpu() {
  auto cu = LoadCudaDriver();
  int count = 0;
  return cu.ok() && (*cu)->cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 0;
}

absl::Status CuResultToStatus(CUresult result, const char* call, const char* file, int line) {
  const char* name = nullptr;
  const char* description = nullptr;
  if (auto cu = LoadCudaDriver(); cu.ok()) {
    (*cu)->cuGetErrorName(result, &name);
    (*cu)->cuGetErrorString(result, &description);
  }
  if (name == nullptr) {  // no driver to ask: the results kiln's messages meet most
    switch (result) {
      case CUDA_ERROR_INVALID_VALUE: name = "CUDA_ERROR_INVALID_VALUE"; break;
      case CUDA_ERROR_OUT_OF_MEMORY: name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
      case CUDA_ERROR_NOT_INITIALIZED: name = "CUDA_ERROR_NOT_INITIALIZED"; break;
      case CUDA_ERROR_NO_DEVICE: name = "CUDA_ERROR_NO_DEVICE"; break;
      case CUDA_ERROR_INVALID_DEVICE: name = "CUDA_ERROR_INVALID_DEVICE"; break;
      case CUDA_ERROR_INVALID_CONTEXT: name = "CUDA_ERROR_INVALID_CONTEXT"; break;
      case CUDA_ERROR_LAUNCH_FAILED: name = "CUDA_ERROR_LAUNCH_FAILED"; break;
      default: break;
    }
  }
  std::string message = absl::StrCat(call, " failed: ", name ? name : "unknown CUresult", " (",
                                     static_cast<int>(result), ", ", description ? description : "no description",
                                     ") at ", file, ":", line);
  switch (result) {
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
      return absl::NotFoundError(message);
    case CUDA_ERROR_OUT_OF_MEMORY:
      return absl::ResourceExhaustedError(message);
    case CUDA_ERROR_INVALID_VALUE:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace kiln
