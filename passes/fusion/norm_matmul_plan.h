// NormMatmulPlan: the analysis of a norm_matmul region, a row normalisation folded into the
// matmul that reads it (templates/norm_matmul.cuh runs it; issue 16). The region's nodes
// split into the prologue (the members that compute the matmul's A), the matmul, and an
// epilogue that AnalyzeMatmul accepts (bias, residual, gelu_tanh or relu). The prologue must
// have the form
//
//   A[m, k] = s[m] * g(x[m, k], k)
//
// A is flattened through casts and multiplications into factors: those of shape [.., M, 1]
// are the row factors (their product is s), the others multiply into g. Each factor of g is
// an elementwise expression of x (the one tensor of A's shape read from memory), of
// per-column tensors ([K], read from memory) and of scalar literals; each row factor is an
// expression of scalars and of reduce_sum / reduce_mean over the last axis (keep_dims) of
// such expressions of x. Then A @ W = diag(s) (g(x) @ W): one pass over x gives both the
// row sums and the mma operand g, and s scales the f32 accumulators at the end. rms_norm
// (x * rsqrt(mean(x^2) + eps) * w) has this form; layer_norm does not (x - mean needs the
// mean before the operand: a second pass), and is refused with that reason.
#ifndef KILN_PASSES_FUSION_NORM_MATMUL_PLAN_H_
#define KILN_PASSES_FUSION_NORM_MATMUL_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/fusion_decision.h"
#include "passes/fusion/matmul_epilogue.h"
#include "passes/fusion/region.h"

namespace kiln {

struct NormMatmulPlan {
  const Node* x = nullptr;                  // [.., M, K], read from memory
  std::vector<const Node*> operand_factors; // their product g is rounded to the matmul's dtype as the mma operand
  std::vector<const Node*> row_factors;     // their product is s[m]
  std::vector<const Node*> reductions;      // the row statistics, in post order
  std::vector<const Node*> prologue;        // every member computing A, in post order
  MatmulEpilogue epilogue;                  // the matmul, W, bias / residual / activation, output
  int64_t m = 0, n = 0, k = 0;              // token rows, features, reduced extent
  bool w_transposed = false;                // W stored [N, K]

  // "rms-style prologue: 1 row statistic, 1 row factor; W [K, N]; epilogue: bias".
  std::string Summary() const;
};

absl::StatusOr<NormMatmulPlan> AnalyzeNormMatmulPlan(const Region& region);

// The template's launch shape (templates/norm_matmul.cuh NormMatmulShape): token rows and
// features per block, warps, pipeline stages, k16 steps per warp per k tile (a k tile is
// 16 x warps x k_steps columns, at most 256).
struct NormMatmulTiles {
  int tokens = 8, block_n = 32, warps = 4, stages = 4, k_steps = 4;
  int min_blocks = 0;  // __launch_bounds__'s resident blocks per SM (caps registers; 0: none)
  int block_k() const { return 16 * warps * k_steps; }
};
// Accumulators a thread keeps, (block_n / 16) x (tokens / 8) x 4 f32: at most this many.
inline constexpr int kNormMatmulAccumulators = 64;
// The dynamic shared memory the template takes (NormMatmulShape::SmemBytes).
int64_t NormMatmulSmemBytes(const NormMatmulPlan& plan, const NormMatmulTiles& tiles);
int64_t NormMatmulBlocks(const NormMatmulPlan& plan, const NormMatmulTiles& tiles);
// Whether the template can run `tiles` on `device` (shapes, registers, shared memory).
FusionDecision NormMatmulTilesFit(const NormMatmulPlan& plan, const NormMatmulTiles& tiles, const DeviceSpec& device);
// The default (shared by the cost model and codegen): all token rows in one block up to 64;
// the widest feature tile the accumulator budget allows that still gives every SM two blocks
// (W streams from every SM), else 16; 4 warps, 4 stages, k tiles of 256 columns (of K
// rounded up to 64 where K is shorter): 16 KB of W in flight per stage and block at 16 features.
NormMatmulTiles DefaultNormMatmulTiles(const NormMatmulPlan& plan, const DeviceSpec& device);
// The autotuner's candidates: the default first, then other feature tiles, 2 and 8 warps, 3
// and 6 stages, k tiles of a quarter and a half.
std::vector<NormMatmulTiles> CandidateNormMatmulTiles(const NormMatmulPlan& plan, const DeviceSpec& device);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_NORM_MATMUL_PLAN_H_
