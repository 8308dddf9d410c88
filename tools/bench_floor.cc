#include "tools/bench_floor.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/base/status.h"
#include "ir/interpreter.h"
#include "api/runtime.h"

namespace kiln {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Every measurement's repetitions, under one L2 policy: when flushing, each repetition is
// preceded by the flush kernel reading a kL2FlushBytes buffer (on the legacy stream, which the
// timed work runs on too) outside its timed region, so that it starts with a cold L2 holding no
// dirty lines.
class Repetitions {
 public:
  static absl::StatusOr<Repetitions> Create(bool flush_l2) {
    Repetitions r;
    KILN_ASSIGN_OR_RETURN(r.cu_, LoadCudaDriver());
    CUmodule module;
    KILN_CU_RETURN_IF_ERROR(r.cu_->cuModuleLoadData(&module, BenchKernelsPtx()));
    r.module_ = std::shared_ptr<CUmod_st>(module, [cu = r.cu_](CUmodule m) { cu->cuModuleUnload(m); });
    KILN_CU_RETURN_IF_ERROR(r.cu_->cuModuleGetFunction(&r.spin_kernel_, module, "kiln_spin"));
    if (flush_l2) {
      KILN_ASSIGN_OR_RETURN(r.flush_, DeviceBuffer::Allocate(kL2FlushBytes + 16));
      KILN_CU_RETURN_IF_ERROR(r.cu_->cuMemsetD8(r.flush_.get(), 0, r.flush_.bytes()));
      KILN_CU_RETURN_IF_ERROR(r.cu_->cuModuleGetFunction(&r.flush_kernel_, module, "kiln_l2_flush_read"));
    }
    return r;
  }

  // Runs `body` (which enqueues work on the legacy stream) `reps` times, each after a lead
  // kernel: the flush, or with a warm L2 a kLeadNs spin. Either keeps the GPU busy while the
  // host enqueues the body, so that no timed step includes the host's launch of its kernel
  // onto an idle GPU (a graph's first step once measured 15 us for a 3 us kernel).
  template <typename Body>
  absl::Status Run(int reps, Body body) const {
    for (int i = 0; i < reps; ++i) {
      KILN_RETURN_IF_ERROR(flush_.get() != 0 ? Flush() : Spin());
      KILN_RETURN_IF_ERROR(body());
    }
    return absl::OkStatus();
  }

  // Runs `body` `reps` times with events around it (the flush stays outside them); ms each.
  template <typename Body>
  absl::StatusOr<std::vector<double>> Time(int reps, Body body) const {
    CUevent start, stop;
    KILN_CU_RETURN_IF_ERROR(cu_->cuEventCreate(&start, CU_EVENT_DEFAULT));
    KILN_CU_RETURN_IF_ERROR(cu_->cuEventCreate(&stop, CU_EVENT_DEFAULT));
    std::vector<double> ms;
    absl::Status status = Run(reps, [&]() -> absl::Status {
      KILN_CU_RETURN_IF_ERROR(cu_->cuEventRecord(start, nullptr));
      KILN_RETURN_IF_ERROR(body());
      KILN_CU_RETURN_IF_ERROR(cu_->cuEventRecord(stop, nullptr));
      KILN_CU_RETURN_IF_ERROR(cu_->cuEventSynchronize(stop));
      float t = 0;
      KILN_CU_RETURN_IF_ERROR(cu_->cuEventElapsedTime(&t, start, stop));
      ms.push_back(t);
      return absl::OkStatus();
    });
    cu_->cuEventDestroy(start);
    cu_->cuEventDestroy(stop);
    if (!status.ok()) return status;
    return ms;
  }

  // The median of `reps` timed runs after `warmup` untimed ones, in ms.
  template <typename Body>
  absl::StatusOr<double> MedianMs(int warmup, int reps, Body body) const {
    KILN_RETURN_IF_ERROR(Run(warmup, body));
    KILN_ASSIGN_OR_RETURN(std::vector<double> ms, Time(reps, body));
    return Median(std::move(ms));
  }

