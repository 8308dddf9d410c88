#include "tools/bench_floor.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/base/status.h"
#include "ir/interpreter.h"
#include "api/runtime.h"
#include "runtime/repetitions.h"

namespace kiln {
namespace {

double StepFlops(const Step& s) {
  if (s.kind != Step::Kind::kMatmul) return 0;
  const MatmulSpec& m = s.matmul.spec;
  return 2.0 * m.m * m.n * m.k * m.batch * s.matmul.calls.size();
}

// The median time in ms of one device-to-device copy of `bytes` (read once, written once), after
// 3 warm-ups, under `repetitions`' L2 policy.
absl::StatusOr<double> CopyMs(const Repetitions& repetitions, int64_t bytes, int reps) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  KILN_ASSIGN_OR_RETURN(DeviceBuffer src, DeviceBuffer::Allocate(bytes));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dst, DeviceBuffer::Allocate(bytes));
  KILN_CU_RETURN_IF_ERROR(cu->cuMemsetD8(src.get(), 0x5A, bytes));
  auto body = [&]() -> absl::Status {
    KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyDtoDAsync(dst.get(), src.get(), bytes, nullptr));
    return absl::OkStatus();
  };
  return repetitions.MedianMs(3, reps, body);
}

absl::StatusOr<double> CopyBandwidth(const Repetitions& repetitions, int64_t bytes, int reps) {
  KILN_ASSIGN_OR_RETURN(double ms, CopyMs(repetitions, bytes, reps));
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

absl::StatusOr<double> MeasureMatmulTflops(const Repetitions& reps) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  const int64_t n = 8192;
  MatmulSpec spec;
  spec.dtype = DType::kBF16;
  spec.m = spec.n = spec.k = n;
  KILN_ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::Allocate(n * n * 2));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(n * n * 2));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::Allocate(n * n * 2));
  // 0x3C00 in every half-word: bf16 1.0078125, finite and not zero.
  KILN_CU_RETURN_IF_ERROR(cu->cuMemsetD8(a.get(), 0x3C, n * n * 2));
  KILN_CU_RETURN_IF_ERROR(cu->cuMemsetD8(b.get(), 0x3C, n * n * 2));
  KILN_ASSIGN_OR_RETURN(auto runner, MatmulRunner::Create());
  KILN_ASSIGN_OR_RETURN(int plan, runner->Prepare(spec));
  MatmulPointers ptrs{a.get(), b.get(), d.get()};
  KILN_ASSIGN_OR_RETURN(double ms, reps.MedianMs(3, 10, [&] { return runner->Run(plan, ptrs, nullptr); }));
  return 2.0 * n * n * n / (ms * 1e-3) / 1e12;
}

}  // namespace

absl::StatusOr<double> MeasureCopyBandwidth(bool flush_l2, int64_t bytes, int reps) {
  KILN_ASSIGN_OR_RETURN(Repetitions repetitions, Repetitions::Create(flush_l2));
  return CopyBandwidth(repetitions, bytes, reps);
}

