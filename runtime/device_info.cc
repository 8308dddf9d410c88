#include "runtime/device_info.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/base/status.h"

namespace kiln {

absl::Status CuResultToStatus(CUresult result, const char* call, const char* file, int line) {
  const char* name = nullptr;
  const char* description = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown CUresult";
  if (cuGetErrorString(result, &description) != CUDA_SUCCESS || description == nullptr) {
    description = "no description";
  }
  std::string message = absl::StrCat(call, " failed: ", name, " (", static_cast<int>(result), ", ",
                                     description, ") at ", file, ":", line);
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

int DeviceCount() {
  if (cuInit(0) != CUDA_SUCCESS) return 0;
  int count = 0;
  if (cuDeviceGetCount(&count) != CUDA_SUCCESS) return 0;
  return count;
}

absl::StatusOr<DeviceInfo> QueryDevice(int ordinal) {
  KILN_CU_RETURN_IF_ERROR(cuInit(0));
  CUdevice device;
  KILN_CU_RETURN_IF_ERROR(cuDeviceGet(&device, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  KILN_CU_RETURN_IF_ERROR(cuDeviceGetName(name, sizeof(name) - 1, device));
  info.name = name;
  size_t total = 0;
  KILN_CU_RETURN_IF_ERROR(cuDeviceTotalMem(&total, device));
  info.total_memory_bytes = static_cast<int64_t>(total);
  // The failed call's text names the attribute.
#define KILN_ATTR(field, attribute)                                        \
  do {                                                                     \
    int value = 0;                                                         \
    KILN_CU_RETURN_IF_ERROR(cuDeviceGetAttribute(&value, attribute, device)); \
    info.field = value;                                                    \
  } while (0)
  KILN_ATTR(cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  KILN_ATTR(cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  KILN_ATTR(sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  KILN_ATTR(memory_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  KILN_ATTR(memory_bus_width_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  KILN_ATTR(l2_cache_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  KILN_ATTR(shared_memory_per_block_optin_bytes, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  KILN_ATTR(shared_memory_per_sm_bytes, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  KILN_ATTR(max_threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  KILN_ATTR(registers_per_sm, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
#undef KILN_ATTR
  return info;
}

std::string DeviceInfo::ToString() const {
  return absl::StrFormat(
      "device %d: %s\n"
      "  compute capability %d.%d, %d SMs, %d threads and %d registers per SM\n"
      "  memory %.1f GiB, clock %.0f MHz x %d bits = %.0f GB/s theoretical\n"
      "  L2 %.1f MiB, shared memory %d KiB per block (opt-in), %d KiB per SM\n",
      ordinal, name, cc_major, cc_minor, sm_count, max_threads_per_sm, registers_per_sm,
      total_memory_bytes / double(1 << 30), memory_clock_khz / 1e3, memory_bus_width_bits,
      theoretical_bandwidth_gbps(), l2_cache_bytes / double(1 << 20),
      static_cast<int>(shared_memory_per_block_optin_bytes / 1024),
      static_cast<int>(shared_memory_per_sm_bytes / 1024));
}

}  // namespace kiln
