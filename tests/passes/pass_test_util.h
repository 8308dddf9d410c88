// Helpers for pass tests: IR text in, a pass run, the printed graph out; and structural
// comparison of graphs up to node names.
#ifndef KILN_TESTS_PASSES_PASS_TEST_UTIL_H_
#define KILN_TESTS_PASSES_PASS_TEST_UTIL_H_

#include <map>
#include <memory>
#include <string>

#include "frontends/json/json_graph.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/fusion/region.h"
#include "passes/pass.h"

namespace kiln::testing {

inline std::unique_ptr<Graph> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(*g) : nullptr;
}

// Runs `pass` on `graph`, checks the result verifies, returns whether it changed.
inline bool RunPass(Pass& pass, Graph& graph) {
  absl::StatusOr<bool> changed = pass.Run(graph);
  EXPECT_TRUE(changed.ok()) << changed.status();
  absl::Status verified = Verify(graph);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << PrintGraph(graph);
  return changed.ok() && *changed;
}

// Every non-leaf node of `g` as one region.
inline Region WholeRegion(const Graph& g, const DeviceSpec& device = H100Spec()) {
  std::vector<Node*> nodes;
  for (Node* n : g.PostOrder()) {
    if (n->category() != OpCategory::kLeaf) nodes.push_back(n);
  }
  return DescribeRegion(0, nodes, g, g.PostOrder(), device);
}

// A parsed graph and one region of it (the region points into the graph).
struct GraphRegion {
  std::unique_ptr<Graph> graph;
  Region region;
};

inline std::unique_ptr<Graph> LoadExample(const std::string& name) {
  auto g = ImportJsonGraphFile(std::string(KILN_SOURCE_DIR) + "/examples/" + name + ".json");
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(*g) : nullptr;
}

// A name-free key per node: op, attributes, type, constant data and the keys of its operands
// (inputs keep their names: they are the graph's interface). Two graphs are the same up to
// names when their outputs have equal keys, in order.
class StructuralKeys {
 public:
  std::string GraphKey(const Graph& g) {
    std::string key;
    for (const Graph::Output& out : g.outputs()) key += std::to_string(Key(out.node)) + ",";
    return key;
  }

 private:
  int Key(const Node* n) {
    std::string text = std::string(OpName(n->op())) + n->attrs().ToString() + DTypeName(n->dtype()) +
                       ShapeToString(n->shape());
    if (n->op() == OpKind::kInput) text += "@" + n->name();
    if (const Tensor* t = n->value()) {
      text.append(reinterpret_cast<const char*>(t->data()), t->num_bytes());
    }
    for (const Node* o : n->operands()) text += "(" + std::to_string(Key(o)) + ")";
    auto [it, inserted] = ids_.emplace(text, static_cast<int>(ids_.size()));
    return it->second;
  }
  std::map<std::string, int> ids_;
};

}  // namespace kiln::testing

#endif  // KILN_TESTS_PASSES_PASS_TEST_UTIL_H_
