// The attention kind on the CPU: strided views through layout chains, and the plan an
// attention region keeps (what folds into its loads and store, what does not).
#include <cstdio>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "passes/fusion/attention_plan.h"
#include "passes/fusion/region_kind.h"
#include "tests/codegen/attention_cases.h"
#include "tests/codegen/codegen_test_util.h"

namespace kiln {
namespace {

using testing_codegen::AnalyzeText;
using testing_codegen::AttentionRegion;
using testing_codegen::GqaGraph;
using testing_codegen::QkvGraph;

TEST(StridedViewTest, ReshapeSplitsAndMergesAtoms) {
  auto g = ParseGraph(R"(graph g(x: f32[6, 8]) {
      r = reshape(x) {shape = [2, 3, 4, 2]}
      t = transpose(r) {perm = [0, 2, 1, 3]}
      m = reshape(t) {shape = [8, 3, 2]}
      return m
    })");
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* x = (*g)->inputs()[0];
  const Node* m = (*g)->outputs()[0].node;
  const Node* t = m->operand(0);
  const Node* r = t->operand(0);
  StridedView v = ContiguousView(x);
  v = *ViewThrough(v, r);
  EXPECT_EQ(v.shape(), (Shape{2, 3, 4, 2}));
  v = *ViewThrough(v, t);
  // [2, 4, 3, 2]: strides 24, 2, 8, 1.
  EXPECT_EQ(v.ToString(), "x[offset 0: (2:24) (4:2) (3:8) (2:1)]");
  // [8, 3, 2]: the first dim merges (2:24)(4:2), which do not chain: two atoms.
  std::optional<StridedView> merged = ViewThrough(v, m);
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->ToString(), "x[offset 0: (2:24 4:2) (3:8) (2:1)]");
  EXPECT_FALSE(SingleAtom(merged->dims[0]).has_value());
  EXPECT_EQ(SingleAtom(merged->dims[1])->stride, 8);
}

TEST(StridedViewTest, SliceOffsetsAndBroadcastStrides) {
  auto g = ParseGraph(R"(graph g(x: f32[4, 10]) {
      s = slice(x) {starts = [1, 2], ends = [4, 10], steps = [1, 2]}
      b = broadcast_to(s) {shape = [5, 3, 4]}
      return b
    })");
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* b = (*g)->outputs()[0].node;
  StridedView v = *ViewThrough(*ViewThrough(ContiguousView((*g)->inputs()[0]), b->operand(0)), b);
  EXPECT_EQ(v.ToString(), "x[offset 12: (5:0) (3:10) (4:2)]");
}

TEST(AttentionPlanTest, QkvSlicesAndHeadTransposesFoldIntoOneKernel) {
  Analysis a = AnalyzeText(QkvGraph("bf16", 2, 64, 4, 32, true));
  const Region* r = AttentionRegion(a);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->placed) << r->placed.reason();
  ASSERT_NE(r->attention, nullptr);
  EXPECT_EQ(r->nodes.size(), 12u);
  EXPECT_EQ(a.plan.regions.size(), 1u) << "no layout kernel may remain around attention";
  const AttentionPlan& p = *r->attention;
  EXPECT_EQ(p.batch, 8);
  EXPECT_TRUE(p.causal);
  EXPECT_DOUBLE_EQ(p.scale, 1.0 / std::sqrt(32.0));
  // q[b, h, s, d] = qkv[(b S + s), h D + d]: batch atoms (2: S x 384) (4: 32); rows 384 apart.
  EXPECT_EQ(p.q.ToString(), "qkv +0 batch (2:24576 4:32) seq 64:384 inner 32:1");
  EXPECT_EQ(p.k.ToString(), "qkv +128 batch (2:24576 4:32) seq 64:384 inner 32:1");
  EXPECT_EQ(p.v.ToString(), "qkv +256 batch (2:24576 4:32) seq 64:384 inner 32:1");
  EXPECT_EQ(p.out.ToString(), "y +0 batch (2:8192 4:32) seq 64:128 inner 32:1");
}

