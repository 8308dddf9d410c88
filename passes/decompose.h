// decompose: rewrites composite ops into primitives, so that fusion sees one vocabulary and
// treats a hand-decomposed LayerNorm (as ONNX exporters write it) exactly like the composite.
// The decompositions are written to coincide with the exporters' spellings after
// canonicalize (see tests/passes/decompose_test.cc, which checks that examples/layernorm and
// examples/layernorm_decomposed become the same graph):
//   softmax(x)     m = max(x); d = x - m; e = exp(d); y = e / sum(e)
//   log_softmax(x) m = max(x); d = x - m; y = d - log(sum(exp(d)))
//   layer_norm     mu = mean(x); d = x - mu; v = mean(d*d); y = d * rsqrt(v + eps) [* w] [+ b]
//   rms_norm       y = x * rsqrt(mean(x*x) + eps) [* w]
//   gelu           y = x * 0.5 * (1 + erf(x * (1/sqrt 2)))
//   gelu_tanh      y = x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x*x*x)))
//   silu           y = x * sigmoid(x)
//   cross_entropy  lse = log(sum(exp(x - m))) + m; pick = sum(where(iota == t, x, 0));
//                  l = where(t != ignore, lse - pick, 0); mean = sum(l) / sum(t != ignore)
// Over f16/bf16, softmax, log_softmax, the norms and cross_entropy are written in f32 between
// a cast of each 16-bit operand up and a cast of the result down, so their statistics are f32
// wherever a region boundary stores them (decompose.cc says why); a graph that spells them
// out in 16-bit ops keeps its own dtypes. Reductions keep dims where the result is broadcast
// back over the row. Not decomposed: attention (matched as a whole by match_attention) and
// dropout (its RNG is one op).
// Where it runs: after the first canonicalize and after match_attention (which matches on the
// composite softmax, so attention written out must be matched before its softmax goes), and
// before the second canonicalize, constant_fold and cse, which fold the scalar constants and
// merge the duplicate work the decompositions write.
#ifndef KILN_PASSES_DECOMPOSE_H_
#define KILN_PASSES_DECOMPOSE_H_

#include "passes/pass.h"

namespace kiln {

class Decompose : public Pass {
 public:
  const char* name() const override { return "decompose"; }
  const char* summary() const override {
    return "rewrite softmax, norms, gelu, silu and cross_entropy into primitives";
  }
  absl::StatusOr<bool> Run(Graph& graph) override;
};

}  // namespace kiln

#endif  // KILN_PASSES_DECOMPOSE_H_
