// canonicalize: puts equivalent spellings of a computation into one form, so that later
// passes (decompose, CSE, attention matching, fusion) match one pattern instead of many, and
// the hand-decomposed graphs ONNX exporters write meet the ones kiln's decomposition writes.
//  * axes: negative axes become positive; reduction axes are sorted, and a reduction over
//    axes in several runs becomes one reduction over the trailing axes of its operand
//    transposed to (kept, reduced) when the last run is innermost and long (batch norm's
//    statistics: the transpose moves through pointwise ops to the tensors in memory, which a
//    reduction region reads through it), else one reduction per run (innermost first; f16/bf16
//    are widened to f32 first and narrowed last, so the partial results keep f32), so that every
//    reduction reduces adjacent axes; reduced axes of extent 1 are dropped, and a reduction
//    over nothing but such axes becomes a reshape of its operand (row_sum of [1M, 1]: a view);
//  * a pointwise chain over the whole of a tensor that a reduction reads through a transpose
//    (batch norm's normalisation beside its statistics) is computed in the transposed space and
//    transposed back, so that one row kernel reads the tensor once and stores the result
//    through the inverse transpose;
//  * no-ops fold away: reshape/broadcast_to to the same shape, cast to the same dtype,
//    identity transpose, full slice; reshape(reshape(x)) and transpose(transpose(x)) compose;
//  * exporter spellings: pow(x, 2) -> mul(x, x); pow(x, 0.5) -> sqrt(x);
//    reciprocal(sqrt(x)) -> rsqrt(x); div(a, sqrt(b)) -> mul(a, rsqrt(b));
//    div(1, x) -> reciprocal(x);
//  * a batched matmul of [B*H, M, K] and [B*H, K, N] reshapes of [B, H, ...] tensors (torch's
//    bmm) -> the matmul over [B, H, ...], reshaped to [B*H, M, N].
// Runs first, and again after decompose (which can create foldable pairs).
#ifndef KILN_PASSES_CANONICALIZE_H_
#define KILN_PASSES_CANONICALIZE_H_

#include "passes/pass.h"

namespace kiln {

class Canonicalize : public Pass {
 public:
  const char* name() const override { return "canonicalize"; }
  const char* summary() const override {
    return "normalise axes, fold no-op layout/casts, rewrite exporter spellings";
  }
  absl::StatusOr<bool> Run(Graph& graph) override;
};

}  // namespace kiln

#endif  // KILN_PASSES_CANONICALIZE_H_