TEST(AttentionPlanTest, GroupedQueryHeadsReadSharedKeysWithoutACopy) {
  // K/V with 2 heads serve 8 query heads: unsqueeze, expand, merge (as exporters write GQA).
  Analysis a = AnalyzeText(GqaGraph("f16", 1, 8, 2, 33, 40, 64, false, 0.125));
  const Region* r = AttentionRegion(a);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->placed) << r->placed.reason();
  EXPECT_EQ(a.plan.regions.size(), 1u);
  // Query head h reads key head h / 4. With 33 queries the 4 heads of a group share a block
  // (group 4): K/V are addressed by the K/V batch, h / 4, atoms (2: 2560).
  EXPECT_EQ(r->attention->group, 4);
  EXPECT_EQ(r->attention->k.ToString(), "k +0 batch (2:2560) seq 40:64 inner 64:1");
  EXPECT_EQ(r->attention->q.ToString(), "q +0 batch (8:2112) seq 33:64 inner 64:1");
  // Longer queries keep one head per block and read K/V through the stride-0 atom (4: 0).
  Analysis prefill = AnalyzeText(GqaGraph("f16", 1, 8, 2, 100, 40, 64, false, 0.125));
  const Region* p = AttentionRegion(prefill);
  ASSERT_TRUE(p != nullptr && p->attention);
  EXPECT_EQ(p->attention->group, 1);
  EXPECT_EQ(p->attention->k.ToString(), "k +0 batch (2:2560 4:0) seq 40:64 inner 64:1");
}

TEST(AttentionPlanTest, PaddingMaskIsReadThroughItsBroadcast) {
  Analysis a = AnalyzeText(R"(graph g(q: bf16[2,4,16,64], k: bf16[2,4,24,64], v: bf16[2,4,24,64], m: bf16[2,1,1,24]) {
      y = attention(q, k, v, m) {causal = false, scale = 0.0}
      return y
    })");
  const Region* r = AttentionRegion(a);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->attention && r->attention->mask);
  // [2, 1, 1, 24] broadcast to [2, 4, 16, 24]: batch atoms (2: 24) (4: 0), rows 0, keys 1.
  EXPECT_EQ(r->attention->mask->ToString(), "m +0 batch (2:24 4:0) seq 16:0 inner 24:1");
}

TEST(AttentionPlanTest, UnsupportedCasesAreLoweredBeforeFusionWithAReason) {
  // Head dims that are not a multiple of 8, or over 256: the template refuses, lower_attention
  // writes matmul, softmax, matmul, and no attention region remains.
  for (const char* text : {R"(graph g(q: f32[1,2,16,320], k: f32[1,2,16,320], v: f32[1,2,16,320]) {
                             y = attention(q, k, v) {causal = true, scale = 0.0}
                             return y })",
                           R"(graph g(q: bf16[1,2,16,20], k: bf16[1,2,16,20], v: bf16[1,2,16,20]) {
                             y = attention(q, k, v) {causal = false, scale = 0.0}
                             return y })"}) {
    Analysis a = AnalyzeText(text);
    EXPECT_EQ(AttentionRegion(a), nullptr) << text;
  }
  auto g = ParseGraph(R"(graph g(q: f32[1,2,16,320], k: f32[1,2,16,320], v: f32[1,2,16,320]) {
      y = attention(q, k, v) {causal = true, scale = 0.0}
      return y })");
  ASSERT_TRUE(g.ok());
  const FusionDecision covers = AttentionTemplateCovers(*(*g)->outputs()[0].node);
  EXPECT_FALSE(covers);
  EXPECT_EQ(covers.rule(), "attention-head-dim");
}

