// The pipeline, not the passes, disables, verifies, dumps and observes.
#include "passes/pass_pipeline.h"

#include <cstdlib>
#include <filesystem>
#include <map>

#include "tests/passes/pass_test_util.h"

namespace kiln {
namespace {

constexpr char kSoftmax[] = R"(graph g(x: f32[4,8]) {
  s: f32[4,8] = softmax(x) {axis = -1}
  return s
})";

TEST(PassPipelineTest, DefaultPipelineDecomposesAndRecordsEveryPass) {
  auto g = testing::Parse(kSoftmax);
  DebugOptions options;
  auto records = DefaultPipeline().Run(*g, options);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_GE(records->size(), 5u);
  EXPECT_EQ((*records)[0].name, "canonicalize");
  bool decomposed = false;
  for (const PassRecord& r : *records) decomposed |= r.name == "decompose" && r.changed;
  EXPECT_TRUE(decomposed);
  EXPECT_EQ(PrintGraph(*g).find("softmax("), std::string::npos);
  EXPECT_NE(PrintGraph(*g).find("return s\n"), std::string::npos) << "the output keeps its name";
}

// A graph the user brings is verified before any pass (issue 15: a JSON graph with no
// outputs made `kiln dump` abort inside a pass; `kiln check` said what was wrong).
TEST(PassPipelineTest, AnInvalidGraphIsRefusedBeforeAnyPass) {
  Graph g("no_outputs");
  ASSERT_TRUE(g.AddInput("x", DType::kF32, Shape{4}).ok());
  DebugOptions options;
  auto records = DefaultPipeline().Run(g, options);
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(records.status().message().find("has no outputs"), std::string::npos) << records.status();
}

TEST(PassPipelineTest, DisabledPassDoesNotRun) {
  auto g = testing::Parse(kSoftmax);
  DebugOptions options;
  options.disabled_passes = {"decompose"};
  auto records = DefaultPipeline().Run(*g, options);
  ASSERT_TRUE(records.ok());
  for (const PassRecord& r : *records) {
    if (r.name == "decompose") {
      EXPECT_FALSE(r.ran);
    }
  }
  EXPECT_NE(PrintGraph(*g).find("softmax("), std::string::npos);
}

TEST(PassPipelineTest, ObserverSeesTheGraphAfterEachPass) {
  auto g = testing::Parse(kSoftmax);
  std::vector<std::string> seen;
  std::string after_decompose;
  auto records = DefaultPipeline().Run(*g, DebugOptions{}, [&](const PassRecord& r, const Graph& graph) {
    seen.push_back(r.name);
    if (r.name == "decompose") after_decompose = PrintGraph(graph);
  });
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(seen.size(), records->size());
  EXPECT_NE(after_decompose.find("reduce_max"), std::string::npos);
}

TEST(PassPipelineTest, DumpWritesOneFilePerChangingPass) {
  std::string dir = ::testing::TempDir() + "/kiln_pipeline_dump";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto g = testing::Parse(kSoftmax);
  DebugOptions options;
  options.dump = {DumpKind::kPasses};
  options.dump_dir = dir;
  ASSERT_TRUE(DefaultPipeline().Run(*g, options).ok());
  int files = 0;
  bool decompose_file = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    decompose_file |= entry.path().filename().string().find("decompose") != std::string::npos;
  }
  EXPECT_GE(files, 2);
  EXPECT_TRUE(decompose_file);
}

TEST(PassPipelineTest, UnknownDisabledPassIsAnErrorListingValidNames) {
  auto g = testing::Parse(kSoftmax);
  DebugOptions options;
  options.disabled_passes = {"cse", "constant_folding"};
  auto records = DefaultPipeline().Run(*g, options);
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(records.status().message().find("unknown pass \"constant_folding\"; valid names are canonicalize, "
                                            "constant_fold, cse, dce, decompose, horizontal_matmul, lower_attention, match_attention"),
            std::string::npos) << records.status();
}

