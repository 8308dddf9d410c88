// lower_attention: attention becomes matmul, guarded softmax and matmul; each case states one
// property, IR text in, CHECK lines out, and the lowered graph computes what attention does.
#include "passes/lower_attention.h"

#include <cmath>

#include "ir/interpreter.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RunPass;

constexpr char kCausal[] = R"(graph g(q: f32[2,5,4], k: f32[2,6,4], v: f32[2,6,3]) {
    a: f32[2,5,3] = attention(q, k, v) {causal = true, scale = 0.0}
    return a
  })";

// The interpreter's attention (its reference semantics) against the lowered graph.
void ExpectSameValues(const std::string& text) {
  auto original = Parse(text);
  auto lowered = Parse(text);
  LowerAttention pass;
  ASSERT_TRUE(RunPass(pass, *lowered));
  std::map<std::string, Tensor> inputs = RandomInputs(*original, 3);
  auto want = Interpret(*original, inputs);
  auto got = Interpret(*lowered, inputs);
  ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
  const Tensor &a = (*want)[0], &b = (*got)[0];
  ASSERT_EQ(a.num_elements(), b.num_elements());
  for (int64_t e = 0; e < a.num_elements(); ++e) {
    ASSERT_NEAR(a.GetF64(e), b.GetF64(e), 1e-5 * (1 + std::abs(a.GetF64(e)))) << "element " << e;
  }
}

