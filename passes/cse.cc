#include "passes/cse.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"

namespace kiln {

absl::StatusOr<bool> Cse::Run(Graph& graph) {
  // Key: op, operand ids, attributes text, and for constants dtype + shape + bytes.
  std::map<std::string, Node*> seen;
  bool changed = false;
  for (Node* node : graph.PostOrder()) {
    if (node->op() == OpKind::kInput) continue;
    std::string key = absl::StrCat(OpName(node->op()), "|", node->attrs().ToString(), "|",
                                   DTypeName(node->dtype()), ShapeToString(node->shape()));
    for (Node* operand : node->operands()) absl::StrAppend(&key, "|", operand->id());
    if (const Tensor* t = node->value()) {
      key.append(reinterpret_cast<const char*>(t->data()), t->num_bytes());
    }
    auto [it, inserted] = seen.emplace(std::move(key), node);
    if (inserted) continue;
    graph.ReplaceAllUsesWith(node, it->second);
    changed = true;
  }
  if (changed) graph.RemoveDeadNodes();
  return changed;
}

}  // namespace kiln