absl::StatusOr<BenchReport> BenchExecutable(Executable& exe, const Graph& graph, const BenchOptions& options) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  KILN_ASSIGN_OR_RETURN(Repetitions repetitions, Repetitions::Create(options.flush_l2));
  const Program& p = exe.program();
  const int reps = options.reps;
  BenchReport r;
  r.graph = p.graph_name;
  r.arch = p.arch;
  r.reps = reps;
  r.l2_flushed = options.flush_l2;
  KILN_ASSIGN_OR_RETURN(DeviceInfo info, QueryDevice(0));
  r.device = info.name;
  cu->cuDriverGetVersion(&r.driver_version);
  r.compulsory_bytes = p.CompulsoryBytes();
  for (const Step& s : p.steps) r.flops += StepFlops(s);

  // Inputs on the device, outputs allocated; one checked run first.
  std::map<std::string, Tensor> host = RandomInputs(graph, 1);
  std::vector<DeviceBuffer> memory;
  std::vector<DeviceTensor> in, out;
  for (const Node* n : graph.inputs()) {
    const Tensor& t = host.at(n->name());
    KILN_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(t.num_bytes()));
    if (t.num_bytes() > 0) KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyHtoD(b.get(), t.data(), t.num_bytes()));
    in.push_back({b.get(), t.dtype(), t.shape()});
    memory.push_back(std::move(b));
  }
  for (int id : p.outputs) {
    const Buffer& o = p.buffers[id];
    KILN_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(o.bytes));
    out.push_back({b.get(), o.dtype, o.shape});
    memory.push_back(std::move(b));
  }
  KILN_ASSIGN_OR_RETURN(double graph_ms, repetitions.MedianMs(5, reps, [&] { return exe.Run(in, out, nullptr); }));
  r.graph_us = graph_ms * 1e3;
  r.launches = CountLaunches(p);
  if (options.cuda_graph) {
    KILN_ASSIGN_OR_RETURN(double replay_ms,
                          repetitions.MedianMs(5, reps, [&] { return exe.RunGraph(in, out, nullptr); }));
    r.cuda_graph_us = replay_ms * 1e3;
  }
  std::vector<std::vector<double>> per_step(p.steps.size());
  KILN_RETURN_IF_ERROR(repetitions.Run(reps, [&]() -> absl::Status {
    KILN_ASSIGN_OR_RETURN(std::vector<double> step_ms, exe.RunTimingSteps(in, out, nullptr));
    for (size_t s = 0; s < step_ms.size(); ++s) per_step[s].push_back(step_ms[s]);
    return absl::OkStatus();
  }));
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const Step& step = p.steps[s];
    BenchStep b;
    b.region = step.region;
    b.label = step.label;
    b.kind = step.kind == Step::Kind::kKernel ? step.kernel.name
             : step.kind == Step::Kind::kMatmul ? "cublasLt" : "copy";
    b.predicted_us = step.predicted_us;
    b.measured_us = Median(per_step[s]) * 1e3;
    b.bytes = step.bytes;
    b.flops = StepFlops(step);
    r.predicted_us += step.predicted_us;
    r.steps.push_back(b);
  }
  memory.clear();
  KILN_ASSIGN_OR_RETURN(r.copy_gbps, CopyBandwidth(repetitions, kCopyBandwidthBytes, kCopyBandwidthReps));
  if (r.compulsory_bytes >= 2) {
    KILN_ASSIGN_OR_RETURN(const double copy_ms, CopyMs(repetitions, r.compulsory_bytes / 2, reps));
    r.same_size_copy_us = copy_ms * 1e3;
  }
  if (r.flops > 0) {
    KILN_ASSIGN_OR_RETURN(r.matmul_tflops, MeasureMatmulTflops(repetitions));
  }
  double memory_us = r.compulsory_bytes / (r.copy_gbps * 1e3);
  double compute_us = r.matmul_tflops > 0 ? r.flops / (r.matmul_tflops * 1e6) : 0;
  r.floor_us = std::max(memory_us, compute_us);
  return r;
}

