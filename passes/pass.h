// The pass interface. A pass rewrites the graph in place and says whether it changed
// anything; everything around it (verifying, dumping, timing, disabling) is the pipeline's
// job (passes/pass_pipeline.h), so passes stay small and single-purpose.
#ifndef KILN_PASSES_PASS_H_
#define KILN_PASSES_PASS_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace kiln {

class Pass {
 public:
  virtual ~Pass() = default;
  // Short, unique, used by KILN_DISABLE_PASSES and `kiln dump --after`.
  virtual const char* name() const = 0;
  // One line for --help and dumps.
  virtual const char* summary() const = 0;
  // Returns whether the graph changed. An error is a user-visible failure (e.g. a graph the
  // pass cannot handle); a broken invariant is a KILN_CHECK.
  virtual absl::StatusOr<bool> Run(Graph& graph) = 0;
};

}  // namespace kiln

#endif  // KILN_PASSES_PASS_H_
