// Checks the seeded dropout contract of docs/dropout.md statistically (the interpreter's keep
// rate over 10^7 ones is within 4 sigma of 1 - p; no correlation between neighbours, rows or
// consecutive offsets; seeds change the mask) and exactly (the interpreter's dropout and
// dropout_grad outputs follow DropoutKeep element by element, scale kept values in float, p = 0
// is the identity and p = 1 gives zeros, seed/offset operands override the attributes, p
// outside [0, 1] or NaN is refused when the node is made).
#include <cmath>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/philox.h"

namespace kiln {
namespace {

// Keep bits of elements [0, n) for (seed, offset, p), four per Philox call as the GPU does.
std::vector<uint8_t> KeepBits(uint64_t seed, uint64_t offset, int64_t n, double p) {
  std::vector<uint8_t> bits(n);
  const uint32_t threshold = DropoutThreshold(p);
  for (int64_t g = 0; 4 * g < n; ++g) {
    const auto words = DropoutRandomWords(seed, offset, g);
    for (int lane = 0; lane < 4 && 4 * g + lane < n; ++lane) bits[4 * g + lane] = words[lane] >= threshold;
  }
  return bits;
}

// Pearson correlation of a[i] and b[i + shift] over the overlap.
double Correlation(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int64_t shift) {
  const int64_t n = static_cast<int64_t>(a.size()) - shift;
  double sa = 0, sb = 0, sab = 0, saa = 0, sbb = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i + shift];
    sa += x, sb += y, sab += x * y, saa += x * x, sbb += y * y;
  }
  const double cov = sab / n - (sa / n) * (sb / n);
  const double va = saa / n - (sa / n) * (sa / n), vb = sbb / n - (sb / n) * (sb / n);
  return cov / std::sqrt(va * vb);
}

// The interpreter itself drops a tensor of 10^7 ones: the kept count is within 4 sigma of
// n (1 - p), and every kept element is exactly the float scale.
TEST(Dropout, InterpreterKeepRateIsWithinFourSigmaOfOneMinusP) {
  const int64_t n = 10'000'000;
  Tensor ones(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) ones.SetF64(i, 1.0);
  for (double p : {0.1, 0.5, 0.9}) {
    Graph g;
    Node* x = *g.AddInput("x", DType::kF32, {n});
    Attributes attrs = {{"p", p}, {"seed", int64_t{0x5eed}}, {"offset", int64_t{3}}};
    ASSERT_TRUE(g.AddOutput(*g.AddNode(OpKind::kDropout, {x}, attrs, "y")).ok());
    auto out = Interpret(g, {{"x", ones}});
    ASSERT_TRUE(out.ok()) << out.status();
    const float* y = (*out)[0].data_as<float>();
    const float scale = DropoutScale(p);
    int64_t kept = 0, other = 0;
    for (int64_t i = 0; i < n; ++i) {
      kept += y[i] == scale;
      other += y[i] != scale && y[i] != 0.0f;
    }
    EXPECT_EQ(other, 0) << "p = " << p << ": elements neither 0 nor the scale";
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_LT(std::fabs(kept - n * (1 - p)), 4 * sigma) << "p = " << p << " kept " << kept;
  }
}

TEST(Dropout, KeepBitsAreUncorrelated) {
  const int64_t n = 1 << 21;
  for (double p : {0.5, 0.1}) {
    SCOPED_TRACE(p);
    std::vector<uint8_t> a = KeepBits(1234, 0, n, p), next_offset = KeepBits(1234, 1, n, p);
    EXPECT_LT(std::fabs(Correlation(a, a, 1)), 0.01);     // adjacent elements (same Philox call)
    EXPECT_LT(std::fabs(Correlation(a, a, 4)), 0.01);     // adjacent Philox calls
    EXPECT_LT(std::fabs(Correlation(a, a, 4096)), 0.01);  // adjacent rows of length 4096
    EXPECT_LT(std::fabs(Correlation(a, next_offset, 0)), 0.01);  // consecutive offsets
  }
}

TEST(Dropout, DifferentSeedsAndOffsetsGiveDifferentMasks) {
  const int64_t n = 1 << 20;
  std::vector<uint8_t> a = KeepBits(1, 0, n, 0.5), b = KeepBits(2, 0, n, 0.5), c = KeepBits(1, 1, n, 0.5);
  double same_seed = 0, same_offset = 0;
  for (int64_t i = 0; i < n; ++i) same_seed += a[i] == b[i], same_offset += a[i] == c[i];
  // Independent fair masks agree on half the elements; 4 sigma = 4 * 0.5 / sqrt(n).
  EXPECT_NEAR(same_seed / n, 0.5, 4 * 0.5 / std::sqrt(n));
  EXPECT_NEAR(same_offset / n, 0.5, 4 * 0.5 / std::sqrt(n));
  // Seeds differing only in the high 32 bits (key word 1) differ too.
  EXPECT_NE(KeepBits(1, 0, 4096, 0.5), KeepBits(1 + (uint64_t{1} << 32), 0, 4096, 0.5));
  EXPECT_NE(KeepBits(1, 0, 4096, 0.5), KeepBits(1, uint64_t{1} << 32, 4096, 0.5));
}

Tensor Wavy(DType dtype, Shape shape, double phase) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetF64(i, 0.05 + std::sin(0.77 * i + phase));
  return t;
}