// f32 attention runs in the template (3xTF32), with tiles that fit twice-as-wide rows: the
// 16-bit defaults fit as they are, with rows of 4-byte elements padded by 16 bytes.
TEST(AttentionPlanTest, F32RunsInTheTemplateWithTilesThatFit) {
  for (int d : {64, 128, 256}) {
    const std::string shape = "[2,4,300," + std::to_string(d) + "]";
    Analysis f32 = AnalyzeText("graph g(q: f32" + shape + ", k: f32" + shape + ", v: f32" + shape +
                               ") {\n y = attention(q, k, v) {causal = true, scale = 0.0}\n return y }");
    Analysis bf16 = AnalyzeText("graph g(q: bf16" + shape + ", k: bf16" + shape + ", v: bf16" + shape +
                                ") {\n y = attention(q, k, v) {causal = true, scale = 0.0}\n return y }");
    const Region* r = AttentionRegion(f32);
    ASSERT_NE(r, nullptr) << d;
    ASSERT_TRUE(r->placed && r->attention) << r->placed.reason();
    DeviceSpec device = f32.plan.device;
    device.wgmma = false;  // the 16-bit default on sm_90a is the wgmma kernel; compare mma.sync
    const AttentionTiles t = DefaultAttentionTiles(*r->attention, device);
    EXPECT_FALSE(t.wgmma);
    EXPECT_TRUE(AttentionTilesFit(*r->attention, t, device)) << d;
    const AttentionTiles t16 = DefaultAttentionTiles(*AttentionRegion(bf16)->attention, device);
    EXPECT_EQ(t.block_m, t16.block_m) << d;
    EXPECT_EQ(AttentionSmemBytes(*r->attention, t), 4 * (d + 4) * (t.block_m + 2 * t.stages * t.block_n)) << d;
    for (const AttentionTiles& c : CandidateAttentionTiles(*r->attention, f32.plan.device)) {
      EXPECT_FALSE(c.wgmma) << "the wgmma kernel is 16-bit only";
    }
  }
}

// Decoding, 32 x 4 K/V batches of 8192 keys (128 items): the default splits the keys so the
// grid fills the resident blocks in whole waves: 2 splits, 256 blocks on 264 slots, not 3 (384
// blocks: a wave and a half). Deeper pipelines are candidates, each with its own wave-filling
// split, and so are twice and half the default's split. The cost model charges a partial wave.
TEST(AttentionPlanTest, DecodingSplitsFillWholeWaves) {
  Analysis a = AnalyzeText(GqaGraph("bf16", 32, 32, 4, 1, 8192, 128, false, 0.0));
  const Region* r = AttentionRegion(a);
  ASSERT_TRUE(r != nullptr && r->attention);
  const AttentionPlan& plan = *r->attention;
  const DeviceSpec& device = a.plan.device;
  const AttentionTiles d = DefaultAttentionTiles(plan, device);
  EXPECT_FALSE(d.wgmma);
  const int64_t slots = device.sm_count * AttentionBlocksPerSm(plan, d, device);
  EXPECT_EQ(slots, 264);
  EXPECT_EQ(d.split, 2);
  EXPECT_GE(WaveFill(128 * d.split, slots), 0.9);
  bool deep = false, doubled = false;
  for (const AttentionTiles& c : CandidateAttentionTiles(plan, device)) {
    if (c.stages == 4 && c.block_n == 32) {  // 2 blocks an SM: 2 splits fill a wave too
      deep = true;
      EXPECT_GE(WaveFill(128 * c.split, device.sm_count * AttentionBlocksPerSm(plan, c, device)), 0.9);
    }
    doubled |= c.split == 4 && c.block_m == d.block_m && c.block_n == d.block_n;
  }
  EXPECT_TRUE(deep);
  EXPECT_TRUE(doubled);
  EXPECT_DOUBLE_EQ(WaveFill(384, 264), 384.0 / 528.0);
  EXPECT_DOUBLE_EQ(WaveFill(256, 264), 1.0 * 256 / 264);
}

