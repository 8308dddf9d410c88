// canonicalize: each case states one rewrite; IR text in, CHECK lines out.
#include "passes/canonicalize.h"

#include "ir/compare.h"
#include "ir/interpreter.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RunPass;

std::string Canon(const std::string& text, bool expect_change = true) {
  auto g = Parse(text);
  if (!g) return "";
  Canonicalize pass;
  EXPECT_EQ(RunPass(pass, *g), expect_change);
  return PrintGraph(*g);
}

TEST(CanonicalizeTest, NegativeReductionAxesBecomePositiveAndSorted) {
  EXPECT_TRUE(FileCheck(Canon(R"(graph g(x: f32[2,3,4]) {
    r: f32[2] = reduce_sum(x) {axes = [-1, 1], keep_dims = false}
    return r
  })"), "CHECK: reduce_sum(x) {axes = [1, 2], keep_dims = false}"));
}

// A reduction over axes of extent 1 reduces nothing: it is its operand, reshaped (every op,
// keep_dims or not).
TEST(CanonicalizeTest, ReductionOverUnitAxesIsAReshape) {
  const std::string out = Canon(R"(graph g(x: f32[1048576,1], h: bf16[4,1,1,8]) {
    s: f32[1048576] = reduce_sum(x) {axes = [1], keep_dims = false}
    m: bf16[4,1,1,8] = reduce_mean(h) {axes = [1, 2], keep_dims = true}
    a: bf16[4,8] = reduce_max(h) {axes = [1, 2], keep_dims = false}
    b: bf16[4,8] = reduce_min(h) {axes = [-2, -3], keep_dims = false}
    return s, m, a, b
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK-NOT: reduce_
    CHECK: f32[1048576] = reshape(x) {shape = [1048576]}
    CHECK: bf16[4,8] = reshape(h) {shape = [4, 8]}
    CHECK: return
  )")) << out;
}

// Reduced axes of extent 1 are dropped from a reduction over others, so what remains can be
// one run of adjacent axes (one reduction, not two).
TEST(CanonicalizeTest, UnitAxesLeaveAReduction) {
  const std::string out = Canon(R"(graph g(x: f32[1,6,1,5]) {
    s: f32[6] = reduce_sum(x) {axes = [0, 2, 3], keep_dims = false}
    return s
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: f32[1,6,1,1] = reduce_sum(x) {axes = [3], keep_dims = true}
    CHECK-NOT: reduce_sum
    CHECK: f32[6] = reshape
  )")) << out;
}

// A reduction over two runs of axes (N and HW of NCHW) becomes two, innermost first; a bf16
// input is widened first and the result narrowed last, so the partial means stay f32.
// A short innermost run (5 x 5) would leave a row kernel's warps reading scattered runs: two
// reductions, the partial results in f32.
TEST(CanonicalizeTest, ReductionOverTwoRunsKeepsItsPartialsInF32) {
  const std::string out = Canon(R"(graph g(x: bf16[4,8,5,5]) {
    m: bf16[8] = reduce_mean(x) {axes = [0, 2, 3], keep_dims = false}
    return m
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: f32[4,8,5,5] = cast(x) {dtype = "f32"}
    CHECK: f32[4,8,1,1] = reduce_mean
    CHECK: {axes = [2, 3], keep_dims = true}
    CHECK: f32[1,8,1,1] = reduce_mean
    CHECK: {axes = [0], keep_dims = true}
    CHECK: bf16[1,8,1,1] = cast
    CHECK: bf16[8] = reshape
  )")) << out;
}

// Batch norm's statistics over N, H and W of [N, C, H, W]: one reduction over the trailing axes
// of x transposed to [C, N, H, W] (a row per channel, read in runs of H x W), and the transpose
// moves through the subtraction of the mean to x, so that one row kernel computes both.
TEST(CanonicalizeTest, ReductionOverTwoRunsWithALongInnermostRunReadsThroughATranspose) {
  const std::string out = Canon(R"(graph g(x: bf16[4,8,6,6]) {
    m: bf16[1,8,1,1] = reduce_mean(x) {axes = [0, 2, 3], keep_dims = true}
    d: bf16[4,8,6,6] = sub(x, m)
    q: bf16[4,8,6,6] = mul(d, d)
    v: bf16[8] = reduce_mean(q) {axes = [0, 2, 3], keep_dims = false}
    return m, v
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: m.transpose: bf16[8,4,6,6] = transpose(x) {perm = [1, 0, 2, 3]}
    CHECK: m.reduce_mean: bf16[8,1,1,1] = reduce_mean(m.transpose) {axes = [1, 2, 3], keep_dims = true}
    CHECK: m: bf16[1,8,1,1] = reshape(m.reduce_mean)
    CHECK: v.transpose: bf16[8,4,6,6] = transpose(x) {perm = [1, 0, 2, 3]}
    CHECK: v.sub: bf16[8,4,6,6] = sub(v.transpose, m.reduce_mean)
    CHECK: reduce_mean(v.mul) {axes = [1, 2, 3], keep_dims = true}
    CHECK: v: bf16[8] = reshape
  )")) << out;
}

// Batch norm's normalisation reads x beside statistics that read it through a transpose: the
// whole pointwise chain moves into the transposed space (its per-channel operands become
// reshapes), and its result is transposed back, so x is read in one layout. A pointwise op
// that also reads another tensor of x's shape stays where it is.
TEST(CanonicalizeTest, ANormalisationBesideTransposedStatisticsMovesIntoTheirSpace) {
  const char* text = R"(graph g(x: f16[4,8,6,6], w: f16[8,1,1], r: f16[4,8,6,6]) {
    m: f16[1,8,1,1] = reduce_mean(x) {axes = [0, 2, 3], keep_dims = true}
    d: f16[4,8,6,6] = sub(x, m)
    q: f16[4,8,6,6] = mul(d, d)
    v: f16[1,8,1,1] = reduce_mean(q) {axes = [0, 2, 3], keep_dims = true}
    s: f16[1,8,1,1] = rsqrt(v)
    n: f16[4,8,6,6] = mul(d, s)
    y: f16[4,8,6,6] = mul(n, w)
    z: f16[4,8,6,6] = add(x, r)
    return y, z
  })";
  const std::string out = Canon(text);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: z: f16[4,8,6,6] = add(x, r)
    CHECK: m.transpose: f16[8,4,6,6] = transpose(x) {perm = [1, 0, 2, 3]}
    CHECK: y.transpose: f16[8,4,6,6] = transpose(x) {perm = [1, 0, 2, 3]}
    CHECK: y.sub: f16[8,4,6,6] = sub(y.transpose, m.reduce_mean)
    CHECK: y.reshape.1: f16[8,1,1,1] = reshape(s)
    CHECK: y.mul: f16[8,4,6,6] = mul(y.sub, y.reshape.1)
    CHECK: y.reshape.3: f16[8,1,1,1] = reshape(w)
    CHECK: y.mul.1: f16[8,4,6,6] = mul(y.mul, y.reshape.3)
    CHECK: y: f16[4,8,6,6] = transpose(y.mul.1) {perm = [1, 0, 2, 3]}
  )")) << out;
  // The same values, to the bit: the interpreter rounds every op to f16 in either layout. Also
  // a permutation that is not its own inverse (statistics over axes 0, 3 and 4 of a 5-D tensor:
  // [1, 2, 0, 3, 4], transposed back by [2, 0, 1, 3, 4]).
  const char* five = R"(graph g(x: f32[2,3,4,5,8], w: f32[3,4,1,1]) {
    m: f32[1,3,4,1,1] = reduce_mean(x) {axes = [0, 3, 4], keep_dims = true}
    d: f32[2,3,4,5,8] = sub(x, m)
    q: f32[2,3,4,5,8] = mul(d, d)
    v: f32[1,3,4,1,1] = reduce_mean(q) {axes = [0, 3, 4], keep_dims = true}
    n: f32[2,3,4,5,8] = mul(d, v)
    y: f32[2,3,4,5,8] = add(n, w)
    return y
  })";
  EXPECT_TRUE(FileCheck(Canon(five), "CHECK: y: f32[2,3,4,5,8] = transpose(y.add) {perm = [2, 0, 1, 3, 4]}"));
  for (const char* graph : {text, five}) {
    auto before = Parse(graph);
    auto after = Parse(graph);
    ASSERT_TRUE(before && after);
    Canonicalize pass;
    ASSERT_TRUE(RunPass(pass, *after));
    const std::map<std::string, Tensor> inputs = RandomInputs(*before, 7);
    auto want = Interpret(*before, inputs);
    auto got = Interpret(*after, inputs);
    ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
    ASSERT_EQ(want->size(), got->size());
    for (size_t i = 0; i < want->size(); ++i) {
      Comparison c = Compare((*got)[i], (*want)[i], Tolerance{0, 0});
      EXPECT_TRUE(c.ok()) << "output " << i << ": " << c.ToString() << "\n" << PrintGraph(*after);
    }
  }
}

