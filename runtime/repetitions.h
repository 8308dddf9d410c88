// repetitions.h: timed repetitions of GPU work under one L2 policy, for `kiln bench` and the
// autotuner alike (METHOD: one harness, one L2 policy for everything compared).
//
// Flushing, each repetition is preceded by a kernel that reads a kL2FlushBytes buffer (the size
// triton's do_bench uses) outside the timed region, so every repetition starts with a cold and
// clean L2; with a warm L2 the lead is a short spin instead. Either lead keeps the GPU busy
// while the host enqueues the timed work.
#ifndef KILN_RUNTIME_REPETITIONS_H_
#define KILN_RUNTIME_REPETITIONS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/base/status.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"

namespace kiln {

// The bytes read before each repetition when flushing L2: triton's do_bench size.
inline constexpr int64_t kL2FlushBytes = int64_t{256} << 20;
// The bench's two kernels, as PTX (the driver compiles it; no NVRTC): the flush,
// kiln_l2_flush_read(p, n, sink), which reads n 16-byte words of p with ld.global.cg,
// grid-stride, and stores their xor to sink only if it equals a value a zeroed buffer never
// gives (so the loads cannot be removed); and kiln_spin(ns), which waits ns nanoseconds on
// the global timer (the lead before each repetition when the L2 stays warm).
const char* BenchKernelsPtx();

// The median of `v` (0 when empty).
double Median(std::vector<double> v);

// Every measurement's repetitions, under one L2 policy: when flushing, each repetition is
// preceded by the flush kernel reading a kL2FlushBytes buffer (on the legacy stream, which the
// timed work runs on too) outside its timed region, so that it starts with a cold L2 holding no
// dirty lines.
class Repetitions {
 public:
  // The lead kernels loaded; with `flush_l2`, the flush buffer allocated (kL2FlushBytes).
  static absl::StatusOr<Repetitions> Create(bool flush_l2);

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
  absl::Status Flush() const;
  absl::Status Spin() const;

  static constexpr unsigned long long kLeadNs = 50000;
  const CudaDriver* cu_ = nullptr;
  DeviceBuffer flush_;  // empty: warm L2
  std::shared_ptr<CUmod_st> module_;
  CUfunction flush_kernel_ = nullptr;
  CUfunction spin_kernel_ = nullptr;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_REPETITIONS_H_
