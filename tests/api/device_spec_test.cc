// ResolveDeviceSpec and DeviceSpecFromInfo without a GPU: a query result as an H100 SXM5's
// driver reports it becomes a spec close to the named h100; "auto" without a GPU is the named
// h100 spec and says so; unknown names list the known ones.
#include "api/compiler.h"

#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace kiln {
namespace {

DeviceInfo H100Query() {
  DeviceInfo info;
  info.name = "NVIDIA H100 80GB HBM3";
  info.cc_major = 9;
  info.sm_count = 132;
  info.memory_clock_khz = 2619000;  // HBM3 at 2619 MHz on a 5120-bit bus: 3.35 TB/s
  info.memory_bus_width_bits = 5120;
  info.l2_cache_bytes = 50 << 20;
  info.shared_memory_per_block_optin_bytes = 232448;
  info.registers_per_sm = 65536;
  return info;
}

TEST(DeviceSpecFromInfoTest, QueriedFactsAndDerivedBandwidth) {
  DeviceSpec s = DeviceSpecFromInfo(H100Query());
  EXPECT_EQ(s.name, "NVIDIA H100 80GB HBM3 (sm_90)");
  EXPECT_EQ(s.sm_count, 132);
  EXPECT_EQ(s.l2_bytes, 50 << 20);
  EXPECT_EQ(s.smem_per_block_bytes, 232448);
  EXPECT_EQ(s.RowBudgetValues(), H100Spec().RowBudgetValues());
  // 0.9 x 2 x 2619e6 x 640 B = 3.017e12 B/s = 3.017e6 B/us, within 1% of the measured 3.0e6.
  EXPECT_NEAR(s.dram_bytes_per_us, 0.9 * 2 * 2619e6 * 640 / 1e6, 1.0);
  EXPECT_NEAR(s.dram_bytes_per_us / H100Spec().dram_bytes_per_us, 1.0, 0.01);
  EXPECT_DOUBLE_EQ(s.matmul_bf16_flops_per_us, H100Spec().matmul_bf16_flops_per_us);
  EXPECT_NE(s.provenance.find("queried SMs"), std::string::npos) << s.provenance;
  // Half the SMs: half the compute rates.
  DeviceInfo half = H100Query();
  half.sm_count = 66;
  EXPECT_DOUBLE_EQ(DeviceSpecFromInfo(half).f32_flops_per_us, H100Spec().f32_flops_per_us / 2);
}

// Every rate the auto spec does not query comes from the h100 spec: an H100's query prices as
// the named h100 does, field for field (the TMA attention rate was once left at 0, so that
// auto priced attention's TMA tiles at an infinite time).
TEST(DeviceSpecFromInfoTest, AnH100QueryPricesAsTheNamedSpec) {
  const DeviceSpec a = DeviceSpecFromInfo(H100Query()), h = H100Spec();
  EXPECT_EQ(a.sm_count, h.sm_count);
  EXPECT_EQ(a.registers_per_sm, h.registers_per_sm);
  EXPECT_EQ(a.wgmma, h.wgmma);
  EXPECT_EQ(a.clusters, h.clusters);
  for (auto [name, got, want] : std::vector<std::tuple<const char*, double, double>>{
           {"dram_bytes_per_us", a.dram_bytes_per_us, h.dram_bytes_per_us},
           {"sm_bytes_per_us", a.sm_bytes_per_us, h.sm_bytes_per_us},
           {"l2_bytes_per_us", a.l2_bytes_per_us, h.l2_bytes_per_us},
           {"launch_us", a.launch_us, h.launch_us},
           {"grid_sync_us", a.grid_sync_us, h.grid_sync_us},
           {"cluster_sync_us", a.cluster_sync_us, h.cluster_sync_us},
           {"split_latency_us", a.split_latency_us, h.split_latency_us},
           {"lone_block_phase_us", a.lone_block_phase_us, h.lone_block_phase_us},
           {"f32_flops_per_us", a.f32_flops_per_us, h.f32_flops_per_us},
           {"sfu_ops_per_us", a.sfu_ops_per_us, h.sfu_ops_per_us},
           {"index_ops_per_us", a.index_ops_per_us, h.index_ops_per_us},
           {"matmul_bf16_flops_per_us", a.matmul_bf16_flops_per_us, h.matmul_bf16_flops_per_us},
           {"matmul_f32_flops_per_us", a.matmul_f32_flops_per_us, h.matmul_f32_flops_per_us},
           {"attention_flops_per_us", a.attention_flops_per_us, h.attention_flops_per_us},
           {"attention_wgmma_flops_per_us", a.attention_wgmma_flops_per_us, h.attention_wgmma_flops_per_us},
           {"attention_tma_flops_per_us", a.attention_tma_flops_per_us, h.attention_tma_flops_per_us}}) {
    EXPECT_GT(got, 0) << name;
    EXPECT_NEAR(got / want, 1.0, 0.01) << name;
  }
}

TEST(ResolveDeviceSpecTest, NamedAutoAndUnknown) {
  EXPECT_EQ(ResolveDeviceSpec("h200")->name, "h200");
  absl::StatusOr<DeviceSpec> bad = ResolveDeviceSpec("a100");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("h100, h200, or auto"), std::string::npos) << bad.status();
  absl::StatusOr<DeviceSpec> automatic = ResolveDeviceSpec("auto");
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  if (DeviceCount() == 0) {
    EXPECT_EQ(automatic->name, "h100 (auto: no GPU)");
    EXPECT_EQ(automatic->sm_count, H100Spec().sm_count);
  } else {
    EXPECT_NE(automatic->provenance.find("auto: device 0"), std::string::npos) << automatic->provenance;
  }
}

}  // namespace
}  // namespace kiln
