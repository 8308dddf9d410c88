// decompose: composites become primitives, and a hand-decomposed LayerNorm (as exporters
// write it) becomes the same graph as the composite one.
#include "passes/decompose.h"

#include "absl/strings/str_replace.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/promote.h"
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

TEST(DecomposeTest, LogSoftmaxSubtractsTheLogOfTheSumFromTheShiftedRow) {
  std::string out = Decomposed(R"(graph g(x: f32[4,8]) {
    y: f32[4,8] = log_softmax(x) {axis = 1}
    return y
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: y.reduce_max: f32[4,1] = reduce_max(x) {axes = [1], keep_dims = true}
    CHECK-NEXT: y.sub: f32[4,8] = sub(x, y.reduce_max)
    CHECK-NEXT: y.exp: f32[4,8] = exp(y.sub)
    CHECK-NEXT: y.reduce_sum: f32[4,1] = reduce_sum(y.exp) {axes = [1], keep_dims = true}
    CHECK-NEXT: y.log: f32[4,1] = log(y.reduce_sum)
    CHECK-NEXT: y: f32[4,8] = sub(y.sub, y.log)
    CHECK-NOT: div(
  )")) << out;
}

TEST(DecomposeTest, GeluIsHalfXTimesOnePlusErfOfXOverSqrt2) {
  std::string out = Decomposed(R"(graph g(x: f32[4,8]) {
    y: f32[4,8] = gelu(x)
    return y
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: constant() {data = [0.70710677]}
    CHECK-NEXT: y.mul: f32[4,8] = mul(x, y.c)
    CHECK-NEXT: y.erf: f32[4,8] = erf(y.mul)
    CHECK: y.add: f32[4,8] = add(y.erf, y.c.1)
    CHECK: constant() {data = [0.5]}
    CHECK-NEXT: y.mul.1: f32[4,8] = mul(x, y.c.2)
    CHECK-NEXT: y: f32[4,8] = mul(y.mul.1, y.add)
    CHECK-NOT: tanh
  )")) << out;
}

TEST(DecomposeTest, GeluTanhIsTheCubicTanhApproximation) {
  std::string out = Decomposed(R"(graph g(x: f32[4,8]) {
    y: f32[4,8] = gelu_tanh(x)
    return y
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: y.mul: f32[4,8] = mul(x, x)
    CHECK-NEXT: y.mul.1: f32[4,8] = mul(y.mul, x)
    CHECK-NEXT: constant() {data = [0.044715]}
    CHECK-NEXT: y.mul.2: f32[4,8] = mul(y.mul.1, y.c)
    CHECK-NEXT: y.add: f32[4,8] = add(x, y.mul.2)
    CHECK-NEXT: constant() {data = [0.7978846]}
    CHECK-NEXT: y.mul.3: f32[4,8] = mul(y.add, y.c.1)
    CHECK-NEXT: y.tanh: f32[4,8] = tanh(y.mul.3)
    CHECK: y: f32[4,8] = mul(y.mul.4, y.add.1)
    CHECK-NOT: erf
  )")) << out;
}

TEST(DecomposeTest, SiluIsXTimesSigmoidX) {
  std::string out = Decomposed(R"(graph g(x: bf16[4,8]) {
    y: bf16[4,8] = silu(x)
    return y
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: y.sigmoid: bf16[4,8] = sigmoid(x)
    CHECK-NEXT: y: bf16[4,8] = mul(x, y.sigmoid)
    CHECK-NOT: silu
  )")) << out;
}

TEST(DecomposeTest, RmsNormUsesRsqrtOfMeanSquareInF32) {
  std::string out = Decomposed(R"(graph g(x: bf16[4,8], w: bf16[8]) {
    y: bf16[4,8] = rms_norm(x, w) {axis = 1, eps = 1e-06}
    return y
  })");
  // Over bf16 the statistics are f32: the operands are cast up, the result down.
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: y.cast: f32[4,8] = cast(x) {dtype = "f32"}
    CHECK: y.cast.1: f32[8] = cast(w) {dtype = "f32"}
    CHECK: mul(y.cast, y.cast)
    CHECK: f32[4,1] = reduce_mean(
    CHECK: rsqrt(
    CHECK: mul(y.cast,
    CHECK: , y.cast.1)
    CHECK: y: bf16[4,8] = cast(
  )")) << out;
}

TEST(DecomposeTest, F32CompositesNeedNoCasts) {
  std::string out = Decomposed(R"(graph g(x: f32[4,8]) {
    y: f32[4,8] = log_softmax(x) {axis = 1}
    return y
  })");
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK-NOT: cast
    CHECK: reduce_max(x)
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

// The examples are bf16: the composite is decomposed in f32, while the exporter's spelling
// says every step is rounded to bf16, so the two are the same graph once both compute in f32
// (PromoteTo32, which is how kiln's kernels compute them anyway), but for eps: the spelt-out
// graph holds it as a bf16 constant, 1e-5 rounded to 1.001358e-05, which the composite gets
// here too.
TEST(DecomposeTest, LayerNormAndItsExporterSpellingBecomeTheSameGraph) {
  auto example = testing::LoadExample("layernorm");
  auto bf16_written_out = testing::LoadExample("layernorm_decomposed");
  ASSERT_TRUE(example && bf16_written_out);
  const std::string text = absl::StrReplaceAll(PrintGraph(*example), {{"eps = 1e-05", "eps = 1.001358e-05"}});
  ASSERT_NE(text, PrintGraph(*example));
  auto bf16_composite = ParseGraph(text);
  ASSERT_TRUE(bf16_composite.ok()) << bf16_composite.status();
  auto composite = PromoteTo32(**bf16_composite);
  auto written_out = PromoteTo32(*bf16_written_out);
  ASSERT_TRUE(composite.ok() && written_out.ok());
  PassPipeline pipeline = DefaultPipeline();
  DebugOptions options;
  ASSERT_TRUE(pipeline.Run(**composite, options).ok());
  ASSERT_TRUE(pipeline.Run(**written_out, options).ok());
  testing::StructuralKeys keys;
  EXPECT_EQ(keys.GraphKey(**composite), keys.GraphKey(**written_out))
      << PrintGraph(**composite) << "\nvs\n" << PrintGraph(**written_out);
}

}  // namespace
}  // namespace kiln
