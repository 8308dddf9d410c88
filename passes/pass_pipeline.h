// PassPipeline runs passes in order and does, for every pass, what passes must not do
// themselves: skip it when KILN_DISABLE_PASSES names it (an unknown name is an error that
// lists the passes), time it, verify the graph after it (DebugOptions::verify, on by
// default; a pass that breaks the graph is a compiler bug and aborts), dump the graph after
// it when it changed (KILN_DUMP=passes, with its time), record which nodes it removed and
// what holds their values now (`kiln dump --why` on an input node a pass removed), and offer
// each intermediate graph to an observer (`kiln dump --after`).
#ifndef KILN_PASSES_PASS_PIPELINE_H_
#define KILN_PASSES_PASS_PIPELINE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/base/debug_options.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln {

// A node a pass removed. `now` names the node its users read instead after the pass (a
// no-op cast: its operand; a CSE duplicate: the node kept), empty when no user is left (dead,
// or folded into a user that was rewritten too). A node whose name a replacement took over
// (decompose keeps the composite's name on its result) is not listed: the name still answers.
struct RemovedNode {
  std::string name;
  std::string now;
};

struct PassRecord {
  std::string name;
  bool ran = false;  // false when disabled
  bool changed = false;
  double ms = 0;
  std::vector<RemovedNode> removed;
  std::vector<PassDecision> decisions;  // Pass::TakeDecisions after the run
};

class PassPipeline {
 public:
  void Add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

  // Called after every pass that ran, with the pass's record and the graph after it.
  using Observer = std::function<void(const PassRecord&, const Graph&)>;

  absl::StatusOr<std::vector<PassRecord>> Run(Graph& graph, const DebugOptions& options,
                                              const Observer& observer = nullptr) const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

// The default pipeline (passes/default_pipeline.cc): the table of contents of kiln's
// graph-level optimisation, in order.
PassPipeline DefaultPipeline();
// The names of every pass of the pipelines above, sorted (what KILN_DISABLE_PASSES accepts).
std::vector<std::string> KnownPassNames();

}  // namespace kiln

#endif  // KILN_PASSES_PASS_PIPELINE_H_
