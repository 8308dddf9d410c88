// The norm_matmul kind (passes/fusion/norm_matmul_plan.h): which norm -> matmul pairs fold,
// the reason given where they do not, and the price that keeps large M on cuBLASLt.
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/ledger.h"
#include "passes/fusion/norm_matmul_plan.h"
#include "passes/fusion/priority_fusion.h"
#include "passes/pass_pipeline.h"
#include "tests/passes/pass_test_util.h"

namespace kiln {
namespace {

// rms_norm or layer_norm of x [rows, k] (weights w, b), then @ W (or @ transpose(Wt)), then
// the extra text `tail` (which names the result r and may use z, the matmul).
std::string NormLinear(const std::string& norm, int64_t rows, int64_t k, int64_t n, const std::string& dtype = "bf16",
                       const std::string& tail = "", const std::string& result = "z", bool transposed = false) {
  const std::string x = dtype + "[" + std::to_string(rows) + "," + std::to_string(k) + "]";
  const std::string z = dtype + "[" + std::to_string(rows) + "," + std::to_string(n) + "]";
  const std::string kv = dtype + "[" + std::to_string(k) + "]";
  const std::string wt = transposed ? dtype + "[" + std::to_string(n) + "," + std::to_string(k) + "]"
                                    : dtype + "[" + std::to_string(k) + "," + std::to_string(n) + "]";
  std::string text = "graph g(x: " + x + ", w: " + kv + ", b: " + kv + ", W: " + wt + ", bias: " + dtype + "[" +
                     std::to_string(n) + "], res: " + z + ") {\n";
  text += norm == "rms" ? "  y: " + x + " = rms_norm(x, w) {axis = -1, eps = 1e-6}\n"
                        : "  y: " + x + " = layer_norm(x, w, b) {axis = -1, eps = 1e-5}\n";
  if (transposed) {
    text += "  wt: " + dtype + "[" + std::to_string(k) + "," + std::to_string(n) + "] = transpose(W) {perm = [1, 0]}\n";
    text += "  z: " + z + " = matmul(y, wt)\n";
  } else {
    text += "  z: " + z + " = matmul(y, W)\n";
  }
  return text + tail + "  return " + result + "\n}\n";
}

struct Planned {
  std::unique_ptr<Graph> graph;
  FusionPlan plan;
};

// The plan of `text`; `forced`: the fold taken wherever it is legal (KILN_FORCE_FUSE=norm-matmul).
Planned Plan(const std::string& text, bool forced = false, const DeviceSpec& device = H100Spec()) {
  Planned p;
  p.graph = testing::Parse(text);
  EXPECT_NE(p.graph, nullptr);
  EXPECT_TRUE(DefaultPipeline().Run(*p.graph, DebugOptions{}).ok());
  FusionOptions options;
  if (forced) options.forced_rules = {"norm-matmul"};
  auto plan = PlanFusion(*p.graph, device, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (plan.ok()) p.plan = std::move(*plan);
  return p;
}

int CountKind(const FusionPlan& plan, RegionKind kind) {
  int n = 0;
  for (const Region& r : plan.regions) n += r.kind == kind;
  return n;
}

// The reason of the last norm-matmul record of `plan` (refused or unprofitable): the merge of
// the whole norm, after its own merges.
std::string NormMatmulReason(const FusionPlan& plan, std::string* verdict = nullptr) {
  std::string reason;
  for (const FusionRecord& r : plan.records) {
    if (r.rule.rfind("norm-matmul", 0) == 0 && r.verdict != "fuse") {
      if (verdict) *verdict = r.verdict;
      reason = r.reason;
    }
  }
  return reason;
}

// The plan of the one region of `p`, a fold of NormLinear: the norm and the matmul in one
// kernel that writes only z (the normalised tensor is never written). Null, failing, otherwise.
const NormMatmulPlan* TheFold(const Planned& p) {
  EXPECT_EQ(p.plan.regions.size(), 1u) << LedgerJsonLines(p.plan);
  if (p.plan.regions.size() != 1) return nullptr;
  const Region& r = p.plan.regions[0];
  EXPECT_EQ(r.kind, RegionKind::kNormMatmul);
  EXPECT_EQ(r.outputs.size(), 1u);
  if (r.outputs.size() == 1) EXPECT_EQ(r.outputs[0]->name(), "z");
  EXPECT_NE(r.norm_matmul, nullptr);
  return r.norm_matmul.get();
}

TEST(NormMatmulTest, RmsNormFoldsIntoItsLinear) {
  for (int64_t rows : {1, 8, 16}) {
    SCOPED_TRACE(rows);
    Planned p = Plan(NormLinear("rms", rows, 1024, 1024), /*forced=*/true);
    const NormMatmulPlan* nm = TheFold(p);
    ASSERT_NE(nm, nullptr);
    EXPECT_EQ(nm->m, rows);
    EXPECT_EQ(nm->centred, nullptr);
    EXPECT_EQ(nm->reductions.size(), 1u);
    EXPECT_EQ(nm->row_factors.size(), 1u);
  }
}

// layer_norm folds too: the template centres x on its row mean (the variance and the operand
// read x - mean, as the unfused norm does) and its bias b enters as a virtual token row whose
// product b @ W is added after the row scale.
TEST(NormMatmulTest, LayerNormFoldsCentredWithItsBiasAsAVirtualRow) {
  for (int64_t rows : {1, 7}) {
    SCOPED_TRACE(rows);
    Planned p = Plan(NormLinear("layer", rows, 1024, 1024), /*forced=*/true);
    const NormMatmulPlan* fold = TheFold(p);
    ASSERT_NE(fold, nullptr);
    const NormMatmulPlan& nm = *fold;
    ASSERT_NE(nm.centred, nullptr);
    EXPECT_EQ(nm.centred->op(), OpKind::kSub);
    ASSERT_NE(nm.column_bias, nullptr);
    EXPECT_EQ(nm.VirtualRows(), 1);
    EXPECT_EQ(nm.reductions.size(), 1u);  // the variance; the mean is the template's centring
    EXPECT_NE(nm.Summary().find("centred"), std::string::npos) << nm.Summary();
    // 7 rows and the virtual one fill one tile of 8.
    const NormMatmulTiles t = DefaultNormMatmulTiles(nm, H100Spec());
    EXPECT_EQ(t.tokens, 8);
    EXPECT_EQ(NormMatmulTokenTiles(nm, t), 1);
  }
  // Eight rows need a second token group for the virtual row.
  Planned eight = Plan(NormLinear("layer", 8, 1024, 1024), /*forced=*/true);
  const NormMatmulPlan* fold = TheFold(eight);
  ASSERT_NE(fold, nullptr);
  EXPECT_EQ(DefaultNormMatmulTiles(*fold, H100Spec()).tokens, 16);
}

TEST(NormMatmulTest, TheEpilogueAndATransposedWeightFoldToo) {
  Planned p = Plan(NormLinear("rms", 8, 256, 96, "bf16",
                              "  zb: bf16[8,96] = add(z, bias)\n  zr: bf16[8,96] = add(zb, res)\n"
                              "  r: bf16[8,96] = gelu_tanh(zr)\n",
                              "r", /*transposed=*/true),
                   /*forced=*/true);
  ASSERT_EQ(p.plan.regions.size(), 1u) << LedgerJsonLines(p.plan);
  ASSERT_NE(p.plan.regions[0].norm_matmul, nullptr);
  const NormMatmulPlan& nm = *p.plan.regions[0].norm_matmul;
  EXPECT_TRUE(nm.w_transposed);
  EXPECT_NE(nm.epilogue.bias, nullptr);
  EXPECT_NE(nm.epilogue.residual, nullptr);
  EXPECT_TRUE(nm.epilogue.gelu);
}

// Measured on the H200 (bench/results/2026-11-29-session29.md; priced with its spec) the fold was slower than the
// norm kernel plus cuBLASLt on every shape timed, or level within 3%: prefill (the skinny-M
// template against cuBLASLt's GEMM), 16 token rows (their mma and conversion are instructions
// on W's path), the widest decode weight (cuBLASLt streams it closer to the copy rate), and
// small weights (the template's chain of phases). Each merge is priced and kept apart as
// unprofitable, with both prices in the ledger.
TEST(NormMatmulTest, WhereTheTemplateIsSlowerTheFoldIsPricedAndDeclined) {
  for (auto [norm, rows, k, n] : {std::tuple<std::string, int64_t, int64_t, int64_t>{"rms", 4096, 4096, 4096},
                                  {"rms", 1, 4096, 4096}, {"rms", 16, 4096, 4096}, {"rms", 1, 4096, 14336},
                                  {"rms", 16, 4096, 14336}, {"rms", 1, 1024, 1024}, {"rms", 16, 1024, 1024},
                                  {"rms", 1, 1024, 3072}, {"layer", 1, 4096, 4096}, {"layer", 4096, 4096, 4096},
                                  {"layer", 16, 4096, 14336}, {"layer", 1, 1024, 1024}, {"layer", 16, 1024, 3072}}) {
    SCOPED_TRACE(absl::StrCat(norm, " rows ", rows, " k ", k, " n ", n));
    Planned p = Plan(NormLinear(norm, rows, k, n), /*forced=*/false, H200Spec());
    EXPECT_EQ(CountKind(p.plan, RegionKind::kNormMatmul), 0);
    EXPECT_EQ(CountKind(p.plan, RegionKind::kMatmul), 1);
    std::string verdict;
    EXPECT_NE(NormMatmulReason(p.plan, &verdict), "") << LedgerJsonLines(p.plan);
    EXPECT_EQ(verdict, "unprofitable");
  }
}

// KILN_FORCE_FUSE=norm-matmul (FusionOptions::forced_rules) takes the fold the price declines,
// so that it can be timed, and the ledger says it was forced; a refused fold stays refused.
TEST(NormMatmulTest, AForcedFoldIsTakenAndMarked) {
  for (const std::string norm : {"rms", "layer"}) {
    SCOPED_TRACE(norm);
    auto g = testing::Parse(NormLinear(norm, 64, 4096, 4096));
    ASSERT_TRUE(DefaultPipeline().Run(*g, DebugOptions{}).ok());
    auto priced = PlanFusion(*g, H100Spec());
    ASSERT_TRUE(priced.ok()) << priced.status();
    EXPECT_EQ(CountKind(*priced, RegionKind::kNormMatmul), 0);
    FusionOptions forced;
    forced.forced_rules = {"norm-matmul"};
    auto plan = PlanFusion(*g, H100Spec(), forced);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(CountKind(*plan, RegionKind::kNormMatmul), 1) << LedgerJsonLines(*plan);
    bool marked = false;
    for (const FusionRecord& r : plan->records) {
      marked |= r.event == "fuse" && r.rule == "norm-matmul" && r.reason.find("forced by KILN_FORCE_FUSE") != std::string::npos;
    }
    EXPECT_TRUE(marked) << LedgerJsonLines(*plan);
  }
  auto f16 = testing::Parse(NormLinear("rms", 16, 256, 64, "f16"));
  ASSERT_TRUE(DefaultPipeline().Run(*f16, DebugOptions{}).ok());
  FusionOptions forced;
  forced.forced_rules = {"norm-matmul"};
  auto plan = PlanFusion(*f16, H100Spec(), forced);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CountKind(*plan, RegionKind::kNormMatmul), 0);
}

TEST(NormMatmulTest, RefusalsNameTheirReason) {
  struct Case {
    std::string text, reason;
  };
  const Case cases[] = {
      // x centred for the operand, but its variance taken of x as it is.
      {"graph g(x: bf16[16,256], W: bf16[256,64]) {\n  m: bf16[16,1] = reduce_mean(x) {axes = [1], keep_dims = true}\n"
       "  c: bf16[16,256] = sub(x, m)\n  q: bf16[16,256] = mul(x, x)\n"
       "  v: bf16[16,1] = reduce_mean(q) {axes = [1], keep_dims = true}\n  r: bf16[16,1] = rsqrt(v)\n"
       "  y: bf16[16,256] = mul(c, r)\n  z: bf16[16,64] = matmul(y, W)\n  return z\n}\n",
       "both centred"},
      {NormLinear("rms", 16, 256, 64, "f16"), "f16 matmul"},
      {NormLinear("rms", 16, 256, 64, "f32"), "f32 matmul"},
      {NormLinear("rms", 16, 100, 64), "multiples of 8"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    Planned p = Plan(c.text);
    EXPECT_EQ(CountKind(p.plan, RegionKind::kNormMatmul), 0);
    EXPECT_NE(NormMatmulReason(p.plan).find(c.reason), std::string::npos) << LedgerJsonLines(p.plan);
  }
  // The normalised tensor is also returned: it must be written, so the fold is refused.
  Planned both = Plan(NormLinear("rms", 16, 256, 64, "bf16", "", "z, y"));
  EXPECT_EQ(CountKind(both.plan, RegionKind::kNormMatmul), 0);
  EXPECT_NE(NormMatmulReason(both.plan).find("written anyway"), std::string::npos) << LedgerJsonLines(both.plan);
}

TEST(NormMatmulTest, TilesFitTheirBudgets) {
  auto g = testing::Parse(NormLinear("rms", 64, 4096, 14336));
  ASSERT_TRUE(DefaultPipeline().Run(*g, DebugOptions{}).ok());
  const Region whole = testing::WholeRegion(*g);
  ASSERT_EQ(whole.kind, RegionKind::kNormMatmul);
  ASSERT_NE(whole.norm_matmul, nullptr) << whole.placed.reason();
  const NormMatmulPlan& nm = *whole.norm_matmul;
  const std::vector<NormMatmulTiles> candidates = CandidateNormMatmulTiles(nm, H100Spec());
  EXPECT_GE(candidates.size(), 4u);
  for (const NormMatmulTiles& t : candidates) {
    EXPECT_TRUE(NormMatmulTilesFit(nm, t, H100Spec()));
    EXPECT_LE(t.f_tiles() * (t.tokens / 8) * 4, kNormMatmulAccumulators);
    EXPECT_LE(t.unroll * 8 * t.f_tiles(), kNormMatmulLoadWords);
    EXPECT_LE(NormMatmulSmemBytes(nm, t), H100Spec().smem_per_block_bytes);
  }
  // Enough blocks to keep W's loads in flight on every SM.
  EXPECT_GE(NormMatmulBlocks(nm, candidates[0]), 2 * H100Spec().sm_count);
  NormMatmulTiles too_wide = candidates[0];
  too_wide.block_n = 16 * 4 * too_wide.warps_n;  // 64 tokens x 4 fragments: 128 accumulators per thread
  EXPECT_FALSE(NormMatmulTilesFit(nm, too_wide, H100Spec()));
  NormMatmulTiles too_deep = candidates[0];
  too_deep.unroll = 8;  // 8 chunks of 16 words in flight
  EXPECT_FALSE(NormMatmulTilesFit(nm, too_deep, H100Spec()));
}

}  // namespace
}  // namespace kiln
