// MatmulSpec::ToString and Validate, and MatmulRunner::Create's failures, without a GPU (label
// unit). The numerics of the runner are checked against a CPU reference in
// matmul_gpu_test.cc.
#include "runtime/matmul.h"

#include <cstdint>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "runtime/cuda_driver.h"

namespace kiln {
namespace {

MatmulSpec Spec(DType dtype, int64_t m, int64_t n, int64_t k) {
  MatmulSpec spec;
  spec.dtype = dtype;
  spec.m = m;
  spec.n = n;
  spec.k = k;
  return spec;
}

// A batched spec with dense strides.
MatmulSpec Batched(DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k) {
  MatmulSpec spec = Spec(dtype, m, n, k);
  spec.batch = batch;
  spec.stride_a = m * k;
  spec.stride_b = k * n;
  spec.stride_d = m * n;
  return spec;
}

// Expects Validate to fail with InvalidArgument and a message containing `text`.
void ExpectInvalid(const MatmulSpec& spec, const std::string& text) {
  absl::Status status = spec.Validate();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << spec.ToString() << ": " << status;
  EXPECT_NE(status.message().find(text), std::string::npos)
      << "expected \"" << text << "\" in: " << status;
}

TEST(MatmulSpecTest, ToStringPlain) {
  EXPECT_EQ(Spec(DType::kF32, 7, 33, 65).ToString(), "f32 [7x65 @ 65x33]");
}

TEST(MatmulSpecTest, ToStringTransposesShowStoredShapes) {
  MatmulSpec spec = Spec(DType::kF16, 2, 3, 4);
  spec.trans_a = true;
  EXPECT_EQ(spec.ToString(), "f16 [4x2^T @ 4x3]");
  spec.trans_a = false;
  spec.trans_b = true;
  EXPECT_EQ(spec.ToString(), "f16 [2x4 @ 3x4^T]");
}

TEST(MatmulSpecTest, ToStringHeaderExample) {
  MatmulSpec spec = Batched(DType::kBF16, 8, 1024, 4096, 4096);
  spec.trans_b = true;
  spec.has_bias = true;
  spec.has_residual = true;
  EXPECT_EQ(spec.ToString(), "bf16 [8 x 1024x4096 @ 4096x4096^T] +bias +residual");
}

TEST(MatmulSpecTest, ActivationEpiloguesShowAndOnlyOneIsValid) {
  MatmulSpec spec = Spec(DType::kBF16, 64, 32, 16);
  spec.has_bias = true;
  spec.relu = true;
  EXPECT_EQ(spec.ToString(), "bf16 [64x16 @ 16x32] +bias relu");
  EXPECT_TRUE(spec.Validate().ok()) << spec.Validate();
  spec.gelu = true;
  absl::Status both = spec.Validate();
  EXPECT_FALSE(both.ok());
  EXPECT_NE(std::string(both.message()).find("one activation epilogue at most"), std::string::npos) << both;
}

TEST(MatmulSpecTest, ToStringShowsNonDenseStrides) {
  MatmulSpec spec = Batched(DType::kF32, 4, 2, 3, 5);
  spec.stride_b = 0;
  EXPECT_EQ(spec.ToString(), "f32 [4 x 2x5 @ 5x3, strides a=10 b=0 d=6]");
  spec.has_bias = true;
  EXPECT_EQ(spec.ToString(), "f32 [4 x 2x5 @ 5x3, strides a=10 b=0 d=6] +bias");
}

TEST(MatmulSpecTest, ToStringIgnoresStridesOfOneBatch) {
  MatmulSpec spec = Spec(DType::kF32, 2, 3, 5);
  spec.stride_a = 99;
  EXPECT_EQ(spec.ToString(), "f32 [2x5 @ 5x3]");
}

TEST(MatmulSpecTest, ValidAccepted) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    EXPECT_TRUE(Spec(dtype, 1, 1, 1).Validate().ok());
    EXPECT_TRUE(Spec(dtype, 7, 33, 65).Validate().ok());
    EXPECT_TRUE(Batched(dtype, 8, 16, 32, 64).Validate().ok());
  }
}

TEST(MatmulSpecTest, BroadcastAndPaddedStridesAccepted) {
  MatmulSpec spec = Batched(DType::kF16, 3, 4, 5, 6);
  spec.stride_a = 0;
  EXPECT_TRUE(spec.Validate().ok()) << spec.Validate();
  spec.stride_b = 0;
  EXPECT_TRUE(spec.Validate().ok()) << spec.Validate();
  spec.stride_a = 4 * 6 + 8;   // padded
  spec.stride_d = 4 * 5 + 12;  // padded
  spec.has_residual = true;
  EXPECT_TRUE(spec.Validate().ok()) << spec.Validate();
}

