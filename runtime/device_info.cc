#include "runtime/device_info.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/base/status.h"

namespace kiln {

int DeviceCount() {
  auto cu = LoadCudaDriver();
  int count = 0;
  if (!cu.ok() || (*cu)->cuDeviceGetCount(&count) != CUDA_SUCCESS) return 0;
  return count;
}

absl::StatusOr<DeviceInfo> QueryDevice(int ordinal) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  CUdevice device;
  KILN_CU_RETURN_IF_ERROR(cu->cuDeviceGet(&device, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  KILN_CU_RETURN_IF_ERROR(cu->cuDeviceGetName(name, sizeof(name) - 1, device));
  info.name = name;
  size_t total = 0;
  KILN_CU_RETURN_IF_ERROR(cu->cuDeviceTotalMem(&total, device));
  info.total_memory_bytes = static_cast<int64_t>(total);
  // The failed call's text names the attribute.
#define KILN_ATTR(field, attribute)                                        \
  do {                                                                     \
    int value = 0;                                                         \
    KILN_CU_RETURN_IF_ERROR(cu->cuDeviceGetAttribute(&value, attribute, device)); \
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