// Every pass reports the nodes it removed and what holds their value now.
TEST(PassPipelineTest, RemovedNodesNameWhatHoldsTheirValue) {
  auto g = testing::Parse(R"(graph g(x: f32[4,8]) {
    c: f32[4,8] = cast(x) {dtype = "f32"}
    a: f32[4,8] = exp(c)
    b: f32[4,8] = exp(c)
    dead: f32[4,8] = neg(x)
    y: f32[4,8] = add(a, b)
    return y
  })");
  auto records = DefaultPipeline().Run(*g, DebugOptions{});
  ASSERT_TRUE(records.ok()) << records.status();
  std::map<std::string, std::string> removed;  // "pass:node" -> now
  for (const PassRecord& r : *records) {
    for (const RemovedNode& n : r.removed) removed[r.name + ":" + n.name] = n.now;
  }
  EXPECT_EQ(removed.size(), 3u);
  EXPECT_EQ(removed["canonicalize:c"], "x");  // the no-op cast's users read x
  EXPECT_EQ(removed["cse:b"], "a");           // the duplicate's users read the node kept
  ASSERT_EQ(removed.count("canonicalize:dead"), 1u);  // swept with the cast: nothing holds it
  EXPECT_EQ(removed["canonicalize:dead"], "");
}

// A pass that breaks the graph (here: repoints an operand to a tensor of another shape, which
// only a buggy rewrite can do) is caught by the pipeline's verifier, which names the pass.
class BreakShapes : public Pass {
 public:
  const char* name() const override { return "break_shapes"; }
  const char* summary() const override { return "a deliberately broken pass"; }
  absl::StatusOr<bool> Run(Graph& graph) override {
    graph.ReplaceOperand(graph.FindNode("y"), 0, graph.FindNode("r"));
    return true;
  }
};

TEST(PassPipelineDeathTest, ABrokenPassIsCaughtByTheVerifier) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  PassPipeline pipeline;
  pipeline.Add(std::make_unique<BreakShapes>());
  auto g = testing::Parse(R"(graph g(x: f32[4,8]) {
    r: f32[4] = reduce_sum(x) {axes = [1], keep_dims = false}
    y: f32[4,8] = exp(x)
    return y, r
  })");
  EXPECT_DEATH((void)pipeline.Run(*g, DebugOptions{}), "graph invalid after pass break_shapes");
}

TEST(DebugOptionsTest, UnknownDumpNameIsAnErrorListingValidNames) {
  setenv("KILN_DUMP", "passes,bogus", 1);
  auto options = DebugOptionsFromEnv();
  unsetenv("KILN_DUMP");
  ASSERT_FALSE(options.ok());
  EXPECT_NE(options.status().message().find("bogus"), std::string::npos);
  EXPECT_NE(options.status().message().find("ledger"), std::string::npos);
}

TEST(DebugOptionsTest, FuelAndDisabledPassesAreParsed) {
  setenv("KILN_FUSION_FUEL", "3", 1);
  setenv("KILN_DISABLE_PASSES", "cse, dce", 1);
  setenv("KILN_FORCE_FUSE", "norm-matmul, pointwise", 1);
  auto options = DebugOptionsFromEnv();
  unsetenv("KILN_FUSION_FUEL");
  unsetenv("KILN_DISABLE_PASSES");
  unsetenv("KILN_FORCE_FUSE");
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->fusion_fuel, 3);
  EXPECT_EQ(options->disabled_passes.count("dce"), 1u);
  EXPECT_EQ(options->forced_rules, (std::set<std::string>{"norm-matmul", "pointwise"}));
  setenv("KILN_FUSION_FUEL", "-1", 1);
  EXPECT_FALSE(DebugOptionsFromEnv().ok());
  unsetenv("KILN_FUSION_FUEL");
}

}  // namespace
}  // namespace kiln
