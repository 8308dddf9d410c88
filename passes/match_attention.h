// match_attention: finds attention written out by hand or by an exporter and replaces it
// with one attention op, which fusion turns into one tiled kernel that never stores the
// S x T score matrix. The pattern, on composite softmax (so this runs before decompose):
//   s = matmul(q, transpose(k))            (or matmul(q, kt) with kt already [.., D, T]);
//                                          q * c and kt * c (scalar c, no other user) fold
//                                          into the scale: exporters scale each by sqrt(scale)
//   s = s * c  |  s / c                    optional scalar-constant scale
//   s = s + mask                           optional additive mask
//     | where(keep, s, -inf)               optional boolean mask (attend where true)
//     | where(drop, -inf, s)               optional boolean mask (masked_fill: drop where true)
//   p = softmax(s, last axis)
//   y = matmul(p, v)
// A mask that keeps exactly j <= i (a constant lower triangle, or a subgraph of indices that
// passes/diagonal_mask.h proves to be one) becomes causal = true; any other mask becomes the
// attention's additive mask operand. Each matched mask is a decision with its reason
// (`kiln dump`, the ledger's pass_decision records). Every intermediate must have no other user
// (otherwise S x T would still be materialised).
#ifndef KILN_PASSES_MATCH_ATTENTION_H_
#define KILN_PASSES_MATCH_ATTENTION_H_

#include <vector>

#include "passes/pass.h"

namespace kiln {

class MatchAttention : public Pass {
 public:
  const char* name() const override { return "match_attention"; }
  const char* summary() const override {
    return "replace matmul-scale-mask-softmax-matmul chains with one attention op";
  }
  absl::StatusOr<bool> Run(Graph& graph) override;
  std::vector<PassDecision> TakeDecisions() override { return std::move(decisions_); }

 private:
  std::vector<PassDecision> decisions_;
};

}  // namespace kiln

#endif  // KILN_PASSES_MATCH_ATTENTION_H_
