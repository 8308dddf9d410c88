// Priority fusion on the examples (fixed h100 spec): the region counts issue 3 expects, and
// the ledger and fuel mechanics.
#include "passes/fusion/ledger.h"
#include "passes/fusion/region_kind.h"
#include "passes/fusion/priority_fusion.h"

#include <map>
#include <set>

#include "passes/canonicalize.h"
#include "passes/match_attention.h"
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
                      Expected{"dropout_add_layernorm_p0", 1, RegionKind::kRowReduction, 2},
                      Expected{"dropout_add", 1, RegionKind::kPointwise, 1},
                      Expected{"dropout_add_p0", 1, RegionKind::kPointwise, 1},
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

// The attention node of a graph (after the pipeline's match, before lower_attention).
const Node* Attention(Graph& g) {
  Canonicalize canonicalize;
  MatchAttention match;
  EXPECT_TRUE(canonicalize.Run(g).ok());
  EXPECT_TRUE(match.Run(g).ok());
  for (const Node* n : g.nodes()) {
    if (n->op() == OpKind::kAttention) return n;
  }
  ADD_FAILURE() << "no attention in " << g.name();
  return nullptr;
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
  // The tiled template covers the block's bf16 attention: q/k/v slicing, the head split and
  // merge fold into it (no layout kernel), and every bias rides on its matmul's epilogue.
  ASSERT_TRUE(AttentionTemplateCovers(*Attention(*testing::LoadExample("transformer_block"))));
  EXPECT_EQ(matmul, 4) << Describe(plan);
  EXPECT_EQ(attention, 1) << Describe(plan);
  EXPECT_EQ(row, 2) << Describe(plan);        // LN1, LN2
  EXPECT_EQ(pointwise, 0) << Describe(plan);  // fc1's bias + gelu_tanh: cuBLASLt's GELU_BIAS epilogue
  EXPECT_EQ(other, 0) << Describe(plan);
  EXPECT_EQ(plan.num_kernels(), 7);
  // Every bias and residual add (and the gelu_tanh) rides on a matmul as a cuBLASLt epilogue:
  // no add runs as a kernel of its own.
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

// s1 and s2 both want to join c. c = s1 + s2 has the axis of 64 that s2's space [4096 | 64 x
// 256] has and s1's [4096 | 256] lacks: merged with s1, c's elements would each need a column
// of x read again (the serial fallback kiln no longer has), so that merge is refused for its
// space, and s2's is taken.
TEST(PriorityFusionTest, AReductionFusesOnlyWithWhatLiesInItsSpace) {
  auto g = testing::Parse(R"(graph g(x: f32[4096,256], y: f32[4096,64,256]) {
    s1: f32[256] = reduce_sum(x) {axes = [0], keep_dims = false}
    s2: f32[64,256] = reduce_sum(y) {axes = [0], keep_dims = false}
    c: f32[64,256] = add(s1, s2)
    return c
  })");
  ASSERT_NE(g, nullptr);
  auto plan = PlanFusion(*g, H100Spec());
  ASSERT_TRUE(plan.ok()) << plan.status();
  const FusionRecord *first = nullptr, *fused = nullptr;
  for (const FusionRecord& r : plan->records) {
    if (r.event == "candidate" && r.producer_nodes == std::vector<std::string>{"s1"}) first = &r;
    if (r.event == "fuse") fused = &r;
  }
  ASSERT_TRUE(first && fused) << LedgerJsonLines(*plan);
  EXPECT_EQ(first->verdict, "refuse");
  EXPECT_EQ(first->rule, "reduce-space");
  EXPECT_NE(first->reason.find("its part [64] is not a broadcast of []"), std::string::npos) << first->reason;
  EXPECT_EQ(fused->producer_nodes, std::vector<std::string>{"s2"});
  EXPECT_EQ(plan->num_kernels(), 2) << Describe(*plan);
}

// A reduction over more than the region's reduced group (a whole-tensor max next to a column
// mean; random graph seed 2846) needs every row's values: it is never placed in that region.
// The GPU computed it per column before the rule.
TEST(PriorityFusionTest, AReductionOverOtherAxesStaysOutOfAReductionRegion) {
  for (const char* text : {R"(graph g(x: f32[4,4,13]) {
    m: f32[4,1,13] = reduce_mean(x) {axes = [1], keep_dims = true}
    a: f32[] = reduce_max(x) {axes = [0, 1, 2], keep_dims = false}
    y: f32[4,1,13] = mul(a, m)
    return y
  })",
                           R"(graph g(x: f32[100,8,31]) {
    l: f32[100,8,31] = log_softmax(x) {axis = -1}
    s: f32[] = reduce_sum(l) {axes = [], keep_dims = false}
    return s
  })"}) {
    auto g = testing::Parse(text);
    ASSERT_NE(g, nullptr);
    ASSERT_TRUE(DefaultPipeline().Run(*g, DebugOptions{}).ok());
    auto plan = PlanFusion(*g, H100Spec());
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->num_kernels(), 2) << Describe(*plan);
    if (g->FindNode("a") == nullptr) continue;  // the first graph's refusal is in the ledger
    bool said = false;
    for (const FusionRecord& r : plan->records) {
      said |= r.rule == "reduce-space" && r.reason.find("reduces other axes than the reduced group") != std::string::npos;
    }
    EXPECT_TRUE(said) << LedgerJsonLines(*plan);
  }
}

