// constant_fold, cse and dce: each case states one property.
#include "passes/simplify.h"

#include "tests/passes/pass_test_util.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RunPass;

TEST(ConstantFoldTest, ScalarSubgraphBecomesOneConstant) {
  auto g = Parse(R"(graph g(x: f32[4]) {
    two: f32[] = constant() {data = [2]}
    s: f32[] = sqrt(two)
    r: f32[] = reciprocal(s)
    y: f32[4] = mul(x, r)
    return y
  })");
  ConstantFold pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: constant() {data = [0.7071067
    CHECK-NOT: sqrt
  )")) << out;
}

TEST(ConstantFoldTest, LargeConstantsAreLeftAlone) {
  auto g = Parse(R"(graph g(x: f32[4]) {
    i: i64[100] = iota() {axis = 0, dtype = "i64", shape = [100]}
    y: f32[4] = exp(x)
    return y, i
  })");
  ConstantFold pass;
  EXPECT_FALSE(RunPass(pass, *g));
}

TEST(CseTest, IdenticalNodesMergeAndDistinctAttributesDoNot) {
  auto g = Parse(R"(graph g(x: f32[4,8]) {
    a: f32[4] = reduce_sum(x) {axes = [1], keep_dims = false}
    b: f32[4] = reduce_sum(x) {axes = [1], keep_dims = false}
    c: f32[4] = reduce_max(x) {axes = [1], keep_dims = false}
    s: f32[4] = add(a, b)
    t: f32[4] = add(s, c)
    return t
  })");
  Cse pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK-COUNT-1: reduce_sum
    CHECK-NOT: reduce_sum
    CHECK: add(a, a)
  )")) << out;
}

TEST(DceTest, UnusedNodesAreRemovedInputsStay) {
  auto g = Parse(R"(graph g(x: f32[4], unused: f32[4]) {
    dead: f32[4] = exp(unused)
    y: f32[4] = neg(x)
    return y
  })");
  Dce pass;
  EXPECT_TRUE(RunPass(pass, *g));
  EXPECT_EQ(g->FindNode("dead"), nullptr);
  EXPECT_NE(g->FindNode("unused"), nullptr);
}

}  // namespace
}  // namespace kiln
