// PassPipeline runs passes in order and does, for every pass, what passes must not do
// themselves: skip it when KILN_DISABLE_PASSES names it, time it, verify the graph after it
// (DebugOptions::verify, on by default), dump the graph after it when it changed
// (KILN_DUMP=passes), and offer each intermediate graph to an observer (`kiln dump --after`).
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

struct PassRecord {
  std::string name;
  bool ran = false;  // false when disabled
  bool changed = false;
  double ms = 0;
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
// What the JIT runs on an attention region's subgraph while there is no attention template.
PassPipeline AttentionFallbackPipeline();

}  // namespace kiln

#endif  // KILN_PASSES_PASS_PIPELINE_H_
