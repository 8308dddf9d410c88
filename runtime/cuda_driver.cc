#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace kiln {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

absl::StatusOr<CudaDriver> Load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* error = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA driver: cannot load libcuda.so.1 (", error ? error : "unknown error",
                     "); GPU work needs an NVIDIA driver"));
  }
  auto get = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get == nullptr) {
    return absl::FailedPreconditionError(
        "the CUDA driver is too old: libcuda.so.1 has no cuGetProcAddress_v2 (CUDA 12 or newer is needed)");
  }
  CudaDriver d;
#define KILN_CUDA_DRIVER_RESOLVE(name)                                                            \
  {                                                                                               \
    void* fn = nullptr;                                                                           \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                  \
    if (get(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||     \
        fn == nullptr) {                                                                          \
      return absl::FailedPreconditionError(absl::StrCat(                                          \
          "the CUDA driver lacks ", #name, " for CUDA ", CUDA_VERSION / 1000, ".",                \
          CUDA_VERSION % 1000 / 10, found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT           \
                                        ? " (the driver is older than the toolkit kiln was built with)" \
                                        : ""));                                                   \
    }                                                                                             \
    d.name = reinterpret_cast<decltype(d.name)>(fn);                                              \
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
