// dce: each case states one property, IR text in, CHECK lines out.
#include "passes/dce.h"

#include "tests/passes/pass_test_util.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RunPass;

TEST(DceTest, UnusedChainsAreRemovedInputsStay) {
  auto g = Parse(R"(graph g(x: f32[4], unused: f32[4]) {
    dead: f32[4] = exp(unused)
    dead2: f32[4] = neg(dead)
    y: f32[4] = neg(x)
    return y
  })");
  Dce pass;
  EXPECT_TRUE(RunPass(pass, *g));
  std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, R"(
    CHECK: graph g(x: f32[4], unused: f32[4])
    CHECK-NOT: dead
    CHECK: y: f32[4] = neg(x)
  )")) << out;
}

TEST(DceTest, EveryNodeAnOutputReadsStays) {
  auto g = Parse(R"(graph g(x: f32[4]) {
    a: f32[4] = exp(x)
    b: f32[4] = neg(a)
    return b, a
  })");
  Dce pass;
  EXPECT_FALSE(RunPass(pass, *g));
  EXPECT_TRUE(FileCheck(PrintGraph(*g), "CHECK: a: f32[4] = exp(x)\nCHECK-NEXT: b: f32[4] = neg(a)"));
}

}  // namespace
}  // namespace kiln
