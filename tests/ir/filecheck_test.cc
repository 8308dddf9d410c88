// The in-house FileCheck (tests/testing/filecheck.h): each directive passes when it should,
// fails when it should, and a failure names the directive, its checks line and the text.
#include "tests/testing/filecheck.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace kiln {
namespace {

const char kText[] =
    "graph g(x: f32[4]) {\n"
    "  a: f32[4] = exp(x)\n"
    "  b: f32[4] = exp(a)\n"
    "  c: f32[4] = mul(a, b)\n"
    "  return c\n"
    "}\n";

// The failure message of a check that must fail.
std::string FailureOf(const std::string& checks) {
  ::testing::AssertionResult result = FileCheck(kText, checks);
  EXPECT_FALSE(result) << "expected this to fail:\n" << checks;
  return result.message();
}

TEST(FileCheckTest, CheckFindsSubstringsInOrder) {
  EXPECT_TRUE(FileCheck(kText, "CHECK: exp(x)\nCHECK: mul(a, b)\nCHECK: return c"));
  std::string message = FailureOf("CHECK: mul(\nCHECK: exp(a)");
  EXPECT_TRUE(absl::StrContains(message, "`CHECK: exp(a)` (checks line 2) not found")) << message;
  EXPECT_TRUE(absl::StrContains(message, "searching text from line 4:")) << message;
  EXPECT_TRUE(absl::StrContains(message, "4 |   c: f32[4] = mul(a, b)")) << message;
}

TEST(FileCheckTest, LinesWithoutDirectivesAreIgnoredAndPrefixesAreAllowed) {
  EXPECT_TRUE(FileCheck(kText, R"(
    This line is a comment.
    # CHECK: graph g(
    // CHECK:   exp(a)
  )"));
}

TEST(FileCheckTest, CheckNextMustBeOnTheFollowingLine) {
  EXPECT_TRUE(FileCheck(kText, "CHECK: a: f32\nCHECK-NEXT: b: f32\nCHECK-NEXT: mul(a, b)"));
  EXPECT_TRUE(FileCheck(kText, "CHECK-NEXT: graph g"));  // first line when nothing matched yet
  std::string message = FailureOf("CHECK: a: f32\nCHECK-NEXT: mul(");
  EXPECT_TRUE(absl::StrContains(message, "`CHECK-NEXT: mul(` (checks line 2) not found on the next line"))
      << message;
  EXPECT_TRUE(absl::StrContains(message, "3 |   b: f32[4] = exp(a)")) << message;
  FailureOf("CHECK: }\nCHECK-NEXT: anything");
}

TEST(FileCheckTest, CheckNotHoldsBetweenMatches) {
  EXPECT_TRUE(FileCheck(kText, "CHECK: exp(a)\nCHECK-NOT: exp(\nCHECK: return"));
  EXPECT_TRUE(FileCheck(kText, "CHECK-NOT: tanh"));
  EXPECT_TRUE(FileCheck(kText, "CHECK: mul\nCHECK-NOT: exp"));  // up to the end
  std::string message = FailureOf("CHECK: graph\nCHECK-NOT: exp(a)\nCHECK: mul(");
  EXPECT_TRUE(absl::StrContains(message, "`CHECK-NOT: exp(a)` (checks line 2) matched where it must not"))
      << message;
  EXPECT_TRUE(absl::StrContains(message, "searching text from line 3:")) << message;
  FailureOf("CHECK: exp(x)\nCHECK-NOT: mul");
}

TEST(FileCheckTest, CheckCountNeedsThatManyMatches) {
  EXPECT_TRUE(FileCheck(kText, "CHECK-COUNT-2: = exp(\nCHECK-NEXT: mul"));
  EXPECT_TRUE(FileCheck(kText, "CHECK-COUNT-4: f32[4]"));
  std::string message = FailureOf("CHECK-COUNT-3: = exp(");
  EXPECT_TRUE(absl::StrContains(message, "`CHECK-COUNT-3: = exp(` (checks line 1) found only 2 times"))
      << message;
  FailureOf("CHECK: mul\nCHECK-COUNT-2: f32[4]");
}

TEST(FileCheckTest, MalformedChecksFail) {
  EXPECT_TRUE(absl::StrContains(FailureOf("CHEK: exp"), "no CHECK directives"));
  EXPECT_TRUE(absl::StrContains(FailureOf("CHECK-COUNT-x: exp"), "malformed CHECK-COUNT-N"));
  EXPECT_TRUE(absl::StrContains(FailureOf("CHECK:   "), "empty pattern"));
}

TEST(FileCheckTest, AWrongCheckFailsAnExpectation) {
  EXPECT_NONFATAL_FAILURE(EXPECT_TRUE(FileCheck(kText, "CHECK: softmax")),
                          "`CHECK: softmax` (checks line 1) not found");
}

}  // namespace
}  // namespace kiln
