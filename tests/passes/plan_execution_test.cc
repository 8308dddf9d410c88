// A FusionPlan is an executable schedule: running its regions one after another, each as its
// own subgraph on the interpreter, reproduces the whole graph's outputs bit for bit. This
// catches a region that forgets an input or an output, and an execution order that reads a
// tensor before it is written.
#include <cmath>
#include <filesystem>

#include "api/compiler.h"
#include "ir/interpreter.h"
#include "ir/promote.h"
#include "ir/subgraph.h"
#include "tests/passes/pass_test_util.h"

namespace kiln {
namespace {

class PlanExecutionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PlanExecutionTest, RegionsInOrderReproduceTheGraph) {
  std::string path = std::string(KILN_SOURCE_DIR) + "/examples/small/" + GetParam() + ".json";
  auto graph = LoadGraph(path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::unique_ptr<Graph> original = (*graph)->Clone();
  auto analysis = Analyze(std::move(*graph), AnalyzeOptions{});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  const Graph& g = *analysis->graph;

  std::map<std::string, Tensor> inputs = RandomInputs(g, 7);
  auto whole = Interpret(g, inputs);
  ASSERT_TRUE(whole.ok()) << whole.status();

  // The pipeline keeps the meaning: the optimised graph agrees with the imported one. Both
  // are evaluated with 16-bit floats promoted to f32 (ir/promote.h), so the comparison sees
  // what the rewrites did rather than where each form happens to round to 16 bits; what is
  // left is f32 summation order and the final rounding to the output dtype (one unit).
  auto before = Interpret(**PromoteTo32(*original), inputs);
  auto after = Interpret(**PromoteTo32(g), inputs);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(after.ok()) << after.status();
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Tensor &a = (*before)[i], &b = (*after)[i];
    double tol = a.dtype() == DType::kF32 ? 1e-5 : a.dtype() == DType::kF16 ? 2e-3 : 1.6e-2;
    for (int64_t e = 0; e < a.num_elements(); ++e) {
      double x = a.GetF64(e), y = b.GetF64(e);
      ASSERT_LE(std::abs(x - y), tol * (1 + std::abs(x))) << g.outputs()[i].name << "[" << e << "]";
    }
  }

  std::map<std::string, Tensor> values = inputs;
  for (const Region& region : analysis->plan.regions) {
    auto sub = ExtractSubgraph(g, region.nodes, region.inputs, region.outputs);
    ASSERT_TRUE(sub.ok()) << sub.status();
    std::map<std::string, Tensor> region_inputs;
    for (const Node* in : region.inputs) {
      auto it = values.find(in->name());
      ASSERT_NE(it, values.end()) << "region " << region.id << " reads " << in->name() << " before it is written";
      region_inputs[in->name()] = it->second;
    }
    auto outs = Interpret(**sub, region_inputs);
    ASSERT_TRUE(outs.ok()) << outs.status();
    for (size_t i = 0; i < region.outputs.size(); ++i) values[region.outputs[i]->name()] = (*outs)[i];
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Node* out = g.outputs()[i].node;
    ASSERT_TRUE(values.count(out->name())) << "no region writes graph output " << out->name();
    EXPECT_TRUE(values[out->name()].BitwiseEqual((*whole)[i])) << out->name();
  }
}

std::vector<std::string> SmallExamples() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/examples/small")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Examples, PlanExecutionTest, ::testing::ValuesIn(SmallExamples()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kiln
