// decompose: composites become primitives, and a hand-decomposed LayerNorm (as exporters
// write it) becomes the same graph as the composite one.
#include "passes/decompose.h"

#include "passes/pass_pipeline.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RunPass;

std::string Decomposed(const std::string& text) {
  auto g = Parse(text);
  if (!g) return "";
  Decompose pass;
  EXPECT_TRUE(RunPass(pass, *g));
  return PrintGraph(*g);
}

TEST(DecomposeTest, SoftmaxIsMaxSubExpSumDiv) {
  std::string out = Decomposed(R"(graph g(x: f32[4,8]) {
    s: f32[4,8] = softmax(x) {axis = 1}
    return s
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: reduce_max(x) {axes = [1], keep_dims = true}
    CHECK: sub(x,
    CHECK: exp(
    CHECK: reduce_sum(
    CHECK: div(
    CHECK-NOT: softmax
  )")) << out;
}

TEST(DecomposeTest, RmsNormUsesRsqrtOfMeanSquare) {
  std::string out = Decomposed(R"(graph g(x: bf16[4,8], w: bf16[8]) {
    y: bf16[4,8] = rms_norm(x, w) {axis = 1, eps = 1e-06}
    return y
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: mul(x, x)
    CHECK: reduce_mean(
    CHECK: rsqrt(
    CHECK: mul(x,
    CHECK: , w)
  )")) << out;
}

TEST(DecomposeTest, CrossEntropyPicksTheTargetWithAOneHotRow) {
  std::string out = Decomposed(R"(graph g(x: f32[4,10], t: i64[4]) {
    l: f32[] = cross_entropy(x, t) {ignore_index = -100, reduction = "mean"}
    return l
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: iota() {axis = 0, dtype = "i64", shape = [10]}
    CHECK: eq(
    CHECK: where(
    CHECK: ne(t,
    CHECK: div(
    CHECK-NOT: cross_entropy
  )")) << out;
}

TEST(DecomposeTest, AttentionAndDropoutAreNotDecomposed) {
  auto g = Parse(R"(graph g(q: f32[1,2,4,8], k: f32[1,2,4,8], v: f32[1,2,4,8]) {
    a: f32[1,2,4,8] = attention(q, k, v) {causal = true, scale = 0.0}
    d: f32[1,2,4,8] = dropout(a) {offset = 0, p = 0.1, seed = 1}
    return d
  })");
  Decompose pass;
  EXPECT_FALSE(RunPass(pass, *g));
}

TEST(DecomposeTest, LayerNormAndItsExporterSpellingBecomeTheSameGraph) {
  auto composite = testing::LoadExample("layernorm");
  auto written_out = testing::LoadExample("layernorm_decomposed");
  ASSERT_TRUE(composite && written_out);
  PassPipeline pipeline = DefaultPipeline();
  DebugOptions options;
  ASSERT_TRUE(pipeline.Run(*composite, options).ok());
  ASSERT_TRUE(pipeline.Run(*written_out, options).ok());
  testing::StructuralKeys keys;
  EXPECT_EQ(keys.GraphKey(*composite), keys.GraphKey(*written_out))
      << PrintGraph(*composite) << "\nvs\n" << PrintGraph(*written_out);
}

}  // namespace
}  // namespace kiln