// At every step the merge taken saves at least as much as every other legal, profitable
// candidate still live then (none of its regions merged away, not found to be a cycle); a
// merge is preferred to a recompute saving less than 1% more.
TEST(PriorityFusionTest, EveryStepTakesTheLargestLiveSaving) {
  FusionPlan plan = PlanExample("transformer_block");
  std::set<int> gone;
  std::map<std::string, const FusionRecord*> live;  // latest pricing per candidate
  auto key = [](const FusionRecord& r) {
    std::string k = r.mode + ":" + std::to_string(r.producer_id) + ">";
    for (int c : r.consumer_ids) k += std::to_string(c) + ",";
    return k;
  };
  int steps = 0;
  for (const FusionRecord& r : plan.records) {
    if (r.event == "candidate" || r.event == "reprice") {
      if (r.verdict == "fuse") live[key(r)] = &r;
      else live.erase(key(r));  // refused, e.g. found to be a cycle at pick time
      continue;
    }
    if (r.event != "fuse") continue;
    for (const auto& [k, cand] : live) {
      bool stale = gone.count(cand->producer_id) > 0;
      for (int c : cand->consumer_ids) stale |= gone.count(c) > 0;
      if (!stale) {
        const double margin = r.mode == "merge" && cand->mode == "recompute" ? 1.01 : 1.0;
        EXPECT_GE(r.saved_us() * margin + 1e-9, cand->saved_us()) << "step " << r.step << ": " << k;
      }
    }
    gone.insert(r.producer_id);
    gone.insert(r.consumer_ids.begin(), r.consumer_ids.end());
    ++steps;
  }
  EXPECT_EQ(steps, plan.merges);
}

std::map<RegionKind, int> KindCounts(const FusionPlan& plan) {
  std::map<RegionKind, int> counts;
  for (const Region& r : plan.regions) ++counts[r.kind];
  return counts;
}

