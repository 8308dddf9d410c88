#include "passes/cost/device_spec.h"

#include "absl/strings/str_format.h"

namespace kiln {

DeviceSpec H100Spec() {
  DeviceSpec s;
  s.name = "h100";
  s.sm_count = 132;                      // H100 SXM5 datasheet; torch reports 132 on the lent H100
  s.dram_bytes_per_us = 3.0e6;           // 3.0 TB/s device-to-device copy measured on the lent
                                         // H100 (2026-11-13, KINDS.md), ~90% of 3.35 TB/s vendor
  s.sm_bytes_per_us = 30e3;              // estimate: 1.3x an SM's share of the copy bandwidth, drawn
                                         // with 512 threads (2 loads of 16 B each in flight) per SM
  s.l2_bytes = 50LL << 20;               // 50 MB, torch on the lent H100
  s.l2_bytes_per_us = 7e6;               // estimate: ~2.3x the copy bandwidth (published H100
                                         // L2 read bandwidth measurements: 7-10 TB/s)
  s.smem_per_block_bytes = 232448;       // 227 KiB opt-in, CUDA programming guide (sm_90)
  s.smem_per_sm_bytes = 233472;          // 228 KiB per SM (1 KiB of it reserved per block), same guide
  s.registers_per_sm = 65536;            // CUDA programming guide, compute capability 9.0
  s.launch_us = 3.0;                     // chosen: typical gap between back-to-back small
                                         // kernels on Hopper without CUDA graphs (estimate)
  s.grid_sync_us = 1.0;                  // estimate: a global-memory flag round trip (~2 x 0.5 us)
  s.cluster_sync_us = 0.3;               // estimate: a cluster barrier and a distributed shared
                                         // memory read (row_fit.h's SplitInCluster has the runs)
  s.split_latency_us = 2.0;              // fitted on the lent H100 (bench/zoo.py, L2 flushed,
                                         // 2026-11-28, session 22 run 1): the 15 zoo launches that
                                         // split a row or a column tile measured 1.2 to 3.6 us
                                         // above the model without it (median 2.2; two outliers
                                         // +5.1 and +15.5, one -0.6), whatever their split, waves
                                         // or levels, where unsplit launches sit 3-13% below it:
                                         // the merge's first arrival, fence and fold once
  s.lone_block_phase_us = 1.3;           // fitted on the lent H100 (bench/zoo.py, L2 flushed,
                                         // 2026-11-24): softmax over 1024 rows of 32000 bf16,
                                         // rows in registers at 128 registers x 512 threads (one
                                         // block per SM): 56.9 us measured, 46.7 predicted
                                         // without it, over 8 rows per SM
  s.f32_flops_per_us = 60e6;             // 67 TFLOP/s FP32 datasheet (SXM5) x 0.9 (estimate)
  s.sfu_ops_per_us = 132 * 16 * 1.83e3;  // 16 MUFU ops/clk/SM (sm_90 throughput table) at 1830 MHz
  s.index_ops_per_us = 2.0e6;            // fitted on the lent H100 (bench/zoo.py, L2 flushed): the
                                         // one-element-per-thread layout kernels of
                                         // permute_bshd_bhsd_bf16 (6 ops x 67.1M elements, 198.3 us)
                                         // and patchify_vit_f16 (10 ops x 9.63M, 54.2 us), less the
                                         // 3 us launch: 2.06e6 and 1.88e6 ops/us (~15 instructions
                                         // each at 4 warp instructions per clock per SM)
  s.matmul_bf16_flops_per_us = 798e6;    // 8192^3 bf16 matmul measured on the lent H100
  s.matmul_f32_flops_per_us = 50e6;      // FP32 FFMA GEMM, ~75% of CUDA-core peak (estimate)
  s.attention_flops_per_us = 280e6;      // kiln's mma.sync template (templates/attention.cuh) on
                                         // the lent H100, 2026-11-24 (bench/attention.py): 250-300
                                         // TFLOP/s of executed tile FLOPs, bf16, D 64 and 128
  s.wgmma = true;                        // sm_90 (Hopper): wgmma.mma_async
  s.clusters = true;                     // sm_90: thread-block clusters, distributed shared memory
  s.attention_wgmma_flops_per_us = 525e6;  // templates/attention_sm90.cuh's products, with one
                                           // exponential per score at sfu_ops_per_us added
                                           // (kinds::PriceAttention): fitted to 426 TFLOP/s at
                                           // D 128 and 361 at D 64 (S 16384, bf16) on the lent
                                           // H200, 2026-11-26 (bench/results/...-session12)
  s.attention_tma_flops_per_us = 840e6;    // templates/attention_sm90_tma.cuh, priced the same
                                           // way: fitted to 492 us without the mask (32/8 heads,
                                           // S 4096, D 128, bf16; causal 252 us, predicted 276)
                                           // on the lent H200, 2026-11-28 (bench/results/
                                           // 2026-11-28-session27.md)
  s.provenance = "named spec h100 (H100 SXM5 80GB); constants documented in passes/cost/device_spec.cc";
  return s;
}

DeviceSpec H200Spec() {
  DeviceSpec s = H100Spec();             // same GH100 die: SMs, registers, shared memory, clocks
  s.name = "h200";
  s.dram_bytes_per_us = 4.3e6;           // 4.3 TB/s copy measured on the lent H200 (2026-10-28)
  s.l2_bytes = 60LL << 20;               // torch on the lent H200 reported 60 MB
  s.sm_bytes_per_us = H100Spec().sm_bytes_per_us * 4.3 / 3.0;  // the h100 estimate scaled by the
                                         // bandwidth per SM, as the auto spec on the H200 scales it
                                         // (api/compiler.cc): the named spec chose other launches
                                         // than the GPU's own (col_mean over [4096, 11008] f16:
                                         // split 128, measured 201 us, where auto's unsplit tile
                                         // measured 27.3; H200, L2 flushed, session 26 run 1)
  s.matmul_bf16_flops_per_us = 788e6;    // 8192^3 bf16 matmul measured on the lent H200
  s.provenance = "named spec h200 (H200 141GB); constants documented in passes/cost/device_spec.cc";
  return s;
}

absl::StatusOr<DeviceSpec> NamedDeviceSpec(const std::string& name) {
  if (name == "h100") return H100Spec();
  if (name == "h200") return H200Spec();
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown device spec \"%s\"; known specs: h100, h200", name));
}

std::string DeviceSpec::ToString() const {
  return absl::StrFormat(
      "%s: %d SMs, %.2f TB/s, L2 %d MB, launch %.1f us, bf16 matmul %.0f TFLOP/s, row budget %d f32",
      name, sm_count, dram_bytes_per_us / 1e6, l2_bytes >> 20, launch_us,
      matmul_bf16_flops_per_us / 1e6, RowBudgetValues());
}

}  // namespace kiln