TEST(MatmulSpecTest, StridesOfOneBatchAreIgnored) {
  MatmulSpec spec = Spec(DType::kF32, 4, 5, 6);
  spec.stride_a = 1;  // smaller than the matrix, but there is no second batch
  spec.stride_d = 0;
  EXPECT_TRUE(spec.Validate().ok()) << spec.Validate();
}

TEST(MatmulSpecTest, NonFloatDTypeRejected) {
  for (DType dtype : {DType::kI32, DType::kI64, DType::kBool}) {
    ExpectInvalid(Spec(dtype, 2, 2, 2), "dtype must be f32, f16 or bf16");
  }
  ExpectInvalid(Spec(DType::kI32, 2, 2, 2), "got i32");
}

TEST(MatmulSpecTest, NonPositiveSizesRejected) {
  ExpectInvalid(Spec(DType::kF32, 0, 2, 2), "m must be positive, got 0");
  ExpectInvalid(Spec(DType::kF32, 2, -1, 2), "n must be positive, got -1");
  ExpectInvalid(Spec(DType::kF32, 2, 2, 0), "k must be positive, got 0");
}

TEST(MatmulSpecTest, BadBatchRejected) {
  MatmulSpec spec = Spec(DType::kF32, 2, 2, 2);
  spec.batch = 0;
  ExpectInvalid(spec, "batch must be at least 1, got 0");
  spec = Batched(DType::kF32, int64_t{1} << 31, 1, 1, 1);
  ExpectInvalid(spec, "exceeds cuBLASLt's int32 batch count");
}

TEST(MatmulSpecTest, NegativeStrideRejected) {
  MatmulSpec spec = Batched(DType::kF32, 2, 2, 3, 4);
  spec.stride_b = -12;
  ExpectInvalid(spec, "stride_b must be non-negative, got -12");
  spec = Spec(DType::kF32, 2, 3, 4);
  spec.stride_a = -1;  // even with one batch
  ExpectInvalid(spec, "stride_a must be non-negative");
}

TEST(MatmulSpecTest, OverlappingStridesRejected) {
  MatmulSpec spec = Batched(DType::kF32, 2, 2, 3, 4);
  spec.stride_a = 7;  // A is 2x4 = 8 elements
  ExpectInvalid(spec, "stride_a = 7 is neither 0 (broadcast) nor at least a's 8 elements");
  spec = Batched(DType::kF32, 2, 2, 3, 4);
  spec.stride_b = 11;  // B is 4x3 = 12 elements
  ExpectInvalid(spec, "stride_b = 11");
  spec = Batched(DType::kF32, 2, 2, 3, 4);
  spec.stride_d = 5;  // D is 2x3 = 6 elements
  ExpectInvalid(spec, "stride_d = 5");
}

TEST(MatmulSpecTest, BroadcastOutputRejected) {
  MatmulSpec spec = Batched(DType::kF32, 2, 2, 3, 4);
  spec.stride_d = 0;
  ExpectInvalid(spec, "stride_d must not be 0 when batch > 1");
}

TEST(MatmulSpecTest, OverflowingSizesRejected) {
  int64_t big = int64_t{1} << 32;
  ExpectInvalid(Spec(DType::kF32, big, 1, big), "matrix a has more than 2^63 elements");
  MatmulSpec spec = Batched(DType::kF32, 4, 1, 1, 1);
  spec.stride_b = std::numeric_limits<int64_t>::max() / 2;
  ExpectInvalid(spec, "batches of b span more than 2^63 elements");
}

TEST(MatmulSpecTest, ErrorNamesTheSpec) {
  MatmulSpec spec = Spec(DType::kBF16, 8, 0, 16);
  absl::Status status = spec.Validate();
  EXPECT_NE(status.message().find("invalid matmul bf16 [8x16 @ 16x0]"), std::string::npos)
      << status;
}

TEST(MatmulRunnerTest, NegativeWorkspaceRejected) {
  auto runner = MatmulRunner::Create(-1);
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kInvalidArgument) << runner.status();
}

// Without a driver Create says so; with one, this thread has no current context yet.
TEST(MatmulRunnerTest, CreateFailsCleanlyWithoutDriverOrContext) {
  auto runner = MatmulRunner::Create();
  ASSERT_FALSE(runner.ok());
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kFailedPrecondition) << runner.status();
  if (HaveGpu()) {
    EXPECT_NE(runner.status().message().find("current CUDA context"), std::string::npos)
        << runner.status();
  }
}

}  // namespace
}  // namespace kiln
