// `kiln bench`'s measurement (METHOD: count bytes and FLOPs first, measure the copy bandwidth
// and the matmul rate in the same process, report time against that floor).
//   copy bandwidth  median over 20 device-to-device copies of 1 GiB (read + write counted),
//                   after 3 warm-ups
//   matmul rate     median over 10 bf16 8192^3 cuBLASLt products (only for graphs with matmuls)
//   floor           max(compulsory bytes / copy bandwidth, matmul FLOPs / matmul rate);
//                   compulsory bytes are the graph's inputs and outputs
//   same-size copy  median of `reps` device-to-device copies of half the compulsory bytes (so
//                   that one copy moves them all), under the same L2 policy: the time one launch
//                   moving these bytes takes here, its latency and ramp included (the floor
//                   leaves them out)
//   graph time      median of `reps` runs (CUDA events around Run), after 5 warm-ups; random
//                   inputs (seed 1, never zeros)
//   step times      median over `reps` runs with an event after every step
//   cuda graph      (--cuda-graph) median of `reps` runs of Executable::RunGraph on the same
//                   buffers after 5 warm-ups (the first captures): one graph launch a run
//   launches/run    the host's launch calls per stream run: kernels, cuBLASLt calls, copies
//   L2 policy       warm (the default): repetitions follow each other, so a graph whose bytes fit
//                   in L2 runs from it; flushed: before every repetition of every measurement
//                   above (warm-ups included), a kernel reads a 256 MiB buffer (the size triton's
//                   do_bench uses) on the timed stream, outside the timed region, so every
//                   repetition starts with a cold and clean L2. Reading, not writing: a buffer
//                   set with memset leaves up to an L2 of dirty lines that the timed work then
//                   writes back (measured: a 67 MB column sum took 43 us for a 22 us floor)
#ifndef KILN_TOOLS_BENCH_FLOOR_H_
#define KILN_TOOLS_BENCH_FLOOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "api/runtime.h"

namespace kiln {

struct BenchStep {
  int region = -1;  // the FusionPlan region (kiln dump --measured sums steps per region)
  std::string label;
  std::string kind;  // kernel name, "cublasLt" or "copy"
  double predicted_us = 0, measured_us = 0;
  int64_t bytes = 0;
  double flops = 0;
};

// The copy-bandwidth measurement: the median of this many copies of this many bytes.
inline constexpr int64_t kCopyBandwidthBytes = int64_t{1} << 30;
inline constexpr int kCopyBandwidthReps = 20;

struct BenchOptions {
  int reps = 50;
  bool flush_l2 = false;
  bool cuda_graph = false;  // also time the run replayed as a CUDA graph
};

struct BenchReport {
  std::string graph, device, arch;
  int driver_version = 0;
  int reps = 0;
  bool l2_flushed = false;
  double copy_gbps = 0;
  double matmul_tflops = 0;  // 0 when not measured
  int64_t compulsory_bytes = 0;
  double flops = 0;
  double floor_us = 0, graph_us = 0, predicted_us = 0;
  LaunchCounts launches;     // per stream run
  double cuda_graph_us = 0;  // 0 when not measured
  // One device-to-device copy of compulsory_bytes / 2 (so that it moves the compulsory bytes),
  // timed as the graph is: what a kernel launch moving these bytes costs on this GPU, launch
  // latency and ramp included. Below ~100 MB it sits well above floor_us (H200, L2 flushed:
  // 0.65 of the floor at 51 MB, 0.85 at 134 MB; bench/results/2026-11-28-session26.md).
  double same_size_copy_us = 0;
  std::vector<BenchStep> steps;

  double floor_ratio() const { return graph_us > 0 ? floor_us / graph_us : 0; }
  const char* l2_policy() const { return l2_flushed ? "flushed" : "warm"; }
  std::string ToText() const;
  std::string ToJson() const;
};

absl::StatusOr<BenchReport> BenchExecutable(Executable& executable, const Graph& graph, const BenchOptions& options);

// Median device-to-device copy bandwidth in GB/s (bytes read + written per second).
absl::StatusOr<double> MeasureCopyBandwidth(bool flush_l2 = false, int64_t bytes = kCopyBandwidthBytes,
                                            int reps = kCopyBandwidthReps);

}  // namespace kiln

#endif  // KILN_TOOLS_BENCH_FLOOR_H_
