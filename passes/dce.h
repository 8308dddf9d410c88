// dce: removes the nodes that reach no graph output (graph inputs stay: they are the graph's
// interface), so that fusion never prices or emits dead work. Runs last: every rewrite
// before it may leave nodes behind.
#ifndef KILN_PASSES_DCE_H_
#define KILN_PASSES_DCE_H_

#include "passes/pass.h"

namespace kiln {

class Dce : public Pass {
 public:
  const char* name() const override { return "dce"; }
  const char* summary() const override { return "remove nodes that reach no output"; }
  absl::StatusOr<bool> Run(Graph& graph) override;
};

}  // namespace kiln

#endif  // KILN_PASSES_DCE_H_
