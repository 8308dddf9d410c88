// QueryDevice on a real GPU: the values are the ones the cost model will trust, so check
// they are in a sane range. Skips when there is no device.
#include "runtime/device_info.h"

#include <iostream>

#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(DeviceInfoTest, QueriesEveryDevice) {
  int count = DeviceCount();
  if (count == 0) GTEST_SKIP() << "no CUDA device (or no driver)";
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    absl::StatusOr<DeviceInfo> info = QueryDevice(ordinal);
    ASSERT_TRUE(info.ok()) << info.status();
    std::cout << info->ToString();
    EXPECT_EQ(info->ordinal, ordinal);
    EXPECT_FALSE(info->name.empty());
    EXPECT_GE(info->compute_capability(), 70) << "kiln needs sm_70 or newer";
    EXPECT_GT(info->sm_count, 0);
    EXPECT_GE(info->total_memory_bytes, int64_t{1} << 30);
    EXPECT_GT(info->memory_clock_khz, 0);
    EXPECT_GE(info->memory_bus_width_bits, 64);
    EXPECT_GT(info->theoretical_bandwidth_gbps(), 100.0);
    EXPECT_LT(info->theoretical_bandwidth_gbps(), 100000.0);
    EXPECT_GE(info->l2_cache_bytes, int64_t{1} << 20);
    EXPECT_GE(info->shared_memory_per_block_optin_bytes, 48 * 1024);
    EXPECT_GE(info->shared_memory_per_sm_bytes, info->shared_memory_per_block_optin_bytes);
    EXPECT_GE(info->max_threads_per_sm, 1024);
    EXPECT_GE(info->registers_per_sm, 32 * 1024);
  }
}

TEST(DeviceInfoTest, BadOrdinalNamesTheCall) {
  int count = DeviceCount();
  if (count == 0) GTEST_SKIP() << "no CUDA device (or no driver)";
  absl::StatusOr<DeviceInfo> info = QueryDevice(count + 7);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("cuDeviceGet("), std::string::npos) << info.status();
  EXPECT_NE(info.status().message().find("CUDA_ERROR_INVALID_DEVICE"), std::string::npos)
      << info.status();
}

TEST(DeviceInfoTest, ErrorNamesResult) {
  absl::Status s = CuResultToStatus(CUDA_ERROR_NO_DEVICE, "cuInit(0)", "f.cc", 3);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("cuInit(0) failed: CUDA_ERROR_NO_DEVICE"), std::string::npos) << s;
}

}  // namespace
}  // namespace kiln