std::string BenchReport::ToText() const {
  const std::string l2 = l2_flushed ? absl::StrFormat("flushed before each (%d MiB read)", kL2FlushBytes >> 20)
                                    : "warm (not flushed between runs)";
  std::string s = absl::StrFormat("bench %s on %s (%s, driver %d), median of %d runs, L2 %s\n", graph, device, arch,
                                  driver_version, reps, l2);
  absl::StrAppendFormat(&s, "  %-4s %-58s %10s %10s %12s %9s %7s\n", "step", "what", "pred us", "meas us", "bytes",
                        "GB/s", "%copy");
  for (size_t i = 0; i < steps.size(); ++i) {
    const BenchStep& b = steps[i];
    double gbps = b.measured_us > 0 ? b.bytes / (b.measured_us * 1e3) : 0;
    std::string what = b.label.size() > 58 ? b.label.substr(0, 55) + "..." : b.label;
    absl::StrAppendFormat(&s, "  %-4d %-58s %10.2f %10.2f %12d %9.0f %6.0f%%\n", i, what, b.predicted_us, b.measured_us,
                          b.bytes, gbps, 100 * gbps / copy_gbps);
  }
  absl::StrAppendFormat(&s, "copy bandwidth %.0f GB/s", copy_gbps);
  if (matmul_tflops > 0) absl::StrAppendFormat(&s, ", bf16 matmul %.0f TFLOP/s", matmul_tflops);
  absl::StrAppendFormat(&s, "\ncompulsory bytes %d, FLOPs %.3g, floor %.2f us\n", compulsory_bytes, flops, floor_us);
  absl::StrAppendFormat(&s, "graph: %.2f us measured, %.2f us predicted; floor / time = %.2f\n", graph_us,
                        predicted_us, floor_ratio());
  if (same_size_copy_us > 0) {
    absl::StrAppendFormat(&s, "same-size copy: %.2f us (the compulsory bytes, half read and half written, by one "
                          "device-to-device copy); copy / time = %.2f\n", same_size_copy_us, same_size_copy_us / graph_us);
  }
  absl::StrAppendFormat(&s, "stream launches: %.2f us per run, %s\n", graph_us, launches.ToString());
  if (cuda_graph_us > 0) {
    absl::StrAppendFormat(&s, "cuda graph:      %.2f us per run, 1 launch (1 CUDA graph); %.2fx the stream's speed\n",
                          cuda_graph_us, graph_us / cuda_graph_us);
  }
  return s;
}

std::string BenchReport::ToJson() const {
  std::string s = absl::StrFormat(
      "{\"graph\": \"%s\", \"device\": \"%s\", \"arch\": \"%s\", \"driver\": %d, \"reps\": %d, \"l2\": \"%s\", "
      "\"l2_flush_bytes\": %d, \"copy_gbps\": %.1f, "
      "\"matmul_tflops\": %.1f, \"compulsory_bytes\": %d, \"flops\": %.6g, \"floor_us\": %.3f, \"graph_us\": %.3f, "
      "\"predicted_us\": %.3f, \"floor_ratio\": %.4f, \"same_size_copy_us\": %.3f, ",
      graph, device, arch, driver_version, reps, l2_policy(), l2_flushed ? kL2FlushBytes : 0, copy_gbps, matmul_tflops,
      compulsory_bytes, flops, floor_us, graph_us, predicted_us, floor_ratio(), same_size_copy_us);
  absl::StrAppendFormat(&s,
                        "\"launches_per_run\": {\"kernels\": %d, \"library_calls\": %d, \"copies\": %d, "
                        "\"total\": %d}, ",
                        launches.kernels, launches.library_calls, launches.copies, launches.total());
  if (cuda_graph_us > 0) {
    absl::StrAppendFormat(&s, "\"cuda_graph_us\": %.3f, \"cuda_graph_launches_per_run\": 1, ", cuda_graph_us);
  } else {
    s += "\"cuda_graph_us\": null, ";
  }
  s += "\"steps\": [";
  for (size_t i = 0; i < steps.size(); ++i) {
    const BenchStep& b = steps[i];
    std::string label;
    for (char c : b.label) label += (c == '"' || c == '\\') ? ' ' : c;
    absl::StrAppendFormat(&s, "%s\n  {\"region\": %d, \"label\": \"%s\", \"kind\": \"%s\", \"predicted_us\": %.3f, "
                          "\"measured_us\": %.3f, \"bytes\": %d, \"flops\": %.6g}", i ? "," : "", b.region, label, b.kind,
                          b.predicted_us, b.measured_us, b.bytes, b.flops);
  }
  s += "]}\n";
  return s;
}

}  // namespace kiln
