// The vectorised plain kernel's rule (passes/fusion/plain_vector.h): which elementwise regions
// run V consecutive positions per thread, over which inner axes, and how each read sees the lanes.
// One property per case, on the whole graph as one region.
#include "passes/fusion/plain_vector.h"

#include "passes/fusion/layout_access.h"
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
  return p;
}

// [B,S,H,D] -> [B,H,S,D] keeps D: 16-byte vectors of bf16 along D, the read contiguous.
TEST(PlainVectorTest, APermuteKeepingTheInnermostAxisVectorisesAlongIt) {
  Planned p = Whole(R"(graph g(x: bf16[2,33,4,64]) {
    y: bf16[2,4,33,64] = transpose(x) {perm = [0, 2, 1, 3]}
    return y
  })");
  EXPECT_EQ(p.plan().plain_vector, 8);
  EXPECT_EQ(VectorInnerAxes(p.plan(), 8), 1);
  ASSERT_EQ(p.plan().reads.size(), 1u);
  EXPECT_EQ(LanesOf(p.plan(), 1, 8, p.plan().reads[0].form), LaneAccess::kContiguous);
}

// D = 12 halves into pieces of 6: a vector of 8 or 4 would straddle the boundary, 2 does not.
TEST(PlainVectorTest, AConcatAlongTheInnermostAxisNarrowsToItsPieceBoundaries) {
  Planned p = Whole(R"(graph g(x: bf16[3,12]) {
    a: bf16[3,6] = slice(x) {ends = [3, 6], starts = [0, 0], steps = [1, 1]}
    b: bf16[3,6] = slice(x) {ends = [3, 12], starts = [0, 6], steps = [1, 1]}
    n: bf16[3,6] = neg(b)
    y: bf16[3,12] = concat(n, a) {axis = 1}
    return y
  })");
  EXPECT_FALSE(p.plan().affine) << "a concat selects: never the tiled kernel";
  ASSERT_EQ(p.plan().selects.size(), 1u);
  EXPECT_EQ(p.plan().plain_vector, 2);
}

// A concat along an outer axis selects the same piece for a whole vector.
TEST(PlainVectorTest, AConcatAlongAnOuterAxisKeepsTheFullVector) {
  Planned p = Whole(R"(graph g(a: f16[3,7,16], b: f16[3,5,16]) {
    y: f16[3,12,16] = concat(a, b) {axis = 1}
    return y
  })");
  EXPECT_EQ(p.plan().plain_vector, 8);
  for (const LayoutRead& r : p.plan().reads) {
    EXPECT_EQ(LanesOf(p.plan(), 1, 8, r.form), LaneAccess::kContiguous) << r.input->name();
  }
}

// Equal pieces whose reshape splits the concat axis (q/k/v head gradients into one [tokens,
// 3 x hidden] tensor): the space axis splits at the piece boundaries, one space axis selects the
// piece, and each piece reads its input contiguously at a form valid over the whole space.
TEST(PlainVectorTest, EqualPiecesBehindAReshapeVectoriseThroughThePieceAxis) {
  Planned p = Whole(R"(graph g(q: f32[2,5,4,8], k: f32[2,5,4,8], v: f32[2,5,4,8]) {
    rq: f32[2,5,32] = reshape(q) {shape = [2, 5, 32]}
    rk: f32[2,5,32] = reshape(k) {shape = [2, 5, 32]}
    rv: f32[2,5,32] = reshape(v) {shape = [2, 5, 32]}
    c: f32[2,5,96] = concat(rq, rk, rv) {axis = 2}
    y: f32[10,96] = reshape(c) {shape = [10, 96]}
    return y
  })");
  EXPECT_EQ(p.plan().extents, (std::vector<int64_t>{10, 3, 32}));
  EXPECT_EQ(p.plan().plain_vector, 4);
  ASSERT_EQ(p.plan().reads.size(), 3u);
  for (const LayoutRead& r : p.plan().reads) {
    EXPECT_EQ(r.form.coeff, (std::vector<int64_t>{32, 0, 1})) << r.input->name();
    EXPECT_EQ(LanesOf(p.plan(), 1, 4, r.form), LaneAccess::kContiguous) << r.input->name();
  }
}

// Unequal pieces (grouped-query heads) have no piece axis: the walk stops at the reshape.
TEST(PlainVectorTest, UnequalPiecesBehindAReshapeStayScalar) {
  Planned p = Whole(R"(graph g(q: f16[2,5,4,8], k: f16[2,5,2,8]) {
    rq: f16[2,5,32] = reshape(q) {shape = [2, 5, 32]}
    rk: f16[2,5,16] = reshape(k) {shape = [2, 5, 16]}
    c: f16[2,5,48] = concat(rq, rk) {axis = 2}
    y: f16[10,48] = reshape(c) {shape = [10, 48]}
    return y
  })");
  EXPECT_EQ(p.plan().plain_vector, 1);
  EXPECT_NE(p.plan().why_plain.find("re-splits"), std::string::npos) << p.plan().why_plain;
}

// Patchify's innermost axis is 3 channels: a vector of 8 spans (pixel, channel), two inner axes,
// and each lane is gathered from its channel plane.
TEST(PlainVectorTest, PatchifyVectorisesOverTwoInnerAxesWithGatheredLanes) {
  Planned p = Whole(R"(graph g(x: f16[2,3,32,32]) {
    x6: f16[2,3,2,16,2,16] = reshape(x) {shape = [2, 3, 2, 16, 2, 16]}
    t: f16[2,2,2,16,16,3] = transpose(x6) {perm = [0, 2, 4, 3, 5, 1]}
    y: f16[2,4,768] = reshape(t) {shape = [2, 4, 768]}
    return y
  })");
  EXPECT_FALSE(p.plan().tiled());
  EXPECT_EQ(p.plan().plain_vector, 8);
  EXPECT_EQ(VectorInnerAxes(p.plan(), 8), 2);
  ASSERT_EQ(p.plan().reads.size(), 1u);
  EXPECT_EQ(LanesOf(p.plan(), 2, 8, p.plan().reads[0].form), LaneAccess::kGather);
}

// Regions of pointwise ops and broadcasts keep the first vectorised form (byte-identical
// kernels); an odd innermost axis and gather get no vectors.
TEST(PlainVectorTest, BroadcastOnlyOddAndGatherRegionsDoNotUseIt) {
  EXPECT_EQ(Whole(R"(graph g(x: bf16[4,64], b: bf16[64]) {
    y: bf16[4,64] = add(x, b)
    return y
  })").plan().plain_vector, 1);
  EXPECT_EQ(Whole(R"(graph g(x: f16[5,3,7]) {
    y: f16[3,5,7] = transpose(x) {perm = [1, 0, 2]}
    return y
  })").plan().plain_vector, 1);
  EXPECT_EQ(Whole(R"(graph g(w: f32[10,8], i: i64[3]) {
    y: f32[3,8] = gather(w, i) {axis = 0}
    return y
  })").plan().plain_vector, 1);
}

}  // namespace
}  // namespace kiln
