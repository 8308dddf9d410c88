// horizontal_matmul: matmuls that share their A operand become one cuBLASLt call.
//
// Q, K and V written as three Linear layers, or SwiGLU's gate and up projections, are several
// matmuls reading one A: A crosses DRAM once per call, every call pays a launch, and a narrow
// N fills the GPU poorly. When every B is a constant (an initializer), this pass joins the
// B's once, at compile time, along N, and rewrites
//
//   y_i = matmul(A, W_i) [+ b_i]    into    f   = matmul(A, concat_N(W_i)) [+ concat(b_i)]
//                                           y_i = slice(f, last axis [o_i, o_i + N_i))
//
// so the consumers read slices of one result. A B stored transposed (transpose(W_i), W_i
// [N_i, K], as torch's Linear keeps it) joins the W_i along their rows, under one transpose
// (cuBLASLt's operand op). Biases join too when any branch has a constant row bias [N_i]
// (cuBLASLt's BIAS epilogue then covers the whole call); a branch without one gets zeros.
// The slices cost nothing where their readers are pointwise, reduction, layout or attention
// regions: those read a slice through their indexing (layout_access.h, attention_plan.h).
//
// A branch stays out, and the pass records why (PassDecision: `kiln dump`, the ledger), when:
//  - its B is not a constant (a graph input): concatenation would copy the weights every run;
//    B batched (rank > 2) is not joined either;
//  - its bias is not a constant: the same copy, for the bias;
//  - its result ends in an epilogue its own call applies for free (a gelu_tanh or relu, a
//    residual add of a tensor not computed from A; matmul_epilogue.h): one call has one
//    epilogue for all of N, so the activation would become a pass of its own over the slice;
//  - its result, directly or through reshapes and transposes of the last two axes, is read by
//    a matmul or is a graph output: cuBLASLt reads and a graph output is a dense buffer, so the
//    slice would be copied;
//  - it is the only eligible branch reading B plain (or transposed): one call has one
//    transpose flag for B.
// A group fuses when two or more branches remain. The matmuls of one A agree on K and dtype
// (the matmul's type rules), so the group's key is A and the B form.
// Runs after cse (two computations of one A are one node by then) and before dce.
#ifndef KILN_PASSES_HORIZONTAL_MATMUL_H_
#define KILN_PASSES_HORIZONTAL_MATMUL_H_

#include <vector>

#include "passes/pass.h"

namespace kiln {

class HorizontalMatmul : public Pass {
 public:
  const char* name() const override { return "horizontal_matmul"; }
  const char* summary() const override {
    return "one matmul on concatenated constant weights for matmuls that share an input";
  }
  absl::StatusOr<bool> Run(Graph& graph) override;
  std::vector<PassDecision> TakeDecisions() override { return std::move(decisions_); }

 private:
  std::vector<PassDecision> decisions_;
};

}  // namespace kiln

#endif  // KILN_PASSES_HORIZONTAL_MATMUL_H_
