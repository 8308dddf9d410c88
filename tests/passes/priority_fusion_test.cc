// Priority fusion on the examples (fixed h100 spec): the region counts issue 3 expects, and
// the ledger and fuel mechanics.
#include "passes/fusion/priority_fusion.h"

#include <map>

#include "passes/pass_pipeline.h"
#include "rapidjson/document.h"
#include "tests/passes/pass_test_util.h"

namespace kiln {
namespace {

FusionPlan PlanExample(const std::string& name, FusionOptions options = {}) {
  auto g = testing::LoadExample(name);
  EXPECT_TRUE(g != nullptr);
  if (!g) return {};
  EXPECT_TRUE(DefaultPipeline().Run(*g, DebugOptions{}).ok());
  auto plan = PlanFusion(*g, H100Spec(), options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  // Keep the graph alive with the plan: regions point into it.
  static std::vector<std::unique_ptr<Graph>> keep;
  keep.push_back(std::move(g));
  return plan.ok() ? *plan : FusionPlan{};
}

std::string Describe(const FusionPlan& plan) {
  std::string s;
  for (const Region& r : plan.regions) {
    s += std::string(RegionKindName(r.kind)) + ": " + r.NodeList(20) + "\n";
  }
  return s;
}

struct Expected {
  const char* example;
  int kernels;
  RegionKind kind;  // of the single region, where there is one
  int outputs;
};

class SingleKernelExamples : public ::testing::TestWithParam<Expected> {};

TEST_P(SingleKernelExamples, FuseIntoOneKernel) {
  const Expected& e = GetParam();
  FusionPlan plan = PlanExample(e.example);
  ASSERT_EQ(plan.num_kernels(), e.kernels) << Describe(plan);
  const Region* kernel = nullptr;
  for (const Region& r : plan.regions) {
    if (r.kind != RegionKind::kView) kernel = &r;
  }
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->kind, e.kind) << Describe(plan);
  EXPECT_EQ(static_cast<int>(kernel->outputs.size()), e.outputs) << Describe(plan);
  EXPECT_LT(plan.fused_us, plan.unfused_us);
}

INSTANTIATE_TEST_SUITE_P(
    Examples, SingleKernelExamples,
    ::testing::Values(Expected{"bias_gelu", 1, RegionKind::kPointwise, 1},
                      Expected{"swiglu", 1, RegionKind::kPointwise, 1},
                      Expected{"add_rmsnorm", 1, RegionKind::kRowReduction, 2},
                      Expected{"layernorm", 1, RegionKind::kRowReduction, 1},
                      Expected{"layernorm_decomposed", 1, RegionKind::kRowReduction, 1},
                      Expected{"softmax", 1, RegionKind::kRowReduction, 1},
                      Expected{"dropout_add_layernorm", 1, RegionKind::kRowReduction, 2},
                      Expected{"softmax_xent", 1, RegionKind::kRowReduction, 1}),
    [](const auto& info) { return std::string(info.param.example); });

TEST(PriorityFusionTest, SoftmaxXentStreamsItsWideRowInOnePass) {
  FusionPlan plan = PlanExample("softmax_xent");
  ASSERT_EQ(plan.num_kernels(), 1);
  const RunTimeEstimate& e = plan.estimates.back();
  EXPECT_FALSE(e.row_on_chip);  // 128256 values do not fit: the chunked online variant
  EXPECT_EQ(e.passes, 1);       // only per-row results leave the row: one pass over the logits
  EXPECT_EQ(e.bytes_read, int64_t{4096} * 128256 * 2 + 4096 * 8);
}

TEST(PriorityFusionTest, TransformerBlockIsLibraryCallsAttentionAndFusedNorms) {
  FusionPlan plan = PlanExample("transformer_block");
  int matmul = 0, attention = 0, row = 0, pointwise = 0, other = 0;
  for (const Region& r : plan.regions) {
    switch (r.kind) {
      case RegionKind::kMatmul: ++matmul; break;
      case RegionKind::kAttention: ++attention; break;
      case RegionKind::kRowReduction: ++row; break;
      case RegionKind::kPointwise: ++pointwise; break;
      default: ++other; break;
    }
  }
  EXPECT_EQ(matmul, 4) << Describe(plan);
  EXPECT_EQ(attention, 1) << Describe(plan);
  EXPECT_EQ(row, 2) << Describe(plan);      // LN1, LN2
  EXPECT_EQ(pointwise, 1) << Describe(plan);  // gelu_tanh between the MLP matmuls
  EXPECT_EQ(other, 0) << Describe(plan);     // q/k/v slicing folded into attention
  EXPECT_EQ(plan.num_kernels(), 8);
  // Every bias and residual add rides on a matmul (cuBLASLt epilogue) or on the pointwise
  // GELU region: no add runs as a kernel of its own.
  for (const Region& r : plan.regions) {
    EXPECT_FALSE(r.nodes.size() == 1 && r.nodes[0]->op() == OpKind::kAdd) << r.NodeList();
  }
}

// Decisions name regions by merge-time id; a final region carries its own as merge_id, and a
// decision naming that id names exactly the region's nodes.
TEST(PriorityFusionTest, DecisionIdsJoinTheFinalRegionsThroughMergeId) {
  FusionPlan plan = PlanExample("transformer_block");
  std::map<int, const Region*> by_merge_id;
  for (const Region& r : plan.regions) {
    EXPECT_TRUE(by_merge_id.emplace(r.merge_id, &r).second) << "merge_id " << r.merge_id << " twice";
  }
  int joined = 0;
  for (const FusionRecord& rec : plan.records) {
    auto it = by_merge_id.find(rec.producer_id);
    if (rec.event == "stop" || it == by_merge_id.end()) continue;
    std::vector<std::string> names;
    for (const Node* n : it->second->nodes) names.push_back(n->name());
    EXPECT_EQ(rec.producer_nodes, names) << "step " << rec.step;
    ++joined;
  }
  EXPECT_GT(joined, 0);
}

TEST(PriorityFusionTest, FuelStopsAfterNMerges) {
  FusionPlan none = PlanExample("layernorm", {.fuel = 0});
  EXPECT_EQ(none.merges, 0);
  EXPECT_TRUE(none.fuel_exhausted);
  EXPECT_EQ(none.num_kernels(), none.ops);
  FusionPlan one = PlanExample("layernorm", {.fuel = 1});
  EXPECT_EQ(one.merges, 1);
  EXPECT_EQ(one.num_kernels(), none.num_kernels() - 1);
}

TEST(PriorityFusionTest, LedgerJsonHasRegionsAndDecisions) {
  FusionPlan plan = PlanExample("add_rmsnorm");
  rapidjson::Document doc;
  doc.Parse(FusionPlanJson(plan).c_str());
  ASSERT_FALSE(doc.HasParseError());
  ASSERT_TRUE(doc["regions"].IsArray());
  EXPECT_EQ(doc["regions"].Size(), plan.regions.size());
  EXPECT_STREQ(doc["regions"][0]["kind"].GetString(), "row_reduction");
  EXPECT_STREQ(doc["regions"][0]["record"].GetString(), "region");
  EXPECT_TRUE(doc["regions"][0]["nodes"].IsArray());
  ASSERT_TRUE(doc["decisions"].IsArray());
  int fused = 0;
  for (const auto& d : doc["decisions"].GetArray()) {
    if (std::string(d["event"].GetString()) != "fuse") continue;
    ++fused;
    // Both sides of the price, with their terms.
    EXPECT_DOUBLE_EQ(d["unfused_terms"]["total_us"].GetDouble(), d["predicted_unfused_us"].GetDouble());
    EXPECT_DOUBLE_EQ(d["fused_terms"]["total_us"].GetDouble(), d["predicted_fused_us"].GetDouble());
    EXPECT_GT(d["unfused_terms"]["bytes_read"].GetInt64(), d["fused_terms"]["bytes_read"].GetInt64());
  }
  EXPECT_EQ(fused, plan.merges);
  // Every line of the JSON-lines form parses on its own.
  std::string lines = LedgerJsonLines(plan);
  size_t start = 0, count = 0;
  while (start < lines.size()) {
    size_t end = lines.find('\n', start);
    rapidjson::Document line;
    line.Parse(lines.substr(start, end - start).c_str());
    EXPECT_FALSE(line.HasParseError()) << lines.substr(start, end - start);
    start = end + 1;
    ++count;
  }
  EXPECT_EQ(count, plan.records.size() + plan.regions.size());
}

}  // namespace
}  // namespace kiln
