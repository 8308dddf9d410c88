// constant_fold: evaluates every node whose operands are all constants and whose result is
// small (at most kMaxFoldedElements elements: the scalar subgraphs exporters and decompose
// write, such as sqrt(2) or 1 / sqrt(d)) on the reference interpreter, and replaces it by a
// constant, so that codegen sees literals and fusion never prices a kernel for them. Large
// results stay computed (a folded iota would become a tensor read from memory). An operand
// with no elements counts as a constant: a reduction over an empty axis is its identity (0 for
// a sum, -inf for a max, NaN for a mean, as the interpreter defines them), which no kernel has
// to compute (the reduction templates have no empty space).
// Runs after decompose and the canonicalize behind it (they create these subgraphs) and
// before cse, so that equal folded constants merge.
#ifndef KILN_PASSES_CONSTANT_FOLD_H_
#define KILN_PASSES_CONSTANT_FOLD_H_

#include <cstdint>

#include "passes/pass.h"

namespace kiln {

class ConstantFold : public Pass {
 public:
  static constexpr int64_t kMaxFoldedElements = 64;
  const char* name() const override { return "constant_fold"; }
  const char* summary() const override { return "evaluate small all-constant subgraphs"; }
  absl::StatusOr<bool> Run(Graph& graph) override;
};

}  // namespace kiln

#endif  // KILN_PASSES_CONSTANT_FOLD_H_