TEST(LowerAttentionTest, CausalAttentionIsMatmulMaskedGuardedSoftmaxMatmul) {
  auto g = Parse(kCausal);
  LowerAttention pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  // scale 0 means 1 / sqrt(D) = 0.5; the query index is per row, the key index along it.
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: transpose(k) {perm = [0, 2, 1]}
    CHECK: matmul(q,
    CHECK: constant() {data = [0.5]}
    CHECK: mul(
    CHECK: iota() {axis = 1, dtype = "i32", shape = [2, 5, 1]}
    CHECK: iota() {axis = 0, dtype = "i32", shape = [6]}
    CHECK: le(
    CHECK: where(
    CHECK: reduce_max(
    CHECK: eq(
    CHECK: exp(
    CHECK: reduce_sum(
    CHECK: div(
    CHECK: a: f32[2,5,3] = matmul(
    CHECK-NOT: attention(
  )")) << out;
  ExpectSameValues(kCausal);
}

TEST(LowerAttentionTest, AnAdditiveMaskIsAddedAfterTheScale) {
  constexpr char kMasked[] = R"(graph g(q: f32[1,3,4], k: f32[1,3,4], v: f32[1,3,4], m: f32[1,3,3]) {
    a: f32[1,3,4] = attention(q, k, v, m) {causal = false, scale = 0.25}
    return a
  })";
  auto g = Parse(kMasked);
  LowerAttention pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: constant() {data = [0.25]}
    CHECK: mul(
    CHECK: , m)
    CHECK-NOT: iota
  )")) << out;
  ExpectSameValues(kMasked);
}

// A fully masked row gives zeros, as attention defines it, not the NaN of softmax's 0 / 0.
TEST(LowerAttentionTest, AFullyMaskedRowGivesZeros) {
  auto g = Parse(R"(graph g(q: f32[1,2,4], k: f32[1,2,4], v: f32[1,2,4]) {
    m: f32[1,2,2] = constant() {data = [-inf, -inf, 0, 0]}
    a: f32[1,2,4] = attention(q, k, v, m) {causal = false, scale = 0.0}
    return a
  })");
  LowerAttention pass;
  ASSERT_TRUE(RunPass(pass, *g));
  auto out = Interpret(*g, RandomInputs(*g, 5));
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t e = 0; e < 4; ++e) EXPECT_EQ((*out)[0].GetF64(e), 0.0) << e;
  EXPECT_TRUE(std::isfinite((*out)[0].GetF64(4)));
}

// attention_lse without a twin the template runs is lowered too: ln(sum e^s) from f32 scores,
// +inf for a fully masked row (row 0 here); beside a twin the template runs it stays.
TEST(LowerAttentionTest, ALogSumExpWithoutItsTwinIsLoweredFromF32Scores) {
  constexpr char kLse[] = R"(graph g(q: bf16[2,3,4], k: bf16[2,5,4]) {
    m: bf16[3,5] = constant() {data = [-inf, -inf, -inf, -inf, -inf, 0, 1, 0, -1, 0, 0.5, 0, 0, 0, 2]}
    l: f32[2,3] = attention_lse(q, k, m) {causal = true, scale = 0.5}
    return l
  })";
  auto original = Parse(kLse);
  auto lowered = Parse(kLse);
  LowerAttention pass;
  ASSERT_TRUE(RunPass(pass, *lowered));
  std::string out = PrintGraph(*lowered);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: cast(
    CHECK: reduce_max(
    CHECK: log(
    CHECK-NOT: attention_lse(
  )")) << out;
  std::map<std::string, Tensor> inputs = RandomInputs(*original, 3);
  auto want = Interpret(*original, inputs);
  auto got = Interpret(*lowered, inputs);
  ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
  for (int64_t e = 0; e < 6; ++e) {
    const double a = (*want)[0].GetF64(e), b = (*got)[0].GetF64(e);
    if (e % 3 == 0) {
      EXPECT_EQ(a, INFINITY) << e;
      EXPECT_EQ(b, INFINITY) << e;
    } else {
      EXPECT_NEAR(a, b, 1e-5 * (1 + std::abs(a))) << "element " << e;
    }
  }

  auto twinned = Parse(R"(graph g(q: bf16[2,3,16], k: bf16[2,5,16], v: bf16[2,5,16]) {
    a: bf16[2,3,16] = attention(q, k, v) {causal = true, scale = 0.5}
    l: f32[2,3] = attention_lse(q, k) {causal = true, scale = 0.5}
    return a, l
  })");
  EXPECT_FALSE(RunPass(pass, *twinned));
}

// Dropout on the probabilities: the lowered graph drops the [.., S, T] probabilities with the
// dropout op, so the interpreter's fused attention must keep exactly the same elements
// (docs/dropout.md's index i = (b S + i) T + j): odd S and T, causal and masked, seed and offset
// from run-time operands, from the attributes, and the seed alone as an operand.
TEST(LowerAttentionTest, DropoutKeepsTheElementsOfTheDropoutOp) {
  ExpectSameValues(R"(graph g(q: f32[2,3,5,4], k: f32[2,3,7,4], v: f32[2,3,7,6], m: f32[5,7], seed: i64[], off: i64[]) {
    a: f32[2,3,5,6] = attention(q, k, v, m, seed, off) {causal = true, dropout = 0.3, scale = 0.0}
    return a
  })");
  ExpectSameValues(R"(graph g(q: f32[3,9,4], k: f32[3,11,4], v: f32[3,11,4]) {
    a: f32[3,9,4] = attention(q, k, v) {dropout = 0.5, offset = 4, seed = 1234567890123}
    return a
  })");
  ExpectSameValues(R"(graph g(q: f32[3,9,4], k: f32[3,11,4], v: f32[3,11,4], seed: i32[]) {
    a: f32[3,9,4] = attention(q, k, v, seed) {dropout = 0.1, offset = 2}
    return a
  })");
  auto lowered = Parse(R"(graph g(q: f32[3,9,4], k: f32[3,11,4], v: f32[3,11,4], seed: i32[]) {
    a: f32[3,9,4] = attention(q, k, v, seed) {dropout = 0.1, offset = 2}
    return a
  })");
  LowerAttention pass;
  ASSERT_TRUE(RunPass(pass, *lowered));
  const std::string out = PrintGraph(*lowered);
  EXPECT_TRUE(FileCheck(out, "CHECK: = dropout(a.div, seed) {offset = 2, p = 0.1, seed = 0}")) << out;
}

TEST(LowerAttentionTest, GraphsWithoutAttentionAreUnchanged) {
  auto g = Parse(R"(graph g(x: f32[4,8]) {
    s: f32[4,8] = softmax(x) {axis = 1}
    return s
  })");
  LowerAttention pass;
  EXPECT_FALSE(RunPass(pass, *g));
}

}  // namespace
}  // namespace kiln
