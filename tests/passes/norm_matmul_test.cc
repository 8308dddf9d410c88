// The norm_matmul kind (passes/fusion/norm_matmul_plan.h): which norm -> matmul pairs fold,
// the reason given where they do not, and the price that keeps large M on cuBLASLt.
#include <string>

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

Planned Plan(const std::string& text) {
  Planned p;
  p.graph = testing::Parse(text);
  EXPECT_NE(p.graph, nullptr);
  EXPECT_TRUE(DefaultPipeline().Run(*p.graph, DebugOptions{}).ok());
  auto plan = PlanFusion(*p.graph, H100Spec());
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (plan.ok()) p.plan = std::move(*plan);
  return p;
}

int CountKind(const FusionPlan& plan, RegionKind kind) {
  int n = 0;
  for (const Region& r : plan.regions) n += r.kind == kind;
  return n;
}

// The reason of the first norm-matmul record of `plan` (refused or unprofitable).
std::string NormMatmulReason(const FusionPlan& plan, std::string* verdict = nullptr) {
  for (const FusionRecord& r : plan.records) {
    if (r.rule.rfind("norm-matmul", 0) == 0 && r.verdict != "fuse") {
      if (verdict) *verdict = r.verdict;
      return r.reason;
    }
  }
  return "";
}

// Where launches dominate (decode rows, a 1024 x 1024 weight) the fold saves the norm kernel.
TEST(NormMatmulTest, RmsNormFoldsIntoItsLinearWhereLaunchesDominate) {
  for (int64_t rows : {1, 8, 16}) {
    SCOPED_TRACE(rows);
    Planned p = Plan(NormLinear("rms", rows, 1024, 1024));
    ASSERT_EQ(p.plan.regions.size(), 1u) << LedgerJsonLines(p.plan);
    const Region& r = p.plan.regions[0];
    EXPECT_EQ(r.kind, RegionKind::kNormMatmul);
    ASSERT_NE(r.norm_matmul, nullptr);
    EXPECT_EQ(r.norm_matmul->m, rows);
    EXPECT_EQ(r.norm_matmul->reductions.size(), 1u);
    EXPECT_EQ(r.norm_matmul->row_factors.size(), 1u);
    // The normalised tensor is never written: the region writes only z.
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0]->name(), "z");
  }
}

TEST(NormMatmulTest, TheEpilogueAndATransposedWeightFoldToo) {
  Planned p = Plan(NormLinear("rms", 8, 256, 96, "bf16",
                              "  zb: bf16[8,96] = add(z, bias)\n  zr: bf16[8,96] = add(zb, res)\n"
                              "  r: bf16[8,96] = gelu_tanh(zr)\n",
                              "r", /*transposed=*/true));
  ASSERT_EQ(p.plan.regions.size(), 1u) << LedgerJsonLines(p.plan);
  ASSERT_NE(p.plan.regions[0].norm_matmul, nullptr);
  const NormMatmulPlan& nm = *p.plan.regions[0].norm_matmul;
  EXPECT_TRUE(nm.w_transposed);
  EXPECT_NE(nm.epilogue.bias, nullptr);
  EXPECT_NE(nm.epilogue.residual, nullptr);
  EXPECT_TRUE(nm.epilogue.gelu);
}

// Prefill (the skinny-M template against cuBLASLt's GEMM), 16 token rows (their mma and
// conversion are instructions on W's path) and the widest decode weight (cuBLASLt streams it
// closer to the copy rate): the merge is priced and kept apart as unprofitable, with both
// prices in the ledger. One decoding row on a 4096 x 4096 weight folds: measured, the template
// takes what cuBLASLt alone does, and the norm's launch is saved.
TEST(NormMatmulTest, WhereTheTemplateIsSlowerTheFoldIsPricedAndDeclined) {
  Planned folded = Plan(NormLinear("rms", 1, 4096, 4096));
  EXPECT_EQ(CountKind(folded.plan, RegionKind::kNormMatmul), 1) << LedgerJsonLines(folded.plan);
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{4096, 4096}, {16, 4096}, {1, 14336}, {16, 14336}}) {
    SCOPED_TRACE(absl::StrCat("rows ", rows, " n ", n));
    Planned p = Plan(NormLinear("rms", rows, 4096, n));
    EXPECT_EQ(CountKind(p.plan, RegionKind::kNormMatmul), 0);
    EXPECT_EQ(CountKind(p.plan, RegionKind::kMatmul), 1);
    std::string verdict;
    EXPECT_NE(NormMatmulReason(p.plan, &verdict), "") << LedgerJsonLines(p.plan);
    EXPECT_EQ(verdict, "unprofitable");
  }
}

TEST(NormMatmulTest, RefusalsNameTheirReason) {
  struct Case {
    std::string text, reason;
  };
  const Case cases[] = {
      {NormLinear("layer", 16, 256, 64), "layer_norm centres"},
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
