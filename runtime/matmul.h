// Matmul steps through cuBLASLt (DESIGN.md §6). A MatmulSpec describes one row-major batched
// product in kiln's terms; MatmulRunner turns it into cuBLASLt descriptors once (picking an
// algorithm with cublasLtMatmulAlgoGetHeuristic) and launches it on a stream.
//
//   D[b] = op(A[b]) · op(B[b]) (+ bias) (+ residual[b])      op(A) is [M, K], op(B) is [K, N]
//
// All matrices are dense row-major in memory. trans_a means A is stored [K, M] (op = transpose),
// trans_b means B is stored [N, K]. Batch b of X starts at X + b * stride_x elements; a stride
// of 0 broadcasts one matrix over the batch. bias is [N], added to every row (cuBLASLt's
// EPILOGUE_BIAS); residual has D's shape and strides (C with beta = 1). A, B, D, bias and
// residual share one dtype (f32, f16 or bf16); arithmetic is f32 (CUBLAS_COMPUTE_32F: no TF32,
// so f32 results agree with the interpreter), scale type f32.
//
// Row-major to cuBLASLt's column-major: D^T = op(B)^T · op(A)^T, so cuBLASLt's "A" is our B
// and its "B" is our A, with m = N, n = M; its bias vector (length m) is then our [N] bias.
#ifndef KILN_RUNTIME_MATMUL_H_
#define KILN_RUNTIME_MATMUL_H_

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/dtype.h"

namespace kiln {

struct MatmulSpec {
  DType dtype = DType::kF32;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;  // elements between batches (0: broadcast)
  bool has_bias = false;
  bool has_residual = false;  // residual uses stride_d
  bool gelu = false;          // D = gelu_tanh(A @ B + bias + C) (cuBLASLt's EPILOGUE_GELU[_BIAS])
  bool relu = false;          // D = max(A @ B + bias + C, 0) (cuBLASLt's EPILOGUE_RELU[_BIAS])
  // The alignment, in bytes, that A, B, D and the residual are promised (a power of two, at
  // most 16): 16 for buffers kiln allocates; less when a call starts inside a buffer at an
  // offset that is not a multiple of 16 bytes (one call per broadcast batch). The bias is
  // always 16-byte aligned.
  int alignment = 16;

  // "bf16 [8 x 1024x4096 @ 4096x4096^T] +bias +residual relu", for dumps and errors.
  std::string ToString() const;
  // Checks sizes, strides and dtype; names the first problem.
  absl::Status Validate() const;
};

struct MatmulPointers {
  CUdeviceptr a = 0, b = 0, d = 0;
  CUdeviceptr bias = 0;      // when spec.has_bias
  CUdeviceptr residual = 0;  // when spec.has_residual
};

// One cuBLASLt handle and workspace; a prepared plan per spec. Not thread-safe: one runner per
// Executable (and stream at a time).
class MatmulRunner {
 public:
  // Creates the cuBLASLt handle and allocates `workspace_bytes` of device memory on the
  // current context.
  static absl::StatusOr<std::unique_ptr<MatmulRunner>> Create(int64_t workspace_bytes = 32 << 20);
  ~MatmulRunner();

  // Builds (and caches) the descriptors and algorithm for `spec`; returns an id for Run.
  absl::StatusOr<int> Prepare(const MatmulSpec& spec);
  // Launches prepared plan `id` on `stream` (asynchronous).
  absl::Status Run(int id, const MatmulPointers& pointers, CUstream stream);

  class Impl;

 private:
  explicit MatmulRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_MATMUL_H_
