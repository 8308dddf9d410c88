// cse: each case states one property, IR text in, CHECK lines out.
#include "passes/cse.h"

#include "tests/passes/pass_test_util.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RunPass;

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

TEST(CseTest, ConstantsMergeByDataOnly) {
  auto g = Parse(R"(graph g(x: f32[4]) {
    h1: f32[] = constant() {data = [0.5]}
    h2: f32[] = constant() {data = [0.5]}
    q: f32[] = constant() {data = [0.25]}
    a: f32[4] = mul(x, h1)
    b: f32[4] = mul(a, h2)
    y: f32[4] = mul(b, q)
    return y
  })");
  Cse pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: b: f32[4] = mul(a, h1)
    CHECK: y: f32[4] = mul(b, q)
    CHECK-NOT: h2
  )")) << out;
}

// Dropout's keep bits are a function of (seed, offset, element): equal attributes, equal values.
TEST(CseTest, DropoutWithTheSameSeedMergesAnotherSeedDoesNot) {
  auto g = Parse(R"(graph g(x: f32[4,8]) {
    a: f32[4,8] = dropout(x) {offset = 0, p = 0.1, seed = 7}
    b: f32[4,8] = dropout(x) {offset = 0, p = 0.1, seed = 7}
    c: f32[4,8] = dropout(x) {offset = 0, p = 0.1, seed = 8}
    s: f32[4,8] = add(a, b)
    y: f32[4,8] = add(s, c)
    return y
  })");
  Cse pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: seed = 7
    CHECK: seed = 8
    CHECK: s: f32[4,8] = add(a, a)
  )")) << out;
}

TEST(CseTest, NothingToMergeIsNoChange) {
  auto g = Parse(R"(graph g(x: f32[4]) {
    a: f32[4] = exp(x)
    b: f32[4] = log(x)
    y: f32[4] = add(a, b)
    return y
  })");
  Cse pass;
  EXPECT_FALSE(RunPass(pass, *g));
}

}  // namespace
}  // namespace kiln
