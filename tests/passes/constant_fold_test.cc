// constant_fold: each case states one property, IR text in, CHECK lines out.
#include "passes/constant_fold.h"

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
    CHECK: r: f32[] = constant() {data = [0.7071067
    CHECK-NOT: sqrt
    CHECK: y: f32[4] = mul(x, r)
  )")) << out;
}

TEST(ConstantFoldTest, ANodeReadingARuntimeInputIsNotFolded) {
  auto g = Parse(R"(graph g(x: f32[]) {
    two: f32[] = constant() {data = [2]}
    y: f32[] = mul(x, two)
    return y
  })");
  ConstantFold pass;
  EXPECT_FALSE(RunPass(pass, *g));
  EXPECT_TRUE(FileCheck(PrintGraph(*g), "CHECK: y: f32[] = mul(x, two)"));
}

// A reduction over an empty axis reads no data: it folds to its identity, as the interpreter
// defines it (ONNX's *_empty_set node tests; the reduction templates have no empty space).
TEST(ConstantFoldTest, AReductionOverAnEmptyAxisIsItsIdentity) {
  auto g = Parse(R"(graph g(x: f32[2,0,4]) {
    s: f32[2,1,4] = reduce_sum(x) {axes = [1], keep_dims = true}
    m: f32[2,1,4] = reduce_max(x) {axes = [1], keep_dims = true}
    return s, m
  })");
  ConstantFold pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK-NOT: reduce_
    CHECK: constant() {data = [0, 0, 0, 0, 0, 0, 0, 0]}
    CHECK: constant() {data = [-inf,
  )")) << out;
}

// reduce_sum_square over an empty axis: mul(x, x) of an empty x folds first, with x once in
// the node's own tiny graph (ONNX's test_reduce_sum_square_empty_set once failed on it).
TEST(ConstantFoldTest, AnOperandUsedTwiceFoldsOnce) {
  auto g = Parse(R"(graph g(data: f32[2,0,4]) {
    sq: f32[2,0,4] = mul(data, data)
    s: f32[2,1,4] = reduce_sum(sq) {axes = [1], keep_dims = true}
    return s
  })");
  ConstantFold pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK-NOT: reduce_sum
    CHECK: constant() {data = [0, 0, 0, 0, 0, 0, 0, 0]}
  )")) << out;
}

TEST(ConstantFoldTest, LargeResultsStayComputed) {
  auto g = Parse(R"(graph g(x: f32[4]) {
    i: i64[100] = iota() {axis = 0, dtype = "i64", shape = [100]}
    one: i64[] = constant() {data = [1]}
    j: i64[100] = add(i, one)
    y: f32[4] = exp(x)
    return y, j
  })");
  ConstantFold pass;
  EXPECT_FALSE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: = iota()
    CHECK: j: i64[100] = add(i, one)
  )")) << out;
}

}  // namespace
}  // namespace kiln