// An attention_lse beside its attention (same q, k, mask, attributes) is written by the same
// kernel: one region, both outputs, the plan names it; the layouts still fold. One that differs
// in an attribute is not its twin: it is lowered before fusion and the attention region is
// as before.
TEST(AttentionPlanTest, ALogSumExpIsWrittenByItsAttentionsKernel) {
  for (const char* dtype : {"bf16", "f32"}) {
    const std::string t(dtype);
    Analysis a = AnalyzeText("graph g(qkv: " + t + R"([600,192]) {
        q2 = slice(qkv) {starts = [0, 0], ends = [600, 64], steps = [1, 1]}
        k2 = slice(qkv) {starts = [0, 64], ends = [600, 128], steps = [1, 1]}
        v2 = slice(qkv) {starts = [0, 128], ends = [600, 192], steps = [1, 1]}
        q4 = reshape(q2) {shape = [2, 300, 1, 64]}
        k4 = reshape(k2) {shape = [2, 300, 1, 64]}
        v4 = reshape(v2) {shape = [2, 300, 1, 64]}
        q = transpose(q4) {perm = [0, 2, 1, 3]}
        k = transpose(k4) {perm = [0, 2, 1, 3]}
        v = transpose(v4) {perm = [0, 2, 1, 3]}
        y = attention(q, k, v) {causal = true, scale = 0.0}
        l = attention_lse(q, k) {causal = true, scale = 0.0}
        return y, l
      })");
    const Region* r = AttentionRegion(a);
    ASSERT_NE(r, nullptr) << dtype;
    ASSERT_TRUE(r->placed && r->attention) << r->placed.reason();
    ASSERT_NE(r->attention->lse, nullptr);
    EXPECT_EQ(r->attention->lse->name(), "l");
    EXPECT_EQ(r->outputs.size(), 2u);
    EXPECT_EQ(a.plan.regions.size(), 1u) << "the slices and views fold in, the log-sum-exp is no kernel of its own";
    auto ks = EmitKernel(*r, DefaultParams(*r, a.plan.device));
    ASSERT_TRUE(ks.ok()) << ks.status();
    EXPECT_NE(ks->source.find("kHasLse = true"), std::string::npos);
    EXPECT_NE(ks->source.find("float* Lse(long long b)"), std::string::npos);
  }
  Analysis other = AnalyzeText(R"(graph g(q: bf16[1,2,64,64], k: bf16[1,2,64,64], v: bf16[1,2,64,64]) {
      y = attention(q, k, v) {causal = true, scale = 0.0}
      l = attention_lse(q, k) {causal = false, scale = 0.0}
      return y, l
    })");
  const Region* r = AttentionRegion(other);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->attention->lse, nullptr);
  EXPECT_EQ(r->outputs.size(), 1u);
}

TEST(AttentionPlanTest, AResultReadTwiceKeepsItsConsumersOutside) {
  // y is an output and also feeds a transpose: the kernel writes y only; the transpose stays
  // a layout region of its own.
  Analysis a = AnalyzeText(R"(graph g(q: bf16[1,2,16,64], k: bf16[1,2,16,64], v: bf16[1,2,16,64]) {
      y = attention(q, k, v) {causal = false, scale = 0.0}
      t = transpose(y) {perm = [0, 2, 1, 3]}
      return y, t
    })");
  const Region* r = AttentionRegion(a);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->placed);
  EXPECT_EQ(r->nodes.size(), 1u);
  EXPECT_EQ(a.plan.regions.size(), 2u);
}

TEST(AttentionPlanTest, CausalFlopsCountOnlyTheComputedKeyTiles) {
  Analysis a = AnalyzeText(QkvGraph("bf16", 1, 256, 2, 64, true));
  const AttentionPlan& p = *AttentionRegion(a)->attention;
  // Rows of 64: keys 64, 128, 192, 256 (tiles of 64): 640 x 64 rows x 2 x 128 x 2 batches.
  EXPECT_DOUBLE_EQ(p.Flops(64, 64), 2.0 * 640 * 64 * 128 * 2);
  // Exact causal count: sum over rows of (i + 1) keys.
  EXPECT_DOUBLE_EQ(p.Flops(1, 1), 2.0 * (256.0 * 257 / 2) * 128 * 2);
}