 private:
  absl::Status Flush() const {
    CUdeviceptr p = flush_.get(), sink = flush_.get() + kL2FlushBytes;
    unsigned long long words = kL2FlushBytes / 16;
    void* args[] = {&p, &words, &sink};
    KILN_CU_RETURN_IF_ERROR(cu_->cuLaunchKernel(flush_kernel_, 1024, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
    return absl::OkStatus();
  }

  absl::Status Spin() const {
    unsigned long long ns = kLeadNs;
    void* args[] = {&ns};
    KILN_CU_RETURN_IF_ERROR(cu_->cuLaunchKernel(spin_kernel_, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
    return absl::OkStatus();
  }

  static constexpr unsigned long long kLeadNs = 50000;
  const CudaDriver* cu_ = nullptr;
  DeviceBuffer flush_;  // empty: warm L2
  std::shared_ptr<CUmod_st> module_;
  CUfunction flush_kernel_ = nullptr;
  CUfunction spin_kernel_ = nullptr;
};

double StepFlops(const Step& s) {
  if (s.kind != Step::Kind::kMatmul) return 0;
  const MatmulSpec& m = s.matmul.spec;
  return 2.0 * m.m * m.n * m.k * m.batch * s.matmul.calls.size();
}

absl::StatusOr<double> CopyBandwidth(const Repetitions& repetitions, int64_t bytes, int reps) {
  KILN_ASSIGN_OR_RETURN(const CudaDriver* cu, LoadCudaDriver());
  KILN_ASSIGN_OR_RETURN(DeviceBuffer src, DeviceBuffer::Allocate(bytes));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer dst, DeviceBuffer::Allocate(bytes));
  KILN_CU_RETURN_IF_ERROR(cu->cuMemsetD8(src.get(), 0x5A, bytes));
  auto body = [&]() -> absl::Status {
    KILN_CU_RETURN_IF_ERROR(cu->cuMemcpyDtoDAsync(dst.get(), src.get(), bytes, nullptr));
    return absl::OkStatus();
  };
  KILN_ASSIGN_OR_RETURN(double ms, repetitions.MedianMs(3, reps, body));
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

const char* BenchKernelsPtx() {
  return R"(.version 7.0
.target sm_70
.address_size 64

.visible .entry kiln_l2_flush_read(.param .u64 param_p, .param .u64 param_n, .param .u64 param_sink)
{
    .reg .pred %done, %hit;
    .reg .b32 %a<4>, %x, %rtid, %rntid, %rctaid, %rnctaid;
    .reg .b64 %i, %step, %base, %addr, %sink, %n, %t;

    ld.param.u64 %base, [param_p];
    ld.param.u64 %n, [param_n];
    ld.param.u64 %sink, [param_sink];
    mov.u32 %rtid, %tid.x;
    mov.u32 %rntid, %ntid.x;
    mov.u32 %rctaid, %ctaid.x;
    mov.u32 %rnctaid, %nctaid.x;
    mul.wide.u32 %i, %rctaid, %rntid;
    cvt.u64.u32 %t, %rtid;
    add.u64 %i, %i, %t;
    mul.wide.u32 %step, %rnctaid, %rntid;
    mov.u32 %x, 0;
LOOP:
    setp.ge.u64 %done, %i, %n;
    @%done bra END;
    shl.b64 %addr, %i, 4;
    add.u64 %addr, %base, %addr;
    ld.global.cg.v4.u32 {%a0, %a1, %a2, %a3}, [%addr];
    xor.b32 %x, %x, %a0;
    xor.b32 %x, %x, %a1;
    xor.b32 %x, %x, %a2;
    xor.b32 %x, %x, %a3;
    add.u64 %i, %i, %step;
    bra LOOP;
END:
    setp.ne.u32 %hit, %x, 1802071150;
    @%hit bra DONE;
    st.global.u32 [%sink], %x;
DONE:
    ret;
}

.visible .entry kiln_spin(.param .u64 param_ns)
{
    .reg .pred %wait;
    .reg .b64 %t0, %t, %d, %ns;

    ld.param.u64 %ns, [param_ns];
    mov.u64 %t0, %globaltimer;
SPIN:
    mov.u64 %t, %globaltimer;
    sub.u64 %d, %t, %t0;
    setp.lt.u64 %wait, %d, %ns;
    @%wait bra SPIN;
    ret;
}
)";
}

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
      "\"predicted_us\": %.3f, \"floor_ratio\": %.4f, ",
      graph, device, arch, driver_version, reps, l2_policy(), l2_flushed ? kL2FlushBytes : 0, copy_gbps, matmul_tflops,
      compulsory_bytes, flops, floor_us, graph_us, predicted_us, floor_ratio());
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
