// MatmulRunner on a real GPU against a CPU reference in double precision (label gpu; skips
// without a device). Inputs are random non-zero values already rounded to the dtype; D is
// poisoned with 0xFF bytes (NaN in every float type), so an element cuBLASLt never writes
// fails, and the padding between strided output batches must still hold the poison.
// Cases: f32/f16/bf16 x all trans_a/trans_b combinations, odd sizes (7x33x65), vector shapes,
// strided batches with padding, broadcast (stride 0) A or B, bias, residual, both, one larger
// product (256x512x1024), a runner without workspace, plan caching and Run's argument checks.
//
// Tolerance, per element: |got - ref| <= rtol * (sum_k |a||b| + |bias| + |residual|)
// + u * |ref|, with rtol = 1e-4 (f32), 2e-3 (f16), 1.6e-2 (bf16) and u the output's unit
// roundoff (2^-24, 2^-11, 2^-8).
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/dtype.h"
#include "runtime/cuda_driver.h"
#include "runtime/matmul.h"
#include "tests/testing/cu_assert.h"

namespace kiln {
namespace {

constexpr DType kFloatTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

double RelativeTolerance(DType dtype) {
  return dtype == DType::kF32 ? 1e-4 : dtype == DType::kF16 ? 2e-3 : 1.6e-2;
}
double UnitRoundoff(DType dtype) {
  return dtype == DType::kF32   ? std::ldexp(1.0, -24)
         : dtype == DType::kF16 ? std::ldexp(1.0, -11)
                                : std::ldexp(1.0, -8);
}

// Host storage of `dtype` elements.
struct HostTensor {
  DType dtype;
  std::vector<uint8_t> bytes;

  HostTensor(DType t, int64_t elements, uint8_t fill = 0)
      : dtype(t), bytes(static_cast<size_t>(elements * ByteSize(t)), fill) {}
  double Get(int64_t i) const {
    if (dtype == DType::kF32) {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      return f;
    }
    uint16_t bits;
    std::memcpy(&bits, &bytes[i * 2], 2);
    return dtype == DType::kF16 ? HalfBitsToFloat(bits) : BF16BitsToFloat(bits);
  }
  void Set(int64_t i, double value) {
    if (dtype == DType::kF32) {
      float f = static_cast<float>(value);
      std::memcpy(&bytes[i * 4], &f, 4);
      return;
    }
    uint16_t bits = dtype == DType::kF16 ? FloatToHalfBits(static_cast<float>(value))
                                         : FloatToBF16Bits(static_cast<float>(value));
    std::memcpy(&bytes[i * 2], &bits, 2);
  }
  bool IsPoison(int64_t i) const {
    int64_t size = ByteSize(dtype);
    for (int64_t b = 0; b < size; ++b) {
      if (bytes[i * size + b] != 0xFF) return false;
    }
    return true;
  }
};

// Random values in +-[0.125, 1] (never zero), every element.
HostTensor RandomTensor(DType dtype, int64_t elements, std::mt19937& rng) {
  std::uniform_real_distribution<double> magnitude(0.125, 1.0);
  std::bernoulli_distribution negative(0.5);
  HostTensor t(dtype, elements);
  for (int64_t i = 0; i < elements; ++i) t.Set(i, negative(rng) ? -magnitude(rng) : magnitude(rng));
  return t;
}

// Elements spanned by `batch` matrices of `size` elements `stride` apart.
int64_t Span(const MatmulSpec& spec, int64_t size, int64_t stride) {
  return spec.batch == 1 ? size : (spec.batch - 1) * stride + size;
}

class MatmulGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
    cu_ = *LoadCudaDriver();
    CUdevice device = 0;
    CU_ASSERT_OK(cu_->cuDeviceGet(&device, 0));
    CUcontext context = nullptr;
    CU_ASSERT_OK(cu_->cuDevicePrimaryCtxRetain(&context, device));
    CU_ASSERT_OK(cu_->cuCtxSetCurrent(context));
    CU_ASSERT_OK(cu_->cuStreamCreate(&stream_, CU_STREAM_DEFAULT));
    auto runner = MatmulRunner::Create();
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }
  void TearDown() override {
    runner_.reset();
    for (CUdeviceptr p : allocations_) cu_->cuMemFree(p);
    if (stream_ != nullptr) cu_->cuStreamDestroy(stream_);
  }

