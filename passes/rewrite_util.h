// Small helpers shared by rewriting passes: building nodes whose validity the pass guarantees
// (a failure is a compiler bug, hence KILN_CHECK), and recognising constants.
#ifndef KILN_PASSES_REWRITE_UTIL_H_
#define KILN_PASSES_REWRITE_UTIL_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln {

class Rewriter {
 public:
  // New nodes are named `<prefix>.<op>` (made unique), so dumps show where they came from.
  Rewriter(Graph& graph, std::string prefix) : graph_(graph), prefix_(std::move(prefix)) {}

  Node* Add(OpKind op, std::vector<Node*> operands, Attributes attrs = {});
  // A scalar constant (shape []) of `dtype` holding `value` rounded to the dtype.
  Node* Scalar(double value, DType dtype);
  Graph& graph() { return graph_; }

 private:
  Graph& graph_;
  std::string prefix_;
};

// Replaces `node` by `replacement` everywhere. When `replacement` was built by the rewrite
// (it is newer than `node`), it inherits `node`'s name once the old node is gone, so dumps
// keep the user's names: call FinishReplacements after RemoveDeadNodes.
class Replacements {
 public:
  void Replace(Graph& graph, Node* node, Node* replacement);
  // Removes dead nodes, then renames the surviving replacements. Returns whether any node died.
  bool Finish(Graph& graph);

 private:
  std::vector<std::pair<std::string, std::string>> renames_;  // replacement name -> old name
};

// The value of a constant with exactly one element (any shape), else nullopt.
std::optional<double> ScalarConstantValue(const Node* node);
// True if `node` is a constant whose every element equals `value`.
bool IsConstantSplat(const Node* node, double value);
// transpose(x, perm) with perm = [0, 1, .., r-1, r-2]: a swap of the last two axes (a matmul
// operand cuBLASLt reads transposed).
bool SwapsLastTwoAxes(const Node* node);

}  // namespace kiln

#endif  // KILN_PASSES_REWRITE_UTIL_H_
