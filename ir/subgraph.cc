#include "ir/subgraph.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/base/status.h"

namespace kiln {

absl::StatusOr<std::unique_ptr<Graph>> ExtractSubgraph(const Graph& graph,
                                                       const std::vector<Node*>& nodes,
                                                       const std::vector<Node*>& inputs,
                                                       const std::vector<Node*>& outputs) {
  auto sub = std::make_unique<Graph>(graph.name());
  absl::flat_hash_map<const Node*, Node*> map;
  for (const Node* in : inputs) {
    KILN_ASSIGN_OR_RETURN(map[in], sub->AddInput(in->name(), in->dtype(), in->shape()));
  }
  absl::flat_hash_set<const Node*> members(nodes.begin(), nodes.end());
  for (Node* n : graph.PostOrder()) {
    if (!members.contains(n) || map.contains(n)) continue;
    std::vector<Node*> operands;
    for (const Node* o : n->operands()) {
      auto it = map.find(o);
      if (it == map.end()) {
        if (o->op() != OpKind::kConstant) {
          return absl::InvalidArgumentError(absl::StrCat(
              "subgraph: ", n->name(), " reads ", o->name(), ", which is neither a member nor an input"));
        }
        KILN_ASSIGN_OR_RETURN(Node * c, sub->AddConstant(o->name(), *o->value()));
        it = map.emplace(o, c).first;
      }
      operands.push_back(it->second);
    }
    if (n->op() == OpKind::kConstant) {
      KILN_ASSIGN_OR_RETURN(map[n], sub->AddConstant(n->name(), *n->value()));
    } else if (n->op() == OpKind::kInput) {
      KILN_ASSIGN_OR_RETURN(map[n], sub->AddInput(n->name(), n->dtype(), n->shape()));
    } else {
      KILN_ASSIGN_OR_RETURN(map[n], sub->AddNode(n->op(), operands, n->attrs(), n->name()));
    }
  }
  for (const Node* out : outputs) {
    auto it = map.find(out);
    if (it == map.end()) {
      return absl::InvalidArgumentError(absl::StrCat("subgraph: output ", out->name(), " is not a member"));
    }
    KILN_RETURN_IF_ERROR(sub->AddOutput(it->second));
  }
  return sub;
}

}  // namespace kiln
