#include "passes/pass_pipeline.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace kiln {
namespace {

void DumpGraph(const DebugOptions& options, const Graph& graph, int index, const PassRecord& pass) {
  WriteDump(options, absl::StrFormat("%s.%02d.%s.kir", graph.name(), index, pass.name), PrintGraph(graph),
            absl::StrFormat("after %s (%.3f ms)", pass.name, pass.ms));
}

// What a pass may remove, taken before it runs: every node's name, the (user, operand
// index) pairs that read it, and the graph outputs. Nodes are immutable once built and only
// Graph::ReplaceOperand (which ReplaceAllUsesWith uses) repoints an operand, so after the pass
// a surviving user's operand at that index is what holds the removed node's value.
class RemovalTracker {
 public:
  explicit RemovalTracker(const Graph& graph) {
    for (const Node* n : graph.nodes()) {
      names_[n->id()] = n->name();
      for (const Node* user : n->users()) {
        for (int i = 0; i < user->num_operands(); ++i) {
          if (user->operand(i) == n) uses_[n->id()].push_back({user->id(), i});
        }
      }
    }
    for (const Graph::Output& out : graph.outputs()) outputs_.push_back(out.node->id());
  }

  std::vector<RemovedNode> Removed(const Graph& graph) const {
    absl::flat_hash_map<int, const Node*> live;
    for (const Node* n : graph.nodes()) live[n->id()] = n;
    std::vector<RemovedNode> removed;
    for (const auto& [id, name] : names_) {
      if (live.contains(id) || graph.FindNode(name) != nullptr) continue;
      RemovedNode r{name, ""};
      for (size_t k = 0; k < outputs_.size() && r.now.empty(); ++k) {
        if (outputs_[k] == id) r.now = graph.outputs()[k].node->name();
      }
      auto uses = uses_.find(id);
      for (size_t u = 0; uses != uses_.end() && u < uses->second.size() && r.now.empty(); ++u) {
        auto user = live.find(uses->second[u].first);
        if (user != live.end()) r.now = user->second->operand(uses->second[u].second)->name();
      }
      removed.push_back(std::move(r));
    }
    return removed;
  }

 private:
  std::map<int, std::string> names_;  // ordered by id: reports follow creation order
  absl::flat_hash_map<int, std::vector<std::pair<int, int>>> uses_;
  std::vector<int> outputs_;
};

}  // namespace

absl::StatusOr<std::vector<PassRecord>> PassPipeline::Run(Graph& graph, const DebugOptions& options,
                                                          const Observer& observer) const {
  std::vector<std::string> known = KnownPassNames();
  for (const auto& pass : passes_) known.push_back(pass->name());
  for (const std::string& name : options.disabled_passes) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::sort(known.begin(), known.end());
      known.erase(std::unique(known.begin(), known.end()), known.end());
      return absl::InvalidArgumentError(absl::StrCat("KILN_DISABLE_PASSES: unknown pass \"", name,
                                                     "\"; valid names are ", absl::StrJoin(known, ", ")));
    }
  }
  // The graph a user brings is verified before any pass runs: an invalid one (no outputs, a
  // shape that disagrees) is their error, reported as such, not a pass's broken invariant.
  if (absl::Status verified = Verify(graph); !verified.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid graph: ", verified.message()));
  }
  std::vector<PassRecord> records;
  int index = 0;
  for (const auto& pass : passes_) {
    ++index;
    PassRecord record;
    record.name = pass->name();
    if (options.disabled_passes.count(record.name)) {
      records.push_back(record);
      continue;
    }
    RemovalTracker tracker(graph);
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> changed = pass->Run(graph);
    record.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
    if (!changed.ok()) {
      return absl::Status(changed.status().code(),
                          absl::StrCat("pass ", record.name, ": ", changed.status().message()));
    }
    record.ran = true;
    record.changed = *changed;
    record.decisions = pass->TakeDecisions();
    if (options.verify) {
      absl::Status verified = Verify(graph);
      // A pass that breaks the graph is a compiler bug, never the user's fault.
      KILN_CHECK(verified.ok()) << "graph invalid after pass " << record.name << ": " << verified;
    }
    if (record.changed) record.removed = tracker.Removed(graph);
    if (record.changed && options.Dumps(DumpKind::kPasses)) DumpGraph(options, graph, index, record);
    if (observer) observer(record, graph);
    records.push_back(record);
  }
  return records;
}

}  // namespace kiln
