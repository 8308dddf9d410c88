// match_attention: hand-written attention (matmul, scale, mask, softmax, matmul) becomes one
// attention op; a lower-triangular constant mask becomes causal; other uses block the match.
#include "passes/match_attention.h"

#include "tests/passes/pass_test_util.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RunPass;

constexpr char kScaledMasked[] = R"(graph g(q: f32[1,2,3,4], k: f32[1,2,3,4], v: f32[1,2,3,4], m: f32[1,1,3,3]) {
    kt: f32[1,2,4,3] = transpose(k) {perm = [0, 1, 3, 2]}
    s: f32[1,2,3,3] = matmul(q, kt)
    c: f32[] = constant() {data = [2]}
    ss: f32[1,2,3,3] = div(s, c)
    sm: f32[1,2,3,3] = add(ss, m)
    p: f32[1,2,3,3] = softmax(sm) {axis = 3}
    y: f32[1,2,3,4] = matmul(p, v)
    return y
  })";

TEST(MatchAttentionTest, ScaledMaskedChainBecomesOneAttentionOp) {
  auto g = Parse(kScaledMasked);
  MatchAttention pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: attention(q, k, v, m) {causal = false, dropout = 0.0, offset = 0, scale = 0.5, seed = 0}
    CHECK-NOT: softmax
    CHECK-NOT: matmul
  )")) << out;
}

// Training graphs: dropout(softmax(s)) v folds in, the dropout's p, seed and offset with it. A
// constant seed before a run-time offset stays an operand (they are positional); a constant
// offset becomes the attribute.
TEST(MatchAttentionTest, DropoutOfTheProbabilitiesFoldsIntoAttention) {
  // The offset: a graph input, or (`constant_offset`) a constant.
  auto graph = [](bool constant_offset) {
    return Parse(std::string("graph g(q: f32[2,3,4], k: f32[2,3,4], v: f32[2,3,4]") +
                 (constant_offset ? ") {\n    off: i64[] = constant() {data = [5]}\n" : ", off: i64[]) {\n") + R"(
    kt: f32[2,4,3] = transpose(k) {perm = [0, 2, 1]}
    s: f32[2,3,3] = matmul(q, kt)
    p: f32[2,3,3] = softmax(s) {axis = 2}
    seed: i64[] = constant() {data = [9]}
    d: f32[2,3,3] = dropout(p, seed, off) {p = 0.25}
    y: f32[2,3,4] = matmul(d, v)
    return y
  })");
  };
  MatchAttention pass;
  auto g = graph(false);
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: attention(q, k, v, seed, off) {causal = false, dropout = 0.25, offset = 0, scale = 1.0, seed = 0}
    CHECK-NOT: dropout(
  )")) << out;

  auto c = graph(true);
  EXPECT_TRUE(RunPass(pass, *c));
  out = PrintGraph(*c);
  EXPECT_TRUE(FileCheck(out, "CHECK: attention(q, k, v) {causal = false, dropout = 0.25, offset = 5, scale = 1.0, seed = 9}"))
      << out;
}

TEST(MatchAttentionTest, LowerTriangularBooleanMaskBecomesCausal) {
  auto g = Parse(R"(graph g(q: f32[2,3,4], k: f32[2,3,4], v: f32[2,3,4]) {
    kt: f32[2,4,3] = transpose(k) {perm = [0, 2, 1]}
    s: f32[2,3,3] = matmul(q, kt)
    keep: bool[3,3] = constant() {data = [1, 0, 0, 1, 1, 0, 1, 1, 1]}
    ninf: f32[] = constant() {data = [-inf]}
    sm: f32[2,3,3] = where(keep, s, ninf)
    p: f32[2,3,3] = softmax(sm) {axis = 2}
    y: f32[2,3,4] = matmul(p, v)
    return y
  })");
  MatchAttention pass;
  EXPECT_TRUE(RunPass(pass, *g));
  EXPECT_TRUE(FileCheck(PrintGraph(*g), "CHECK: attention(q, k, v) {causal = true, dropout = 0.0, offset = 0, scale = 1.0, seed = 0}"));
}

// torch's masked_fill(mask, -inf): where(drop, -inf, s), true = masked out.
TEST(MatchAttentionTest, MaskedFillOfTheUpperTriangleBecomesCausal) {
  auto g = Parse(R"(graph g(q: f32[2,3,4], k: f32[2,3,4], v: f32[2,3,4]) {
    kt: f32[2,4,3] = transpose(k) {perm = [0, 2, 1]}
    s: f32[2,3,3] = matmul(q, kt)
    drop: bool[3,3] = constant() {data = [0, 1, 1, 0, 0, 1, 0, 0, 0]}
    ninf: f32[] = constant() {data = [-inf]}
    sm: f32[2,3,3] = where(drop, ninf, s)
    p: f32[2,3,3] = softmax(sm) {axis = 2}
    y: f32[2,3,4] = matmul(p, v)
    return y
  })");
  MatchAttention pass;
  EXPECT_TRUE(RunPass(pass, *g));
  EXPECT_TRUE(FileCheck(PrintGraph(*g), "CHECK: attention(q, k, v) {causal = true, dropout = 0.0, offset = 0, scale = 1.0, seed = 0}"));
}

// torch's exporter below opset 23 scales q and k^T by sqrt(scale) each: both fold into scale.
TEST(MatchAttentionTest, ScalarFactorsOnQAndKFoldIntoTheScale) {
  auto g = Parse(R"(graph g(q: f32[2,3,4], k: f32[2,3,4], v: f32[2,3,4]) {
    c: f32[] = constant() {data = [0.5]}
    qs: f32[2,3,4] = mul(q, c)
    kt: f32[2,4,3] = transpose(k) {perm = [0, 2, 1]}
    kts: f32[2,4,3] = mul(c, kt)
    s: f32[2,3,3] = matmul(qs, kts)
    p: f32[2,3,3] = softmax(s) {axis = 2}
    y: f32[2,3,4] = matmul(p, v)
    return y
  })");
  MatchAttention pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: attention(q, k, v) {causal = false, dropout = 0.0, offset = 0, scale = 0.25, seed = 0}
    CHECK-NOT: mul(
  )")) << out;
}

TEST(MatchAttentionTest, ProbabilitiesUsedElsewhereBlockTheMatch) {
  auto g = Parse(R"(graph g(q: f32[2,3,4], k: f32[2,3,4], v: f32[2,3,4]) {
    kt: f32[2,4,3] = transpose(k) {perm = [0, 2, 1]}
    s: f32[2,3,3] = matmul(q, kt)
    p: f32[2,3,3] = softmax(s) {axis = 2}
    y: f32[2,3,4] = matmul(p, v)
    return y, p
  })");
  MatchAttention pass;
  EXPECT_FALSE(RunPass(pass, *g));
}

TEST(MatchAttentionTest, PreTransposedKeysGetAnExplicitTranspose) {
  auto g = Parse(R"(graph g(q: f32[2,3,4], kt: f32[2,4,5], v: f32[2,5,4]) {
    s: f32[2,3,5] = matmul(q, kt)
    p: f32[2,3,5] = softmax(s) {axis = 2}
    y: f32[2,3,4] = matmul(p, v)
    return y
  })");
  MatchAttention pass;
  EXPECT_TRUE(RunPass(pass, *g));
  EXPECT_TRUE(FileCheck(PrintGraph(*g), R"(
    CHECK: transpose(kt) {perm = [0, 2, 1]}
    CHECK: attention(q,
  )"));
}

}  // namespace
}  // namespace kiln
