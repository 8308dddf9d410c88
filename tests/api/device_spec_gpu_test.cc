// On a GPU (label gpu; skips without one): "auto" reads the GPU, and on an H100 or H200 the
// result matches the named spec roughly: the SM count exactly, the DRAM bandwidth (0.9 x the
// queried clock x bus, against the copy bandwidth measured on the lent machines) within 15%.
#include "api/compiler.h"

#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(DeviceSpecGpuTest, AutoMatchesTheNamedSpecOfThisGpu) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no GPU";
  absl::StatusOr<DeviceInfo> info = QueryDevice(0);
  ASSERT_TRUE(info.ok()) << info.status();
  absl::StatusOr<DeviceSpec> spec = ResolveDeviceSpec("auto");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->sm_count, info->sm_count);
  EXPECT_EQ(spec->registers_per_sm, info->registers_per_sm);
  std::string named = info->name.find("H200") != std::string::npos   ? "h200"
                      : info->name.find("H100") != std::string::npos ? "h100"
                                                                     : "";
  if (named.empty()) GTEST_SKIP() << info->name << " has no named spec to compare with";
  DeviceSpec want = *NamedDeviceSpec(named);
  EXPECT_EQ(spec->sm_count, want.sm_count) << info->ToString();
  EXPECT_NEAR(spec->dram_bytes_per_us / want.dram_bytes_per_us, 1.0, 0.15) << info->ToString();
  EXPECT_NEAR(static_cast<double>(spec->l2_bytes) / want.l2_bytes, 1.0, 0.15) << info->ToString();
  EXPECT_EQ(spec->RowBudgetValues(), want.RowBudgetValues());
}

}  // namespace
}  // namespace kiln
