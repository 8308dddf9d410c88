// The pass interface. A pass rewrites the graph in place and says whether it changed
// anything; everything around it (verifying, dumping, timing, disabling) is the pipeline's
// job (passes/pass_pipeline.h), so passes stay small and single-purpose.
#ifndef KILN_PASSES_PASS_H_
#define KILN_PASSES_PASS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/fusion/fusion_decision.h"

namespace kiln {

// A rewrite a pass made or declined, as a value with a reason (the fusion ledger's form), for
// `kiln dump` and the ledger: the nodes it concerns, by their names before the pass.
struct PassDecision {
  std::vector<std::string> nodes;
  FusionDecision decision = FusionDecision::Allow("");
};

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
  // The decisions the last Run made, for passes that weigh a rewrite (the pipeline keeps them
  // in the pass's PassRecord); most passes make none.
  virtual std::vector<PassDecision> TakeDecisions() { return {}; }
};

}  // namespace kiln

#endif  // KILN_PASSES_PASS_H_