// The TMA kernel's tensor maps: K and V each a map over its source (the head dim, the keys,
// the batch atoms that are not broadcasts), the default on an sm_90 spec where they fit, and
// its refusals named.
TEST(AttentionPlanTest, TensorMapsOfKAndV) {
  {  // grouped-query heads: the broadcast atom of the query heads drops out of the map (batch and
     // K/V heads chain into one atom)
    Analysis a = AnalyzeText(GqaGraph("bf16", 2, 32, 8, 4096, 4096, 128, true, 0.0));
    const Region* r = AttentionRegion(a);
    ASSERT_NE(r, nullptr);
    const AttentionPlan& plan = *r->attention;
    EXPECT_TRUE(AttentionTmaFit(plan)) << AttentionTmaFit(plan).reason();
    const AttentionTiles t = DefaultAttentionTiles(plan, H100Spec());
    EXPECT_TRUE(t.tma && t.wgmma && t.block_m == 128 && t.block_n == 128 && t.stages == 3 && t.Threads() == 384);
    const TensorMapSpec m = AttentionTensorMap(plan, plan.k, plan.D, t, 0);
    EXPECT_EQ(m.ToString(), "arg 0 +0 bf16 dims [128, 4096, 16] strides [256, 1048576] box [64, 128, 1] swizzle 128");
    const KernelParams p = DefaultParams(*r, H100Spec());
    absl::StatusOr<KernelSource> ks = EmitKernel(*r, p);
    ASSERT_TRUE(ks.ok()) << ks.status();
    ASSERT_EQ(ks->launch.tensor_maps.size(), 2u);
    EXPECT_EQ(ks->args[ks->launch.tensor_maps[1].arg].tensor, "v");
    EXPECT_NE(ks->source.find("KCoords(long long b, int (&c)[5]) const { c[2] = static_cast<int>(b / 4LL); }"),
              std::string::npos)
        << ks->source;
    EXPECT_NE(ks->Signature().find("tensor map: arg 1"), std::string::npos) << ks->Signature();
  }
  {  // heads sliced out of one projection: strided head atoms, an offset per operand
    Analysis a = AnalyzeText(QkvGraph("bf16", 2, 300, 4, 96, false));
    const AttentionPlan& plan = *AttentionRegion(a)->attention;
    ASSERT_TRUE(AttentionTmaFit(plan)) << AttentionTmaFit(plan).reason();
    const AttentionTiles t = DefaultAttentionTiles(plan, H100Spec());
    EXPECT_TRUE(t.tma);
    EXPECT_EQ(AttentionTensorMap(plan, plan.v, plan.E, t, 0).ToString(),
              "arg 0 +768 bf16 dims [96, 300, 4, 2] strides [2304, 192, 691200] box [64, 128, 1, 1] swizzle 128");
    absl::StatusOr<KernelSource> ks = EmitKernel(*AttentionRegion(a), DefaultParams(*AttentionRegion(a), H100Spec()));
    ASSERT_TRUE(ks.ok()) << ks.status();
    EXPECT_NE(ks->source.find("c[2] = static_cast<int>((b) % 4LL); c[3] = static_cast<int>(b / 4LL);"), std::string::npos)
        << ks->source;
  }
  {  // f32, dropout and decoding stay on the other kernels
    Analysis f32 = AnalyzeText(QkvGraph("f32", 1, 256, 2, 64, true));
    EXPECT_FALSE(AttentionTmaFit(*AttentionRegion(f32)->attention));
    Analysis decode = AnalyzeText(GqaGraph("bf16", 2, 32, 8, 1, 4096, 128, false, 0.0));
    EXPECT_FALSE(DefaultAttentionTiles(*AttentionRegion(decode)->attention, H100Spec()).tma);
    std::string text = GqaGraph("bf16", 1, 8, 8, 512, 512, 128, true, 0.0);
    const std::string plain = "{causal = true, scale = 0.000000}";
    ASSERT_NE(text.find(plain), std::string::npos) << text;
    text.replace(text.find(plain), plain.size(), "{causal = true, scale = 0.0, dropout = 0.1, seed = 3}");
    Analysis drop = AnalyzeText(text);
    EXPECT_FALSE(DefaultAttentionTiles(*AttentionRegion(drop)->attention, H100Spec()).tma);
    for (const AttentionTiles& c : CandidateAttentionTiles(*AttentionRegion(drop)->attention, H100Spec())) {
      EXPECT_FALSE(c.tma) << "dropout's registers were not fitted into the TMA kernel";
    }
  }
}

}  // namespace
}  // namespace kiln
