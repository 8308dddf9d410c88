// DeviceSpec: the numbers the cost model prices with. Named specs (`h100`, `h200`) let
// ahead-of-time compiles and tests run without a GPU; api/compiler.h's ResolveDeviceSpec("auto")
// builds one from the GPU in hand (DeviceSpecFromInfo: passes do not depend on the runtime).
// Every constant below says where it came from.
#ifndef KILN_PASSES_COST_DEVICE_SPEC_H_
#define KILN_PASSES_COST_DEVICE_SPEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kiln {

struct DeviceSpec {
  std::string name;
  int sm_count = 0;
  double dram_bytes_per_us = 0;       // achievable (copy) bandwidth, bytes per microsecond
  double sm_bytes_per_us = 0;         // what one SM's blocks draw alone (a few SMs cannot saturate DRAM)
  int64_t l2_bytes = 0;
  double l2_bytes_per_us = 0;         // L2 read bandwidth (a re-read that stays in L2)
  int64_t smem_per_block_bytes = 0;   // opt-in maximum dynamic shared memory per block
  int64_t smem_per_sm_bytes = 0;      // shared memory of one SM (all of its resident blocks)
  int64_t registers_per_sm = 0;       // 32-bit registers
  double launch_us = 0;               // cost of one kernel launch in a stream of launches
  double grid_sync_us = 0;            // blocks of one launch waiting for each other once
  double cluster_sync_us = 0;         // the blocks of one thread-block cluster waiting for each other once
  double split_latency_us = 0;        // a launch whose rows (tiles) are split over blocks: once
  double lone_block_phase_us = 0;     // a block that holds its row on chip alone on its SM: per
                                      // row, the time its load -> reduce -> store phases leave
                                      // the SM's memory pipe idle (other resident blocks hide it)
  double f32_flops_per_us = 0;        // CUDA-core FP32 (FMA counted as 2)
  double sfu_ops_per_us = 0;          // transcendental (MUFU) operations
  double index_ops_per_us = 0;        // 64-bit integer divisions or remainders by a constant (index
                                      // arithmetic of the plain elementwise kernel)
  double matmul_bf16_flops_per_us = 0;  // achievable dense bf16/f16 tensor-core rate
  double matmul_f32_flops_per_us = 0;   // f32 matmul (no TF32)
  double attention_flops_per_us = 0;    // tiled attention forward, bf16/f16 (the mma.sync kernel)
  bool wgmma = false;                   // sm_90a: warpgroup MMA (wgmma); the attention kernel of
                                        // templates/attention_sm90.cuh is a candidate
  double attention_wgmma_flops_per_us = 0;  // that kernel's rate (0 where there is no wgmma)
  double attention_tma_flops_per_us = 0;    // its TMA form's (templates/attention_sm90_tma.cuh)
  bool clusters = false;                // sm_90 and later: thread-block clusters with distributed
                                        // shared memory (a split row's blocks merge through it)
  std::string provenance;

  // Row-on-chip budget of the row-reduction template, in f32 values kept per row: half the
  // register file of one SM, leaving the rest for addressing and the next block.
  int64_t RowBudgetValues() const { return registers_per_sm / 2; }
  std::string ToString() const;
};

DeviceSpec H100Spec();
DeviceSpec H200Spec();
// "h100" or "h200"; the error lists the known names.
absl::StatusOr<DeviceSpec> NamedDeviceSpec(const std::string& name);

}  // namespace kiln

#endif  // KILN_PASSES_COST_DEVICE_SPEC_H_
