// lower_attention: rewrites into primitives every attention node the tiled attention template
// does not run (AttentionTemplateCovers, passes/fusion/region_kind.h), before fusion, so that
// fusion plans, prices and reports what actually runs: two cuBLASLt matmuls around one row
// kernel over the stored scores. The one place the attention fallback is decided; nothing
// after fusion plans again. For q [.., S, D], k [.., T, D], v [.., T, E]:
//   s = matmul(q, transpose(k)) * scale [+ mask]        (scale 0 means 1/sqrt(D))
//   s = where(col <= row, s, -inf)                      (causal only; iota row/col indices)
//   m = max(s); m0 = where(m == -inf, 0, m); e = exp(s - m0); l = sum(e)
//   y = matmul(e / where(l == 0, 1, l), v)
// The guarded softmax keeps attention's semantics for a fully masked row (zeros, not the
// NaN of 0/0) and is otherwise softmax. Fusion then makes the two matmuls cuBLASLt calls
// (the transpose folded into the first) and the rest one row kernel.
// attention_lse is lowered alike unless its twin (AttentionTwin: an attention of the same q,
// k, mask and attributes) runs in the template, which writes both: from f32 scores (q and
// k cast to f32 before their product),
//   lse = where(l == 0, +inf, m0 + ln(l))               (l summed without keeping the axis)
#ifndef KILN_PASSES_LOWER_ATTENTION_H_
#define KILN_PASSES_LOWER_ATTENTION_H_

#include "passes/pass.h"

namespace kiln {

class LowerAttention : public Pass {
 public:
  const char* name() const override { return "lower_attention"; }
  const char* summary() const override {
    return "rewrite attention the tiled template does not run into matmul, guarded softmax and matmul";
  }
  absl::StatusOr<bool> Run(Graph& graph) override;
};

}  // namespace kiln

#endif  // KILN_PASSES_LOWER_ATTENTION_H_
