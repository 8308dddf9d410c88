#include "passes/constant_fold.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"
#include "ir/interpreter.h"
#include "passes/rewrite_util.h"

namespace kiln {

absl::StatusOr<bool> ConstantFold::Run(Graph& graph) {
  bool changed = false;
  Replacements replacements;
  for (Node* node : graph.PostOrder()) {
    if (node->category() == OpCategory::kLeaf || node->num_operands() == 0 ||
        node->num_elements() > kMaxFoldedElements) {
      continue;
    }
    bool all_constant = true;
    for (Node* operand : node->operands()) all_constant &= operand->op() == OpKind::kConstant;
    if (!all_constant) continue;
    // Evaluate the node alone: a tiny graph of its constant operands and itself.
    Graph tiny("fold");
    std::vector<Node*> operands;
    for (Node* operand : node->operands()) {
      KILN_ASSIGN_OR_RETURN(Node * c, tiny.AddConstant(operand->name(), *operand->value()));
      operands.push_back(c);
    }
    KILN_ASSIGN_OR_RETURN(Node * copy, tiny.AddNode(node->op(), operands, node->attrs(), "y"));
    KILN_RETURN_IF_ERROR(tiny.AddOutput(copy));
    absl::StatusOr<std::vector<Tensor>> value = Interpret(tiny, {});
    if (!value.ok()) {
      return absl::Status(value.status().code(),
                          absl::StrCat("folding ", node->name(), ": ", value.status().message()));
    }
    KILN_ASSIGN_OR_RETURN(Node * folded,
                          graph.AddConstant(graph.FreshName(node->name() + ".folded"), (*value)[0]));
    replacements.Replace(graph, node, folded);
    changed = true;
  }
  replacements.Finish(graph);
  return changed;
}

}  // namespace kiln
