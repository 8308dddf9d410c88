// `kiln bench`'s measurement (METHOD: count bytes and FLOPs first, measure the copy bandwidth
// and the matmul rate in the same process, report time against that floor).
//   copy bandwidth  median over 20 device-to-device copies of 1 GiB (read + write counted),
//                   after 3 warm-ups
//   matmul rate     median over 10 bf16 8192^3 cuBLASLt products (only for graphs with matmuls)
//   floor           max(compulsory bytes / copy bandwidth, matmul FLOPs / matmul rate);
//                   compulsory bytes are the graph's inputs and outputs
//   graph time      median of `reps` runs (CUDA events around Run), after 5 warm-ups; random
//                   inputs (seed 1, never zeros)
//   step times      median over `reps` runs with an event after every step
#ifndef KILN_TOOLS_BENCH_FLOOR_H_
#define KILN_TOOLS_BENCH_FLOOR_H_

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

struct BenchReport {
  std::string graph, device, arch;
  int driver_version = 0;
  int reps = 0;
  double copy_gbps = 0;
  double matmul_tflops = 0;  // 0 when not measured
  int64_t compulsory_bytes = 0;
  double flops = 0;
  double floor_us = 0, graph_us = 0, predicted_us = 0;
  std::vector<BenchStep> steps;

  double floor_ratio() const { return graph_us > 0 ? floor_us / graph_us : 0; }
  std::string ToText() const;
  std::string ToJson() const;
};

absl::StatusOr<BenchReport> BenchExecutable(Executable& executable, const Graph& graph, int reps);

// Median device-to-device copy bandwidth in GB/s (bytes read + written per second).
absl::StatusOr<double> MeasureCopyBandwidth(int64_t bytes = int64_t{1} << 30, int reps = 20);

}  // namespace kiln

#endif  // KILN_TOOLS_BENCH_FLOOR_H_