TEST(CanonicalizeTest, SoftmaxAxisIsNormalised) {
  EXPECT_TRUE(FileCheck(Canon(R"(graph g(x: f32[2,3]) {
    s: f32[2,3] = softmax(x) {axis = -1}
    return s
  })"), "CHECK: softmax(x) {axis = 1}"));
}

TEST(CanonicalizeTest, NoOpLayoutAndCastFoldAway) {
  std::string out = Canon(R"(graph g(x: f32[2,3]) {
    a: f32[2,3] = reshape(x) {shape = [2, 3]}
    b: f32[2,3] = cast(a) {dtype = "f32"}
    c: f32[2,3] = transpose(b) {perm = [0, 1]}
    d: f32[2,3] = broadcast_to(c) {shape = [2, 3]}
    e: f32[2,3] = exp(d)
    return e
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK-NOT: reshape
    CHECK-NOT: cast
    CHECK: exp(x)
  )")) << out;
}

TEST(CanonicalizeTest, ReshapeChainsAndTransposePairsCompose) {
  std::string out = Canon(R"(graph g(x: f32[2,3,4]) {
    a: f32[6,4] = reshape(x) {shape = [6, 4]}
    b: f32[24] = reshape(a) {shape = [-1]}
    t: f32[4,3,2] = transpose(x) {perm = [2, 1, 0]}
    u: f32[2,3,4] = transpose(t) {perm = [2, 1, 0]}
    e: f32[2,3,4] = exp(u)
    return b, e
  })");
  EXPECT_TRUE(FileCheck(out, "CHECK: f32[24] = reshape(x) {shape = [24]}")) << out;
  EXPECT_TRUE(FileCheck(out, "CHECK: exp(x)")) << out;
  EXPECT_TRUE(FileCheck(out, "CHECK-NOT: transpose")) << out;
}