// dropout(x) and dropout_grad(dy) with the same attributes, evaluated together.
std::vector<Tensor> RunPair(const Tensor& x, const Tensor& dy, double p, int64_t seed, int64_t offset) {
  Graph g;
  Node* xn = *g.AddInput("x", x.dtype(), x.shape());
  Node* dyn = *g.AddInput("dy", dy.dtype(), dy.shape());
  Attributes attrs = {{"p", p}, {"seed", seed}, {"offset", offset}};
  EXPECT_TRUE(g.AddOutput(*g.AddNode(OpKind::kDropout, {xn}, attrs, "y")).ok());
  EXPECT_TRUE(g.AddOutput(*g.AddNode(OpKind::kDropoutGrad, {dyn}, attrs, "dx")).ok());
  auto out = Interpret(g, {{"x", x}, {"dy", dy}});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : std::vector<Tensor>{};
}

TEST(Dropout, InterpreterFollowsKeepRuleAndScalesInFloat) {
  const int64_t seed = 77, offset = 5;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (double p : {0.1, 0.5, 0.9}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " p=" + std::to_string(p));
      Tensor x = Wavy(dtype, {333, 1001}, 0.1), dy = Wavy(dtype, {333, 1001}, 2.2);  // odd sizes
      std::vector<Tensor> out = RunPair(x, dy, p, seed, offset);
      ASSERT_EQ(out.size(), 2u);
      const float scale = 1.0f / (1.0f - static_cast<float>(p));
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        const bool keep = DropoutKeep(seed, offset, i, p);
        const double want_y = keep ? RoundToDType(static_cast<float>(x.GetF64(i)) * scale, dtype) : 0.0;
        const double want_dx = keep ? RoundToDType(static_cast<float>(dy.GetF64(i)) * scale, dtype) : 0.0;
        ASSERT_EQ(out[0].GetF64(i), want_y) << "element " << i;
        // dropout_grad regenerates the forward's mask.
        ASSERT_EQ(out[1].GetF64(i), want_dx) << "element " << i;
        ASSERT_EQ(out[0].GetF64(i) == 0, out[1].GetF64(i) == 0) << "element " << i;
      }
    }
  }
}

TEST(Dropout, ProbabilityZeroIsIdentityAndOneIsZeros) {
  Tensor x = Wavy(DType::kBF16, {17, 33}, 0.4);
  std::vector<Tensor> keep_all = RunPair(x, x, 0.0, 9, 0);
  EXPECT_TRUE(keep_all[0].BitwiseEqual(x));
  EXPECT_TRUE(keep_all[1].BitwiseEqual(x));
  std::vector<Tensor> drop_all = RunPair(x, x, 1.0, 9, 0);
  EXPECT_TRUE(drop_all[0].BitwiseEqual(Tensor(DType::kBF16, {17, 33})));
  EXPECT_TRUE(drop_all[1].BitwiseEqual(Tensor(DType::kBF16, {17, 33})));
}

TEST(Dropout, SeedAndOffsetOperandsOverrideAttributes) {
  Graph g;
  Node* x = *g.AddInput("x", DType::kF32, {1000});
  Node* seed = *g.AddInput("seed", DType::kI64, {});
  Node* offset = *g.AddInput("offset", DType::kI32, {});
  Attributes attrs = {{"p", 0.5}, {"seed", int64_t{1}}, {"offset", int64_t{1}}};
  ASSERT_TRUE(g.AddOutput(*g.AddNode(OpKind::kDropout, {x, seed, offset}, attrs)).ok());
  ASSERT_TRUE(g.AddOutput(*g.AddNode(OpKind::kDropout, {x, seed}, attrs)).ok());  // offset from attr
  Tensor xv = Wavy(DType::kF32, {1000}, 0.0), sv(DType::kI64, {}), ov(DType::kI32, {});
  sv.SetI64(0, -3);  // negative seeds are reinterpreted as u64
  ov.SetI64(0, 12);
  auto out = Interpret(g, {{"x", xv}, {"seed", sv}, {"offset", ov}});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ((*out)[0].GetF64(i) != 0, DropoutKeep(static_cast<uint64_t>(-3), 12, i, 0.5)) << i;
    ASSERT_EQ((*out)[1].GetF64(i) != 0, DropoutKeep(static_cast<uint64_t>(-3), 1, i, 0.5)) << i;
  }
  EXPECT_FALSE((*out)[0].BitwiseEqual((*out)[1]));
}

// The verifier's rule (ir/shape_inference.cc): p must lie in [0, 1]; NaN is refused too.
TEST(Dropout, ProbabilityOutsideZeroOneOrNaNIsRefused) {
  for (double p : {-0.1, 1.0000001, 1.5, std::nan(""), HUGE_VAL}) {
    for (OpKind op : {OpKind::kDropout, OpKind::kDropoutGrad}) {
      Graph g;
      Node* x = *g.AddInput("x", DType::kF32, {4});
      auto node = g.AddNode(op, {x}, {{"p", p}}, "y");
      ASSERT_FALSE(node.ok()) << "p = " << p;
      EXPECT_NE(node.status().message().find("is outside [0, 1]"), std::string::npos) << node.status();
    }
  }
  for (double p : {0.0, 1.0}) {
    Graph g;
    Node* x = *g.AddInput("x", DType::kF32, {4});
    EXPECT_TRUE(g.AddNode(OpKind::kDropout, {x}, {{"p", p}}, "y").ok()) << "p = " << p;
  }
}

}  // namespace
}  // namespace kiln
