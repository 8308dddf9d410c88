// What kiln needs to know about a GPU, read through the CUDA driver API: the facts the cost
// model and the templates' on-chip budgets are computed from (DESIGN.md §4).
//
#ifndef KILN_RUNTIME_DEVICE_INFO_H_
#define KILN_RUNTIME_DEVICE_INFO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/cuda_driver.h"

namespace kiln {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;                       // "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;         // compute capability, e.g. 9.0
  int sm_count = 0;                       // streaming multiprocessors
  int64_t total_memory_bytes = 0;
  int64_t memory_clock_khz = 0;           // peak memory clock
  int memory_bus_width_bits = 0;
  int64_t l2_cache_bytes = 0;
  int64_t shared_memory_per_block_optin_bytes = 0;  // the most a kernel can opt in to
  int64_t shared_memory_per_sm_bytes = 0;
  int max_threads_per_sm = 0;
  int registers_per_sm = 0;

  int compute_capability() const { return cc_major * 10 + cc_minor; }  // 90 for sm_90
  // Theoretical DRAM bandwidth: 2 transfers per clock (DDR) x clock x bus width in bytes.
  double theoretical_bandwidth_gbps() const {
    return 2.0 * static_cast<double>(memory_clock_khz) * 1e3 * (memory_bus_width_bits / 8.0) / 1e9;
  }
  // Several lines, "name: ...", for logs and `scripts/gpu-check`.
  std::string ToString() const;
};

// Number of CUDA devices; 0 when there is no driver or cuInit fails (no GPU).
int DeviceCount();

// Initializes the driver (cuInit) and reads device `ordinal`.
absl::StatusOr<DeviceInfo> QueryDevice(int ordinal);

}  // namespace kiln

#endif  // KILN_RUNTIME_DEVICE_INFO_H_
