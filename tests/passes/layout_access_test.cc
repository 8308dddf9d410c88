// The layout analysis of elementwise regions (passes/fusion/layout_access.h): affine reads,
// the canonical space, which reads are staged, the tile rule, and what the cost model charges.
// One property per case, on the whole graph as one region (WholeRegion) or on the plan.
#include "passes/fusion/layout_access.h"

#include "passes/cost/cost_model.h"
#include "passes/fusion/priority_fusion.h"
#include "tests/codegen/layout_cases.h"
#include "tests/passes/pass_test_util.h"

namespace kiln {
namespace {

struct Planned {
  std::unique_ptr<Graph> graph;
  Region region;
  const LayoutPlan& plan() const { return *region.layout; }
};

Planned Whole(const std::string& text) {
  Planned p;
  p.graph = testing::Parse(text);
  p.region = testing::WholeRegion(*p.graph);
  EXPECT_NE(p.region.layout, nullptr) << "elementwise regions carry a layout plan";
  return p;
}

const LayoutRead* ReadOf(const LayoutPlan& plan, const std::string& input) {
  for (const LayoutRead& r : plan.reads) {
    if (r.input->name() == input) return &r;
  }
  return nullptr;
}

// A transpose feeding an add: x is staged along b, y read along a; 64 x 64 tiles of 16 bytes.
TEST(LayoutAccessTest, TransposeFeedingAnAddStagesTheTransposedInput) {
  Planned p = Whole(R"(graph g(x: f32[4096,4096], y: f32[4096,4096]) {
    t: f32[4096,4096] = transpose(x) {perm = [1, 0]}
    z: f32[4096,4096] = add(t, y)
    return z
  })");
  const LayoutPlan& plan = p.plan();
  ASSERT_TRUE(plan.tiled()) << plan.why_plain;
  EXPECT_EQ(plan.extents, (std::vector<int64_t>{4096, 4096}));
  EXPECT_EQ(plan.a, 1);
  EXPECT_EQ(plan.b, 0);
  EXPECT_EQ(ReadOf(plan, "x")->kind, ReadKind::kStaged);
  EXPECT_EQ(ReadOf(plan, "x")->plain_waste, 8.0);  // 32 floats, each its own 32-byte sector
  EXPECT_EQ(ReadOf(plan, "y")->kind, ReadKind::kAlong);
  EXPECT_EQ(plan.max_vector, 4);
  const TileChoice t = DefaultTile(plan);
  EXPECT_EQ(t.tb, 64);
  EXPECT_EQ(t.ta, 64);
  EXPECT_EQ(t.vector, 4);
  EXPECT_TRUE(CheckTile(plan, t).ok());
  EXPECT_EQ(plan.Tiles(t.tb, t.ta), 64 * 64);
}

// Whisper's [16,80,3000] -> [16,3000,80]: 64-wide tiles would pad a = 80 to 128 (the second tile a
// quarter used); 16 wide tiles it exactly.
TEST(LayoutAccessTest, ATileSideThatWouldBeMostlyPaddingNarrows) {
  Planned p = Whole(R"(graph g(x: f32[16,80,3000]) {
    y: f32[16,3000,80] = transpose(x) {perm = [0, 2, 1]}
    return y
  })");
  ASSERT_TRUE(p.plan().tiled()) << p.plan().why_plain;
  const TileChoice t = DefaultTile(p.plan());
  EXPECT_EQ(t.ta, 16);
  EXPECT_EQ(t.tb, 64);
  EXPECT_EQ(t.vector, 4);
  EXPECT_TRUE(CheckTile(p.plan(), t).ok());
}

// [B,S,H,D] -> [B,H,S,D] keeps the innermost axis: every read is along a, nothing is staged,
// and the batch axis of extent 1 is dropped.
TEST(LayoutAccessTest, PermuteThatKeepsTheInnermostAxisIsNotTiled) {
  Planned p = Whole(R"(graph g(x: bf16[1,2048,16,128]) {
    y: bf16[1,16,2048,128] = transpose(x) {perm = [0, 2, 1, 3]}
    return y
  })");
  EXPECT_FALSE(p.plan().tiled());
  EXPECT_EQ(p.plan().extents, (std::vector<int64_t>{16, 2048, 128}));
  EXPECT_EQ(ReadOf(p.plan(), "x")->kind, ReadKind::kAlong);
  EXPECT_EQ(p.plan().Summary(), "");
}