  // Device copy of `t` (freed in TearDown).
  CUdeviceptr Upload(const HostTensor& t) {
    CUdeviceptr p = 0;
    absl::Status status = [&]() -> absl::Status {
      KILN_CU_RETURN_IF_ERROR(cu_->cuMemAlloc(&p, t.bytes.size()));
      allocations_.push_back(p);
      KILN_CU_RETURN_IF_ERROR(cu_->cuMemcpyHtoD(p, t.bytes.data(), t.bytes.size()));
      return absl::OkStatus();
    }();
    EXPECT_TRUE(status.ok()) << status;
    return p;
  }

  // Runs `spec` on `runner` (the fixture's when null) and compares every element of D with
  // the reference; checks that the padding between output batches keeps its poison.
  void Check(const MatmulSpec& spec, MatmulRunner* runner = nullptr) {
    SCOPED_TRACE(spec.ToString());
    if (runner == nullptr) runner = runner_.get();
    const int64_t m = spec.m, n = spec.n, k = spec.k;
    std::mt19937 rng(static_cast<uint32_t>(m * 131 + n * 17 + k + spec.batch * 7919));
    HostTensor a = RandomTensor(spec.dtype, Span(spec, m * k, spec.stride_a), rng);
    HostTensor b = RandomTensor(spec.dtype, Span(spec, k * n, spec.stride_b), rng);
    HostTensor bias = RandomTensor(spec.dtype, spec.has_bias ? n : 1, rng);
    const int64_t d_elements = Span(spec, m * n, spec.stride_d);
    HostTensor residual = RandomTensor(spec.dtype, spec.has_residual ? d_elements : 1, rng);
    HostTensor d(spec.dtype, d_elements, 0xFF);

    MatmulPointers p;
    p.a = Upload(a);
    p.b = Upload(b);
    p.d = Upload(d);
    if (spec.has_bias) p.bias = Upload(bias);
    if (spec.has_residual) p.residual = Upload(residual);
    if (HasFailure()) return;

    absl::StatusOr<int> id = runner->Prepare(spec);
    ASSERT_TRUE(id.ok()) << id.status();
    absl::Status run = runner->Run(*id, p, stream_);
    ASSERT_TRUE(run.ok()) << run;
    CU_ASSERT_OK(cu_->cuStreamSynchronize(stream_));
    CU_ASSERT_OK(cu_->cuMemcpyDtoH(d.bytes.data(), p.d, d.bytes.size()));

    const double rtol = RelativeTolerance(spec.dtype), u = UnitRoundoff(spec.dtype);
    std::vector<bool> written(static_cast<size_t>(d_elements), false);
    int64_t failures = 0;
    double worst = 0;  // largest error / tolerance
    for (int64_t batch = 0; batch < spec.batch; ++batch) {
      const int64_t a0 = batch * spec.stride_a, b0 = batch * spec.stride_b,
                    d0 = batch * spec.stride_d;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0, scale = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            double x = a.Get(a0 + (spec.trans_a ? kk * m + i : i * k + kk));
            double y = b.Get(b0 + (spec.trans_b ? j * k + kk : kk * n + j));
            sum += x * y;
            scale += std::fabs(x * y);
          }
          const int64_t at = d0 + i * n + j;
          if (spec.has_bias) {
            sum += bias.Get(j);
            scale += std::fabs(bias.Get(j));
          }
          if (spec.has_residual) {
            sum += residual.Get(at);
            scale += std::fabs(residual.Get(at));
          }
          if (spec.relu) sum = std::max(sum, 0.0);
          written[at] = true;
          const double got = d.Get(at);
          const double tolerance = rtol * scale + u * std::fabs(sum);
          const double error = std::fabs(got - sum);
          if (!(error <= tolerance)) {  // NaN (unwritten poison) fails too
            if (++failures <= 5) {
              ADD_FAILURE() << "batch " << batch << " D[" << i << ", " << j << "] = " << got
                            << ", expected " << sum << " (tolerance " << tolerance << ")";
            }
          } else if (tolerance > 0) {
            worst = std::max(worst, error / tolerance);
          }
        }
      }
    }
    EXPECT_EQ(failures, 0) << "of " << spec.batch * m * n << " elements";
    for (int64_t i = 0; i < d_elements; ++i) {
      if (!written[i]) {
        ASSERT_TRUE(d.IsPoison(i)) << "padding element " << i << " of D was written";
      }
    }
    RecordProperty("worst_error_over_tolerance", std::to_string(worst));
  }

  const CudaDriver* cu_ = nullptr;
  CUstream stream_ = nullptr;
  std::unique_ptr<MatmulRunner> runner_;
  std::vector<CUdeviceptr> allocations_;
};

