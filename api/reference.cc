#include "api/reference.h"

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "ir/interpreter.h"
#include "ir/promote.h"
#include "ir/subgraph.h"

namespace kiln {
namespace {

// Evaluates `plan`'s regions in order; `values` holds every tensor read or written so far.
absl::Status RunRegions(const Graph& g, const FusionPlan& plan, std::map<std::string, Tensor>& values) {
  for (const Node* n : g.PostOrder()) {
    if (n->op() == OpKind::kConstant) values.emplace(n->name(), *n->value());
  }
  for (const Region& r : plan.regions) {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Graph> sub, ExtractSubgraph(g, r.nodes, r.inputs, r.outputs));
    std::map<std::string, Tensor> in;
    for (const Node* n : r.inputs) {
      auto it = values.find(n->name());
      if (it == values.end()) return absl::InternalError(absl::StrCat("region ", r.id, " reads ", n->name(), " unset"));
      in[n->name()] = it->second;
    }
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Graph> promoted, PromoteTo32(*sub));
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> out, Interpret(*promoted, in));
    for (size_t i = 0; i < r.outputs.size(); ++i) values[r.outputs[i]->name()] = std::move(out[i]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> InterpretAsPlanned(const Graph& graph, const FusionPlan& plan,
                                                       const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> values = inputs;
  KILN_RETURN_IF_ERROR(RunRegions(graph, plan, values));
  std::vector<Tensor> outputs;
  for (const Graph::Output& o : graph.outputs()) {
    auto it = values.find(o.node->name());
    if (it == values.end()) return absl::InternalError(absl::StrCat("no region computes output ", o.name));
    outputs.push_back(it->second);
  }
  return outputs;
}

}  // namespace kiln