// The block with attention written out as an exporter writes it (matmul with k transposed,
// division by sqrt(d), a lower-triangular keep mask, softmax, matmul) plans like the composite
// form: one causal attention region and the same regions otherwise.
TEST(PriorityFusionTest, TransformerBlockWithAttentionWrittenOutPlansLikeTheComposite) {
  auto composite = testing::LoadExample("small/transformer_block");
  ASSERT_NE(composite, nullptr);
  std::string text = PrintGraph(*composite);
  const std::string line = "  attn: bf16[1,4,7,10] = attention(q, k, v) {causal = true, dropout = 0.0, offset = 0, scale = 0.0, seed = 0}\n";
  size_t at = text.find(line);
  ASSERT_NE(at, std::string::npos) << text;
  std::string keep;
  for (int i = 0; i < 7; ++i) {
    for (int j = 0; j < 7; ++j) keep += std::string(i || j ? ", " : "") + (j <= i ? "1" : "0");
  }
  text.replace(at, line.size(), R"(  kt: bf16[1,4,10,7] = transpose(k) {perm = [0, 1, 3, 2]}
  s: bf16[1,4,7,7] = matmul(q, kt)
  sqrt_d: bf16[] = constant() {data = [3.1622777]}
  ss: bf16[1,4,7,7] = div(s, sqrt_d)
  keep: bool[7,7] = constant() {data = [)" + keep + R"(]}
  ninf: bf16[] = constant() {data = [-inf]}
  sm: bf16[1,4,7,7] = where(keep, ss, ninf)
  p: bf16[1,4,7,7] = softmax(sm) {axis = 3}
  attn: bf16[1,4,7,10] = matmul(p, v)
)");
  auto written = testing::Parse(text);
  ASSERT_NE(written, nullptr);
  // match_attention recognises it as causal attention (the mask constant becomes the flag)...
  {
    auto matched = written->Clone();
    Canonicalize canonicalize;
    MatchAttention match;
    ASSERT_TRUE(canonicalize.Run(*matched).ok());
    ASSERT_TRUE(match.Run(*matched).ok());
    int attention = 0;
    for (const Node* n : matched->nodes()) {
      if (n->op() != OpKind::kAttention) continue;
      ++attention;
      EXPECT_TRUE(n->attrs().GetBool("causal")) << n->ToString();
      EXPECT_EQ(n->num_operands(), 3) << "the mask became causal, not an operand: " << n->ToString();
    }
    EXPECT_EQ(attention, 1) << PrintGraph(*matched);
  }
  // ...and from there it plans exactly like the composite.
  ASSERT_TRUE(DefaultPipeline().Run(*written, DebugOptions{}).ok());
  auto plan = PlanFusion(*written, H100Spec());
  ASSERT_TRUE(plan.ok()) << plan.status();
  FusionPlan reference = PlanExample("small/transformer_block");
  EXPECT_EQ(plan->num_kernels(), reference.num_kernels()) << Describe(*plan) << "vs\n" << Describe(reference);
  EXPECT_EQ(KindCounts(*plan), KindCounts(reference)) << Describe(*plan);
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

namespace kiln {
namespace {

// Sibling fusion (sibling_fusion.h): a SwiGLU backward's two gradients read the same three
// [tokens, ffn] tensors and neither feeds the other. One kernel writes both, reading each once.
TEST(SiblingFusionTest, TwoGradientsThatReadTheSameTensorsAreOneKernel) {
  auto g = testing::Parse(R"(graph g(a: f32[4096,2736], b: f32[4096,2736], d: f32[4096,2736]) {
    s: f32[4096,2736] = sigmoid(a)
    sa: f32[4096,2736] = mul(a, s)
    db: f32[4096,2736] = mul(d, sa)
    one: f32[] = constant() {data = [1]}
    om: f32[4096,2736] = sub(one, s)
    t: f32[4096,2736] = mul(a, om)
    u: f32[4096,2736] = add(one, t)
    v: f32[4096,2736] = mul(s, u)
    w: f32[4096,2736] = mul(d, b)
    da: f32[4096,2736] = mul(w, v)
    return da, db
  })");
  ASSERT_NE(g, nullptr);
  auto plan = PlanFusion(*g, H100Spec());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->num_kernels(), 1) << Describe(*plan);
  EXPECT_EQ(plan->regions[0].outputs.size(), 2u);
  EXPECT_EQ(plan->regions[0].inputs.size(), 3u);
  const FusionRecord* sibling = nullptr;
  for (const FusionRecord& r : plan->records) {
    if (r.event == "fuse" && r.mode == "sibling") sibling = &r;
  }
  ASSERT_NE(sibling, nullptr) << LedgerJsonLines(*plan);
  EXPECT_EQ(sibling->rule, "sibling");
  EXPECT_NE(sibling->reason.find("both read"), std::string::npos) << sibling->reason;
  EXPECT_GT(sibling->saved_us(), 0);
}

// KILN_FUSION_FUEL counts sibling merges too: one merge short of the full plan stops before the
// sibling merge and says so.
TEST(SiblingFusionTest, FuelCountsSiblingMerges) {
  const char* text = R"(graph g(a: f32[512,512], b: f32[512,512]) {
    y1: f32[512,512] = mul(a, b)
    y2: f32[512,512] = sub(a, b)
    return y1, y2
  })";
  auto g = testing::Parse(text);
  ASSERT_NE(g, nullptr);
  auto full = PlanFusion(*g, H100Spec());
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_EQ(full->num_kernels(), 1) << Describe(*full);
  FusionOptions options;
  options.fuel = full->merges - 1;
  auto limited = PlanFusion(*g, H100Spec(), options);
  ASSERT_TRUE(limited.ok()) << limited.status();
  EXPECT_EQ(limited->merges, full->merges - 1);
  EXPECT_TRUE(limited->fuel_exhausted);
  EXPECT_EQ(limited->num_kernels(), 2);
  EXPECT_EQ(limited->records.back().event, "stop") << LedgerJsonLines(*limited);
}

// Two readers of one tensor with a path between them through a matmul are not siblings: merged,
// the kernel would wait on the matmul that waits on it.
TEST(SiblingFusionTest, ReadersConnectedThroughAnotherRegionStayApart) {
  auto g = testing::Parse(R"(graph g(x: f32[512,512], w: f32[512,512]) {
    e: f32[512,512] = exp(x)
    m: f32[512,512] = matmul(e, w)
    n: f32[512,512] = mul(x, m)
    return n
  })");
  ASSERT_NE(g, nullptr);
  auto plan = PlanFusion(*g, H100Spec());
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const FusionRecord& r : plan->records) {
    EXPECT_FALSE(r.event == "fuse" && r.mode == "sibling") << LedgerJsonLines(*plan);
  }
}

}  // namespace
}  // namespace kiln
