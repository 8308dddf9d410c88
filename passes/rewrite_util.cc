#include "passes/rewrite_util.h"

#include "absl/strings/str_cat.h"
#include "ir/base/status.h"

namespace kiln {

Node* Rewriter::Add(OpKind op, std::vector<Node*> operands, Attributes attrs) {
  std::string name = graph_.FreshName(absl::StrCat(prefix_, ".", OpName(op)));
  absl::StatusOr<Node*> node = graph_.AddNode(op, std::move(operands), std::move(attrs), name);
  KILN_CHECK(node.ok()) << "rewrite built an invalid " << OpName(op) << ": " << node.status();
  return *node;
}

Node* Rewriter::Scalar(double value, DType dtype) {
  Tensor t(dtype, {});
  t.SetF64(0, value);
  absl::StatusOr<Node*> node = graph_.AddConstant(graph_.FreshName(absl::StrCat(prefix_, ".c")), t);
  KILN_CHECK(node.ok()) << node.status();
  return *node;
}

void Replacements::Replace(Graph& graph, Node* node, Node* replacement) {
  graph.ReplaceAllUsesWith(node, replacement);
  if (replacement->id() > node->id()) renames_.push_back({replacement->name(), node->name()});
}

bool Replacements::Finish(Graph& graph) {
  bool removed = graph.RemoveDeadNodes() > 0;
  for (const auto& [from, to] : renames_) {
    Node* n = graph.FindNode(from);
    if (n != nullptr && graph.FindNode(to) == nullptr) KILN_CHECK_OK(graph.Rename(n, to));
  }
  renames_.clear();
  return removed;
}

std::optional<double> ScalarConstantValue(const Node* node) {
  if (node->op() != OpKind::kConstant || node->num_elements() != 1) return std::nullopt;
  return node->value()->GetF64(0);
}

bool IsConstantSplat(const Node* node, double value) {
  if (node->op() != OpKind::kConstant) return false;
  const Tensor* t = node->value();
  for (int64_t i = 0; i < t->num_elements(); ++i) {
    if (t->GetF64(i) != value) return false;
  }
  return t->num_elements() > 0;
}

bool SwapsLastTwoAxes(const Node* node) {
  if (node->op() != OpKind::kTranspose) return false;
  const std::vector<int64_t>& perm = node->attrs().GetInts("perm");
  const int64_t r = static_cast<int64_t>(perm.size());
  for (int64_t i = 0; i + 2 < r; ++i) {
    if (perm[i] != i) return false;
  }
  return r >= 2 && perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
}

}  // namespace kiln
