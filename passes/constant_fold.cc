#include "passes/constant_fold.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
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
    // An operand with no elements carries no data: its value is known (a reduction over an
    // empty axis is its identity, whatever the input).
    auto known = [](const Node* operand) { return operand->op() == OpKind::kConstant || operand->num_elements() == 0; };
    if (!std::all_of(node->operands().begin(), node->operands().end(), known)) continue;
    // Evaluate the node alone: a tiny graph of its constant operands and itself.
    Graph tiny("fold");
    // An operand used twice (mul(x, x)) is one constant of the tiny graph.
    std::vector<Node*> operands;
    absl::flat_hash_map<const Node*, Node*> copies;
    for (Node* operand : node->operands()) {
      Node*& c = copies[operand];
      if (c == nullptr) {
        const Tensor value = operand->op() == OpKind::kConstant ? *operand->value() : Tensor(operand->dtype(), operand->shape());
        KILN_ASSIGN_OR_RETURN(c, tiny.AddConstant(operand->name(), value));
      }
      operands.push_back(c);
    }
    KILN_ASSIGN_OR_RETURN(Node * copy, tiny.AddNode(node->op(), operands, node->attrs(), tiny.FreshName("y")));
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
