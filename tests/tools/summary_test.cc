// Summarize: statistics over finite values, NaN/Inf counted apart, values in their dtype.
#include "tools/summary.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(SummaryTest, FloatStatistics) {
  Tensor t(DType::kF32, {2, 3});
  const double values[] = {1, 2, 3, 4, NAN, INFINITY};
  for (int i = 0; i < 6; ++i) t.SetF64(i, values[i]);
  TensorSummary s = Summarize(t);
  EXPECT_EQ(s.count, 6);
  EXPECT_EQ(s.finite, 4);
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.inf_count, 1);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(1.25));  // population std of 1, 2, 3, 4
  EXPECT_EQ(s.first, (std::vector<std::string>{"1", "2", "3", "4"}));
  std::string text = FormatSummary("y", t, s);
  EXPECT_EQ(text, "y: f32[2,3]\n  min=1 max=4 mean=2.5 std=1.11803 nan=1 inf=1 first=[1, 2, 3, 4, ...]\n");
}

TEST(SummaryTest, Bf16PrintsShortestRoundTrip) {
  Tensor t(DType::kBF16, {2});
  t.SetF64(0, 0.1);  // bf16(0.1) = 0.10009765625
  t.SetF64(1, -3.5);
  TensorSummary s = Summarize(t);
  EXPECT_EQ(s.first, (std::vector<std::string>{"0.1", "-3.5"}));
  EXPECT_EQ(s.min_text, "-3.5");
  EXPECT_EQ(s.max_text, "0.1");
}

TEST(SummaryTest, IntegersAreExact) {
  Tensor t(DType::kI64, {3});
  t.SetI64(0, (int64_t{1} << 62) + 1);
  t.SetI64(1, -5);
  t.SetI64(2, 7);
  TensorSummary s = Summarize(t);
  EXPECT_EQ(s.max_text, "4611686018427387905");
  EXPECT_EQ(s.min_text, "-5");
  EXPECT_EQ(s.nan_count, 0);
}

TEST(SummaryTest, AllNonFiniteAndEmpty) {
  Tensor t(DType::kF16, {2});
  t.SetF64(0, NAN);
  t.SetF64(1, -INFINITY);
  TensorSummary s = Summarize(t);
  EXPECT_EQ(s.finite, 0);
  EXPECT_EQ(s.min_text, "-");
  EXPECT_EQ(s.first, (std::vector<std::string>{"nan", "-inf"}));
  EXPECT_NE(FormatSummary("z", t, s).find("min=- max=- mean=- std=- nan=1 inf=1"), std::string::npos);

  Tensor empty(DType::kF32, {0, 4});
  TensorSummary e = Summarize(empty);
  EXPECT_EQ(e.count, 0);
  EXPECT_EQ(FormatSummary("e", empty, e),
            "e: f32[0,4]\n  min=- max=- mean=- std=- nan=0 inf=0 first=[]\n");
}

TEST(SummaryTest, BoolsAreZeroOne) {
  Tensor t(DType::kBool, {3});
  t.SetF64(1, 1);
  TensorSummary s = Summarize(t);
  EXPECT_EQ(s.first, (std::vector<std::string>{"0", "1", "0"}));
  EXPECT_NEAR(s.mean, 1.0 / 3, 1e-12);
}

}  // namespace
}  // namespace kiln