// Axes of extent 1 are dropped and axes that stay adjacent in every form merge: the 6-D
// permute of the two innermost axes is a batch of 2-D transposes.
TEST(LayoutAccessTest, UnitAxesDropAndAdjacentAxesMerge) {
  Planned p = Whole(R"(graph g(x: f16[2,1,3,1,32,64]) {
    y: f16[2,1,3,1,64,32] = transpose(x) {perm = [0, 1, 2, 3, 5, 4]}
    return y
  })");
  ASSERT_TRUE(p.plan().tiled());
  EXPECT_EQ(p.plan().extents, (std::vector<int64_t>{6, 64, 32}));
  EXPECT_EQ(p.plan().groups, (std::vector<std::vector<int>>{{0, 2}, {4}, {5}}));
  EXPECT_EQ(p.plan().RestAxes(), (std::vector<int>{0}));
}

// NCHW -> NHWC flattened to [N, H*W, C]: the reshape needs the space's H*W axis split, the
// walk restarts on [N, H, W, C], and canonicalisation merges H and W back.
TEST(LayoutAccessTest, ReshapeAfterATransposeSplitsTheSpace) {
  Planned p = Whole(R"(graph g(x: f16[2,64,7,9]) {
    t: f16[2,7,9,64] = transpose(x) {perm = [0, 2, 3, 1]}
    y: f16[2,63,64] = reshape(t) {shape = [2, 63, 64]}
    return y
  })");
  ASSERT_TRUE(p.plan().tiled()) << p.plan().why_plain;
  EXPECT_EQ(p.plan().space, (Shape{2, 7, 9, 64}));
  EXPECT_EQ(p.plan().extents, (std::vector<int64_t>{2, 63, 64}));
  EXPECT_EQ(p.plan().b, 1);
}

// Concat selects between pieces: not an affine map, the plain kernel, and the plan says why.
TEST(LayoutAccessTest, ConcatKeepsThePlainKernel) {
  Planned p = Whole(R"(graph g(a: f32[64,32], b: f32[64,32]) {
    t: f32[32,64] = transpose(a) {perm = [1, 0]}
    u: f32[32,64] = transpose(b) {perm = [1, 0]}
    y: f32[64,64] = concat(t, u) {axis = 0}
    return y
  })");
  EXPECT_FALSE(p.plan().affine);
  EXPECT_FALSE(p.plan().tiled());
  EXPECT_NE(p.plan().why_plain.find("concat"), std::string::npos) << p.plan().why_plain;
}

// Two permutations: the one along b is staged, the other read directly; the summary (kernel
// notes, ledger, dump) names it with its cost, and the cost model charges its wasted sectors.
TEST(LayoutAccessTest, ASecondPermutationIsReadDirectlyAndCharged) {
  Planned p = Whole(R"(graph g(x: f32[8,16,40], w: f32[40,8,16]) {
    tx: f32[40,16,8] = transpose(x) {perm = [2, 1, 0]}
    tw: f32[40,16,8] = transpose(w) {perm = [0, 2, 1]}
    y: f32[40,16,8] = sub(tx, tw)
    return y
  })");
  const LayoutPlan& plan = p.plan();
  ASSERT_TRUE(plan.tiled());
  const LayoutRead* staged = ReadOf(plan, "x");
  const LayoutRead* direct = ReadOf(plan, "w");
  ASSERT_TRUE(staged && direct);
  EXPECT_EQ(staged->kind, ReadKind::kStaged);
  EXPECT_EQ(direct->kind, ReadKind::kTransposed);
  EXPECT_NE(staged->unit_axis, direct->unit_axis);
  EXPECT_NE(plan.Summary().find("read directly"), std::string::npos) << plan.Summary();
  EXPECT_NE(plan.Summary().find("w transposed"), std::string::npos) << plan.Summary();
  const RunTimeEstimate e = EstimateRunTime(p.region, H100Spec());
  EXPECT_EQ(e.wasted_bytes, plan.WastedReadBytes(40 * 16 * 8));
  EXPECT_GT(e.wasted_bytes, 0);
  EXPECT_EQ(e.layout, plan.Summary());
}