TEST(CanonicalizeTest, ExporterSpellingsOfNormsBecomeMulAndRsqrt) {
  // Pow(x, 2) and Div(a, Sqrt(b)), as torch's exporter writes RMSNorm below opset 23.
  std::string out = Canon(R"(graph g(x: f32[4,8]) {
    two: f32[] = constant() {data = [2]}
    sq: f32[4,8] = pow(x, two)
    ms: f32[4,1] = reduce_mean(sq) {axes = [1], keep_dims = true}
    s: f32[4,1] = sqrt(ms)
    y: f32[4,8] = div(x, s)
    return y
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: mul(x, x)
    CHECK: rsqrt(ms)
    CHECK: mul(x,
    CHECK-NOT: pow(
    CHECK-NOT: div(
  )")) << out;
}

TEST(CanonicalizeTest, ReciprocalOfSqrtBecomesRsqrt) {
  EXPECT_TRUE(FileCheck(Canon(R"(graph g(x: f32[4]) {
    s: f32[4] = sqrt(x)
    r: f32[4] = reciprocal(s)
    return r
  })"), "CHECK: rsqrt(x)"));
}

TEST(CanonicalizeTest, CanonicalGraphIsAFixedPoint) {
  Canon(R"(graph g(x: f32[4,8]) {
    e: f32[4,8] = exp(x)
    r: f32[4] = reduce_sum(e) {axes = [1], keep_dims = false}
    return r
  })", /*expect_change=*/false);
}

}  // namespace
}  // namespace kiln
