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
// (x * rsqrt(mean(x^2) + eps) * w) has this form. layer_norm has it too once x is centred:
//
//   A[m, k] = s[m] * g(x[m, k] - mean_m, k) + b(k)
//
// The template centres x itself (each block sums the rows' x over all of K before it converts
// its slice: K more bf16 values of every token row from L2 per block), so the variance and the
// operand see x - mean exactly as the unfused norm does; no rank-1 correction after the
// product, whose cancellation a row with a large mean would amplify. The centring is the
// node sub(x, reduce_mean(x)) over the last axis (x the tensor read, or its float cast), and
// x is then read only through it. An additive per-column term b(k) (layer_norm's bias) is a
// virtual token row of every tile whose operand is b: its product b @ W is added to each
// row's scaled accumulators.
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
  const Node* centred = nullptr;            // sub(x, mean): the operand and statistics read x - mean
  const Node* column_bias = nullptr;        // b(k), added to A after the row scale (a virtual token row)
  MatmulEpilogue epilogue;                  // the matmul, W, bias / residual / activation, output
  int64_t m = 0, n = 0, k = 0;              // token rows, features, reduced extent
  bool w_transposed = false;                // W stored [N, K]

  // "rms-style prologue: 1 row statistic, 1 row factor; W [K, N]; epilogue: bias".
  std::string Summary() const;
  // Token rows of a tile that are not rows of x (the column bias's), and the real ones.
  int VirtualRows() const { return column_bias != nullptr ? 1 : 0; }
};

absl::StatusOr<NormMatmulPlan> AnalyzeNormMatmulPlan(const Region& region);

// The template's launch shape (templates/norm_matmul.cuh NormMatmulShape): token rows and
// features per block, warps (warps_n of them along the features, the rest along k), blocks
// that share one output tile (split, each a contiguous slice of K's 32-column chunks), and
// the chunks of W each warp loads at once (unroll).
struct NormMatmulTiles {
  int tokens = 8, block_n = 256, warps = 4, warps_n = 4, split = 1, unroll = 1;  // tokens: with the virtual rows
  int min_blocks = 0;  // __launch_bounds__'s resident blocks per SM (caps registers; 0: none)
  int f_tiles() const { return block_n / (16 * warps_n); }  // m16 fragments per warp
};
// Accumulators a thread keeps, f_tiles x (tokens / 8) x 4 f32: at most this many; and the
// 32-bit words of W a thread loads at once, unroll x 8 f_tiles: at most this many.
inline constexpr int kNormMatmulAccumulators = 64;
inline constexpr int kNormMatmulLoadWords = 32;
// The dynamic shared memory the template takes (NormMatmulShape::kSmemBytes), its scratch per
// (token tile, feature tile) with split > 1 (kScratchItemBytes), and its blocks.
int64_t NormMatmulSmemBytes(const NormMatmulPlan& plan, const NormMatmulTiles& tiles);
int64_t NormMatmulScratchItemBytes(const NormMatmulPlan& plan, const NormMatmulTiles& tiles);
int64_t NormMatmulBlocks(const NormMatmulPlan& plan, const NormMatmulTiles& tiles);
// Token tiles over M: tokens less the virtual rows of x each (grid x).
int64_t NormMatmulTokenTiles(const NormMatmulPlan& plan, const NormMatmulTiles& tiles);
// Whether the template can run `tiles` on `device` (shapes, registers, shared memory).
FusionDecision NormMatmulTilesFit(const NormMatmulPlan& plan, const NormMatmulTiles& tiles, const DeviceSpec& device);
// The default (shared by the cost model and codegen), from the sweep of
// bench/results/2026-11-27-session15.md: all token rows in one block up to 64; 256 features
// per block, in 4 fragments per warp over 4 warps at 8 tokens, in 2 per warp over 8 warps
// above (1 for a centred plan from 32 tokens: the accumulators' and registers' budget); 128
// bytes of W in flight per thread; and K split over
// enough blocks for about 3.5 per SM (the power of two nearest): W streams near the copy
// bandwidth only with that many loads in flight.
NormMatmulTiles DefaultNormMatmulTiles(const NormMatmulPlan& plan, const DeviceSpec& device);
// The autotuner's candidates: the default first, then narrower feature tiles, half and
// double the split, and other load depths.
std::vector<NormMatmulTiles> CandidateNormMatmulTiles(const NormMatmulPlan& plan, const DeviceSpec& device);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_NORM_MATMUL_PLAN_H_