// A broadcast along a is one element per row of a; along b it is read along a.
TEST(LayoutAccessTest, BroadcastReadsAlongEitherTileAxis) {
  Planned p = Whole(R"(graph g(x: f16[96,200], c: f16[200,1], r: f16[96]) {
    t: f16[200,96] = transpose(x) {perm = [1, 0]}
    u: f16[200,96] = mul(t, c)
    y: f16[200,96] = add(u, r)
    return y
  })");
  EXPECT_EQ(ReadOf(p.plan(), "c")->kind, ReadKind::kBroadcast);
  EXPECT_EQ(ReadOf(p.plan(), "r")->kind, ReadKind::kAlong);
  EXPECT_EQ(ReadOf(p.plan(), "x")->kind, ReadKind::kStaged);
}

// A step-2 slice of the innermost axis has no axis of stride 1: it stays in the plain kernel,
// whose price carries the sectors the stride wastes.
TEST(LayoutAccessTest, StridedReadStaysPlainAndPaysItsSectors) {
  Planned p = Whole(R"(graph g(x: f32[1024,2048]) {
    s: f32[1024,1024] = slice(x) {ends = [1024, 2048], starts = [0, 0], steps = [1, 2]}
    y: f32[1024,1024] = neg(s)
    return y
  })");
  EXPECT_FALSE(p.plan().tiled());
  EXPECT_EQ(ReadOf(p.plan(), "x")->kind, ReadKind::kStrided);
  EXPECT_EQ(ReadOf(p.plan(), "x")->plain_waste, 2.0);
  const RunTimeEstimate e = EstimateRunTime(p.region, H100Spec());
  EXPECT_EQ(e.wasted_bytes, 1024 * 1024 * 4);  // one extra sector's worth per element read
}

// Priced as it runs: the tiled transpose + add at the copy bandwidth (its last wave's tail
// included) is far below the plain kernel's price with 8x the sectors of x.
TEST(LayoutAccessTest, TiledPriceIsTheCopyBandwidthPlainPriceCarriesTheWaste) {
  Planned p = Whole(R"(graph g(x: f32[4096,4096], y: f32[4096,4096]) {
    t: f32[4096,4096] = transpose(x) {perm = [1, 0]}
    z: f32[4096,4096] = add(t, y)
    return z
  })");
  const DeviceSpec h100 = H100Spec();
  const RunTimeEstimate tiled = EstimateRunTime(p.region, h100);
  const double bytes = 3.0 * 4096 * 4096 * 4;
  EXPECT_EQ(tiled.wasted_bytes, 0);
  EXPECT_GE(tiled.memory_us, bytes / h100.dram_bytes_per_us);
  EXPECT_LT(tiled.memory_us, 1.1 * bytes / h100.dram_bytes_per_us);
  EXPECT_EQ(tiled.blocks, 4096);
  // The same region without its plan runs (and is priced as) the plain kernel.
  Region plain = p.region;
  auto untiled = std::make_shared<LayoutPlan>(*p.region.layout);
  untiled->b = -1;
  for (LayoutRead& r : untiled->reads) {
    if (r.kind == ReadKind::kStaged) r.kind = ReadKind::kTransposed;
  }
  plain.layout = untiled;
  const RunTimeEstimate e = EstimateRunTime(plain, h100);
  EXPECT_EQ(e.wasted_bytes, 7LL * 4096 * 4096 * 4);
  EXPECT_GT(e.memory_us, 3 * tiled.memory_us);
}

// Rotary embeddings as exporters write them (Slice, Neg, Concat, Mul, Add) plan into one
// pointwise region over the output: the halves are members evaluated where the concat needs them.
TEST(LayoutAccessTest, RotaryEmbeddingIsOneRegion) {
  auto g = testing::Parse(testing_codegen::RotaryGraph("bf16", {2, 4}, 33, 64));
  auto plan = PlanFusion(*g, H100Spec());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->num_kernels(), 1);
  EXPECT_EQ(plan->regions[0].kind, RegionKind::kPointwise);
  EXPECT_EQ(plan->regions[0].nodes.size(), 7u);
  EXPECT_EQ(plan->regions[0].space, (Shape{2, 4, 33, 64}));
}

}  // namespace
}  // namespace kiln