MatmulSpec Spec(DType dtype, int64_t m, int64_t n, int64_t k, bool trans_a = false,
                bool trans_b = false) {
  MatmulSpec spec;
  spec.dtype = dtype;
  spec.m = m;
  spec.n = n;
  spec.k = k;
  spec.trans_a = trans_a;
  spec.trans_b = trans_b;
  return spec;
}

MatmulSpec Batched(DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k) {
  MatmulSpec spec = Spec(dtype, m, n, k);
  spec.batch = batch;
  spec.stride_a = m * k;
  spec.stride_b = k * n;
  spec.stride_d = m * n;
  return spec;
}

TEST_F(MatmulGpuTest, AllTransposeCombinations) {
  for (DType dtype : kFloatTypes) {
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) Check(Spec(dtype, 40, 48, 64, trans_a, trans_b));
    }
  }
}

TEST_F(MatmulGpuTest, OddSizes) {
  for (DType dtype : kFloatTypes) {
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) Check(Spec(dtype, 7, 33, 65, trans_a, trans_b));
    }
  }
}

TEST_F(MatmulGpuTest, VectorShapes) {
  for (DType dtype : kFloatTypes) {
    Check(Spec(dtype, 1, 1, 1));
    Check(Spec(dtype, 1, 64, 128));
    Check(Spec(dtype, 64, 1, 128));
    Check(Spec(dtype, 3, 5, 1));
  }
}

TEST_F(MatmulGpuTest, DenseBatches) {
  for (DType dtype : kFloatTypes) {
    Check(Batched(dtype, 3, 16, 24, 32));
    MatmulSpec spec = Batched(dtype, 5, 7, 33, 65);
    spec.trans_a = true;
    spec.trans_b = true;
    Check(spec);
  }
}

TEST_F(MatmulGpuTest, PaddedStrides) {
  for (DType dtype : kFloatTypes) {
    MatmulSpec spec = Batched(dtype, 3, 16, 24, 32);
    spec.stride_a += 64;
    spec.stride_b += 8;
    spec.stride_d += 40;
    Check(spec);
    spec.trans_b = true;
    Check(spec);
  }
}

TEST_F(MatmulGpuTest, BroadcastStrideZero) {
  for (DType dtype : kFloatTypes) {
    MatmulSpec shared_b = Batched(dtype, 4, 16, 24, 32);  // one weight for every batch
    shared_b.stride_b = 0;
    Check(shared_b);
    shared_b.trans_b = true;
    Check(shared_b);
    MatmulSpec shared_a = Batched(dtype, 4, 16, 24, 32);
    shared_a.stride_a = 0;
    Check(shared_a);
  }
}

TEST_F(MatmulGpuTest, Bias) {
  for (DType dtype : kFloatTypes) {
    MatmulSpec spec = Spec(dtype, 7, 33, 65);
    spec.has_bias = true;
    Check(spec);
    MatmulSpec batched = Batched(dtype, 3, 16, 24, 32);
    batched.trans_b = true;
    batched.has_bias = true;
    Check(batched);
  }
}

TEST_F(MatmulGpuTest, Residual) {
  for (DType dtype : kFloatTypes) {
    MatmulSpec spec = Spec(dtype, 7, 33, 65);
    spec.has_residual = true;
    Check(spec);
    MatmulSpec batched = Batched(dtype, 3, 16, 24, 32);
    batched.stride_d += 8;
    batched.has_residual = true;
    Check(batched);
  }
}

TEST_F(MatmulGpuTest, BiasAndResidual) {
  for (DType dtype : kFloatTypes) {
    MatmulSpec spec = Spec(dtype, 7, 33, 65, /*trans_a=*/true, /*trans_b=*/false);
    spec.has_bias = true;
    spec.has_residual = true;
    Check(spec);
    MatmulSpec batched = Batched(dtype, 2, 32, 64, 48);
    batched.stride_b = 0;
    batched.trans_b = true;
    batched.has_bias = true;
    batched.has_residual = true;
    Check(batched);
  }
}

// cuBLASLt's RELU and RELU_BIAS epilogues: max(A @ B (+ bias) (+ C), 0).
TEST_F(MatmulGpuTest, Relu) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    MatmulSpec spec = Spec(dtype, 67, 40, 96);
    spec.relu = true;
    Check(spec);
    spec.has_bias = true;
    Check(spec);
    spec.has_residual = true;
    Check(spec);
  }
}

TEST_F(MatmulGpuTest, Larger) {
  for (DType dtype : kFloatTypes) {
    MatmulSpec spec = Spec(dtype, 256, 512, 1024, /*trans_a=*/false, /*trans_b=*/true);
    spec.has_bias = true;
    Check(spec);
  }
}

TEST_F(MatmulGpuTest, WithoutWorkspace) {
  auto runner = MatmulRunner::Create(0);
  ASSERT_TRUE(runner.ok()) << runner.status();
  for (DType dtype : kFloatTypes) {
    MatmulSpec spec = Spec(dtype, 64, 96, 128, /*trans_a=*/false, /*trans_b=*/true);
    spec.has_bias = true;
    Check(spec, runner->get());
  }
}

TEST_F(MatmulGpuTest, PrepareCachesPlans) {
  MatmulSpec spec = Spec(DType::kF16, 16, 32, 64);
  absl::StatusOr<int> first = runner_->Prepare(spec);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<int> again = runner_->Prepare(spec);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*first, *again);
  spec.has_bias = true;
  absl::StatusOr<int> other = runner_->Prepare(spec);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(*first, *other);
}

TEST_F(MatmulGpuTest, PrepareRejectsInvalidSpec) {
  absl::StatusOr<int> id = runner_->Prepare(Spec(DType::kI32, 4, 4, 4));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(id.status().message().find("i32 [4x4 @ 4x4]"), std::string::npos) << id.status();
}

TEST_F(MatmulGpuTest, RunRejectsBadArguments) {
  MatmulSpec spec = Spec(DType::kF32, 4, 8, 4);
  spec.has_bias = true;
  absl::StatusOr<int> id = runner_->Prepare(spec);
  ASSERT_TRUE(id.ok()) << id.status();
  std::mt19937 rng(1);
  MatmulPointers p;
  p.a = Upload(RandomTensor(DType::kF32, 64, rng));
  p.b = Upload(RandomTensor(DType::kF32, 64, rng));
  p.d = Upload(RandomTensor(DType::kF32, 64, rng));
  p.bias = Upload(RandomTensor(DType::kF32, 64, rng));
  ASSERT_FALSE(HasFailure());

  EXPECT_EQ(runner_->Run(*id + 1000, p, stream_).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runner_->Run(-1, p, stream_).code(), absl::StatusCode::kInvalidArgument);
  MatmulPointers no_bias = p;
  no_bias.bias = 0;
  absl::Status status = runner_->Run(*id, no_bias, stream_);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("bias"), std::string::npos) << status;
  MatmulPointers extra_residual = p;
  extra_residual.residual = p.d;
  EXPECT_EQ(runner_->Run(*id, extra_residual, stream_).code(), absl::StatusCode::kInvalidArgument);
  MatmulPointers misaligned = p;
  misaligned.a += 4;
  status = runner_->Run(*id, misaligned, stream_);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("16-byte aligned"), std::string::npos) << status;
  MatmulPointers null_d = p;
  null_d.d = 0;
  EXPECT_EQ(runner_->Run(*id, null_d, stream_).code(), absl::StatusCode::kInvalidArgument);
  // The valid call still works after the rejected ones.
  EXPECT_TRUE(runner_->Run(*id, p, stream_).ok());
  CU_ASSERT_OK(cu_->cuStreamSynchronize(stream_));
}

}  // namespace
}  // namespace kiln
