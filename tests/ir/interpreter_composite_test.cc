// Checks that the interpreter's composite ops (softmax, log_softmax, layer_norm, rms_norm,
// cross_entropy) and attention agree with hand values and with plain reference loops written
// here independently, including the edge cases the oracle fixes: -inf rows, constant rows,
// ignored and out-of-range targets, fully masked and causal attention rows.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"

namespace kiln {
namespace {

const double kInf = std::numeric_limits<double>::infinity();

Tensor Make(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.SetF64(i, values[i]);
  return t;
}

// Deterministic, never-zero values in (-scale, scale) that differ from element to element.
Tensor Wavy(DType dtype, Shape shape, double scale, double phase) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetF64(i, scale * (0.05 + 0.9 * std::sin(1.7 * i + phase)));
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.GetF64(i);
  return v;
}

absl::StatusOr<Tensor> RunOp(OpKind op, std::vector<Tensor> args, Attributes attrs = {}) {
  Graph g;
  std::vector<Node*> operands;
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    auto in = g.AddInput(name, args[i].dtype(), args[i].shape());
    if (!in.ok()) return in.status();
    operands.push_back(*in);
    inputs[name] = std::move(args[i]);
  }
  auto node = g.AddNode(op, operands, std::move(attrs), "y");
  if (!node.ok()) return node.status();
  if (auto s = g.AddOutput(*node); !s.ok()) return s;
  auto out = Interpret(g, inputs);
  if (!out.ok()) return out.status();
  return std::move((*out)[0]);
}

Tensor MustRun(OpKind op, std::vector<Tensor> args, Attributes attrs = {}) {
  auto out = RunOp(op, std::move(args), std::move(attrs));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : Tensor();
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << i << ": " << got[i];
    else if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]) << "element " << i;
    else EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << "element " << i;
  }
}

TEST(InterpreterComposite, SoftmaxAndLogSoftmaxHandValues) {
  Tensor x = Make(DType::kF32, {2, 3}, {1, 2, 3, 1001, 1002, 1003});  // shift invariance
  const std::vector<double> p = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
  const std::vector<double> lp = {-2.4076059644443806, -1.4076059644443804, -0.4076059644443804};
  ExpectNear(Values(MustRun(OpKind::kSoftmax, {x})), {p[0], p[1], p[2], p[0], p[1], p[2]}, 1e-7);
  ExpectNear(Values(MustRun(OpKind::kLogSoftmax, {x})), {lp[0], lp[1], lp[2], lp[0], lp[1], lp[2]}, 1e-7);
  // Along axis 0 of [3, 2]: columns are the rows.
  Tensor xt = Make(DType::kF32, {3, 2}, {1, 5, 2, 5, 3, 5});
  ExpectNear(Values(MustRun(OpKind::kSoftmax, {xt}, {{"axis", int64_t{0}}})),
             {p[0], 1 / 3.0, p[1], 1 / 3.0, p[2], 1 / 3.0}, 1e-7);
  ExpectNear(Values(MustRun(OpKind::kLogSoftmax, {xt}, {{"axis", int64_t{0}}})),
             {lp[0], -std::log(3.0), lp[1], -std::log(3.0), lp[2], -std::log(3.0)}, 1e-7);
}

TEST(InterpreterComposite, SoftmaxInfinities) {
  // -inf entries get probability 0; a row of all -inf is NaN, as in torch.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Make(DType::kF32, {2, 3}, {0, -kInf, 0, -kInf, -kInf, -kInf});
  ExpectNear(Values(MustRun(OpKind::kSoftmax, {x})), {0.5, 0, 0.5, nan, nan, nan}, 0);
  ExpectNear(Values(MustRun(OpKind::kLogSoftmax, {x})), {-std::log(2.0), -kInf, -std::log(2.0), nan, nan, nan}, 1e-7);
}

// Reference layer_norm / rms_norm over the trailing `len` elements, written independently.
std::vector<double> RefNorm(const Tensor& x, int64_t len, const Tensor* w, const Tensor* b, double eps, bool layer) {
  std::vector<double> y(x.num_elements());
  for (int64_t r = 0; r < x.num_elements() / len; ++r) {
    double mean = 0, var = 0;
    if (layer) {
      for (int64_t j = 0; j < len; ++j) mean += x.GetF64(r * len + j) / len;
      for (int64_t j = 0; j < len; ++j) var += std::pow(x.GetF64(r * len + j) - mean, 2) / len;
    } else {
      for (int64_t j = 0; j < len; ++j) var += std::pow(x.GetF64(r * len + j), 2) / len;
    }
    for (int64_t j = 0; j < len; ++j) {
      double v = (x.GetF64(r * len + j) - mean) / std::sqrt(var + eps);
      if (w) v *= w->GetF64(j % w->num_elements());  // w broadcasts over leading trailing dims
      if (b) v += b->GetF64(j % b->num_elements());
      y[r * len + j] = v;
    }
  }
  return y;
}

TEST(InterpreterComposite, LayerNormAndRmsNormMatchReference) {
  Tensor x = Wavy(DType::kF32, {5, 3, 4}, 2.0, 0.3);
  Tensor w = Wavy(DType::kF32, {4}, 1.5, 1.1), b = Wavy(DType::kF32, {4}, 0.5, 2.0);
  // Over the last axis with weight and bias.
  ExpectNear(Values(MustRun(OpKind::kLayerNorm, {x, w, b})), RefNorm(x, 4, &w, &b, 1e-5, true), 1e-6);
  // Over the last two axes (axis = -2); weight [4] broadcasts to the trailing [3, 4].
  ExpectNear(Values(MustRun(OpKind::kLayerNorm, {x, w}, {{"axis", int64_t{-2}}, {"eps", 0.1}})),
             RefNorm(x, 12, &w, nullptr, 0.1, true), 1e-6);
  ExpectNear(Values(MustRun(OpKind::kLayerNorm, {x})), RefNorm(x, 4, nullptr, nullptr, 1e-5, true), 1e-6);
  ExpectNear(Values(MustRun(OpKind::kRmsNorm, {x, w})), RefNorm(x, 4, &w, nullptr, 1e-6, false), 1e-6);
  ExpectNear(Values(MustRun(OpKind::kRmsNorm, {x}, {{"axis", int64_t{1}}, {"eps", 0.5}})),
             RefNorm(x, 12, nullptr, nullptr, 0.5, false), 1e-6);
  // Hand values: layer_norm([1, 3]) with eps 0 = [-1, 1]; rms_norm([3, 4]) with eps 0 = [0.6*sqrt2, 0.8*sqrt2].
  ExpectNear(Values(MustRun(OpKind::kLayerNorm, {Make(DType::kF32, {2}, {1, 3})}, {{"eps", 0.0}})), {-1, 1}, 1e-7);
  ExpectNear(Values(MustRun(OpKind::kRmsNorm, {Make(DType::kF32, {2}, {3, 4})}, {{"eps", 0.0}})),
             {0.6 * std::sqrt(2.0), 0.8 * std::sqrt(2.0)}, 1e-7);
}

TEST(InterpreterComposite, LayerNormOfAConstantRowIsTheBias) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const int64_t len = 1000;
    Tensor x = Make(dtype, {2, len}, std::vector<double>(2 * len, 0.1));  // not exact in binary
    Tensor w = Wavy(dtype, {len}, 1.0, 0.0), b = Wavy(dtype, {len}, 1.0, 1.0);
    EXPECT_EQ(Values(MustRun(OpKind::kLayerNorm, {x, w, b})), [&] {
      std::vector<double> v = Values(b);
      v.insert(v.end(), v.begin(), v.end());
      return v;
    }());
    EXPECT_EQ(Values(MustRun(OpKind::kLayerNorm, {x, w})), std::vector<double>(2 * len, 0.0));
    // With eps = 0 the row's variance is exactly 0, so every element is 0 / 0, bias or not.
    const std::vector<double> nans(2 * len, std::numeric_limits<double>::quiet_NaN());
    ExpectNear(Values(MustRun(OpKind::kLayerNorm, {x, w, b}, {{"eps", 0.0}})), nans, 0);
    ExpectNear(Values(MustRun(OpKind::kLayerNorm, {x}, {{"eps", 0.0}})), nans, 0);
  }
}

TEST(InterpreterComposite, CrossEntropyReductionsAndIgnoreIndex) {
  const double l0 = 0.4076059644443804, l1 = std::log(3.0);  // hand: lse - x[t]
  Tensor x = Make(DType::kF32, {3, 3}, {1, 2, 3, 1, 1, 1, 5, 0, 0});
  auto targets = [](std::vector<int64_t> t) {
    Tensor out(DType::kI64, {static_cast<int64_t>(t.size())});
    for (size_t i = 0; i < t.size(); ++i) out.SetI64(i, t[i]);
    return out;
  };
  const double l2 = std::log(std::exp(5.0) + 2) - 0;  // row 2, target 1
  using S = std::string;
  ExpectNear(Values(MustRun(OpKind::kCrossEntropy, {x, targets({2, 0, 1})}, {{"reduction", S("none")}})),
             {l0, l1, l2}, 1e-6);
  ExpectNear(Values(MustRun(OpKind::kCrossEntropy, {x, targets({2, 0, 1})}, {{"reduction", S("sum")}})),
             {l0 + l1 + l2}, 1e-6);
  ExpectNear(Values(MustRun(OpKind::kCrossEntropy, {x, targets({2, 0, 1})})), {(l0 + l1 + l2) / 3}, 1e-6);
  // Ignored rows give 0 and are not counted by the mean.
  ExpectNear(Values(MustRun(OpKind::kCrossEntropy, {x, targets({2, -100, 1})}, {{"reduction", S("none")}})),
             {l0, 0, l2}, 1e-6);
  ExpectNear(Values(MustRun(OpKind::kCrossEntropy, {x, targets({2, -100, 1})})), {(l0 + l2) / 2}, 1e-6);
  ExpectNear(Values(MustRun(OpKind::kCrossEntropy, {x, targets({2, 0, 1})}, {{"ignore_index", int64_t{0}}})),
             {(l0 + l2) / 2}, 1e-6);
  // Every row ignored: mean is 0 / 0 = NaN (torch's answer), sum is 0.
  EXPECT_TRUE(std::isnan(MustRun(OpKind::kCrossEntropy, {x, targets({-100, -100, -100})}).GetF64(0)));
  EXPECT_EQ(MustRun(OpKind::kCrossEntropy, {x, targets({-100, -100, -100})}, {{"reduction", S("sum")}}).GetF64(0), 0);
}

TEST(InterpreterComposite, CrossEntropyTargetOutOfRangeNamesRowAndValue) {
  Tensor x = Make(DType::kBF16, {2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3});
  Tensor t(DType::kI32, {2, 2});
  for (int64_t bad : {3, -1}) {
    for (int i = 0; i < 4; ++i) t.SetI64(i, i == 2 ? bad : 0);
    auto out = RunOp(OpKind::kCrossEntropy, {x, t});
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string msg(out.status().message());
    EXPECT_NE(msg.find("target " + std::to_string(bad) + " at row 2"), std::string::npos) << msg;
  }
}

TEST(InterpreterComposite, CrossEntropyMatchesReferenceOnWideRows) {
  // A row longer than any block; bf16 logits, double log-sum-exp.
  const int64_t rows = 3, classes = 5000;
  Tensor x = Wavy(DType::kBF16, {rows, classes}, 8.0, 0.2);
  Tensor t(DType::kI64, {rows});
  for (int r = 0; r < rows; ++r) t.SetI64(r, 1237 * (r + 1));
  std::vector<double> want(rows);
  for (int r = 0; r < rows; ++r) {
    double s = 0;
    for (int c = 0; c < classes; ++c) s += std::exp(x.GetF64(r * classes + c));
    want[r] = std::log(s) - x.GetF64(r * classes + t.GetI64(r));
  }
  ExpectNear(Values(MustRun(OpKind::kCrossEntropy, {x, t}, {{"reduction", std::string("none")}})), want, 1e-2);
}

// Reference attention: explicit scores, -inf for masked/causal, softmax, then p.v; a row
// with every score -inf gives zeros.
std::vector<double> RefAttention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                                 bool causal, double scale) {
  const Shape& qs = q.shape();
  const int64_t S = qs[qs.size() - 2], D = qs.back(), T = k.shape()[qs.size() - 2], E = v.shape().back();
  const int64_t batches = q.num_elements() / (S * D);
  std::vector<double> y(batches * S * E, 0.0);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < S; ++i) {
      std::vector<double> s(T);
      double mx = -kInf;
      for (int64_t j = 0; j < T; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q.GetF64((b * S + i) * D + d) * k.GetF64((b * T + j) * D + d);
        s[j] = dot * scale;
        if (mask) s[j] += mask->GetF64((i * T + j) % mask->num_elements());  // mask [S,T] or [T]
        if (causal && j > i) s[j] = -kInf;
        mx = std::max(mx, s[j]);
      }
      if (mx == -kInf) continue;
      double z = 0;
      for (int64_t j = 0; j < T; ++j) z += std::exp(s[j] - mx);
      for (int64_t e = 0; e < E; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < T; ++j) acc += std::exp(s[j] - mx) / z * v.GetF64((b * T + j) * E + e);
        y[(b * S + i) * E + e] = acc;
      }
    }
  return y;
}

TEST(InterpreterComposite, AttentionMatchesReference) {
  Tensor q = Wavy(DType::kF32, {2, 3, 5, 8}, 1.0, 0.1), k = Wavy(DType::kF32, {2, 3, 7, 8}, 1.0, 0.7),
         v = Wavy(DType::kF32, {2, 3, 7, 6}, 1.0, 1.3), mask = Wavy(DType::kF32, {5, 7}, 2.0, 0.4);
  const double def = 1 / std::sqrt(8.0);
  ExpectNear(Values(MustRun(OpKind::kAttention, {q, k, v})), RefAttention(q, k, v, nullptr, false, def), 1e-6);
  ExpectNear(Values(MustRun(OpKind::kAttention, {q, k, v, mask}, {{"scale", 0.3}})),
             RefAttention(q, k, v, &mask, false, 0.3), 1e-6);
  ExpectNear(Values(MustRun(OpKind::kAttention, {q, k, v, mask}, {{"causal", true}})),
             RefAttention(q, k, v, &mask, true, def), 1e-6);
  // bf16 in and out: the double result rounded once.
  Tensor qb = Wavy(DType::kBF16, {1, 4, 16}, 1.0, 0.5), kb = Wavy(DType::kBF16, {1, 9, 16}, 1.0, 0.9),
         vb = Wavy(DType::kBF16, {1, 9, 16}, 1.0, 0.2);
  std::vector<double> want = RefAttention(qb, kb, vb, nullptr, true, 0.25);
  std::vector<double> got = Values(MustRun(OpKind::kAttention, {qb, kb, vb}, {{"causal", true}, {"scale", 0.25}}));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], RoundToDType(want[i], DType::kBF16)) << i;
}

// attention_lse: ln(sum_j e^(s_j)) of the same scores, from the same explicit loops; +inf for
// a fully masked row.
TEST(InterpreterComposite, AttentionLseMatchesReference) {
  Tensor q = Wavy(DType::kF32, {2, 3, 5, 8}, 1.0, 0.1), k = Wavy(DType::kF32, {2, 3, 7, 8}, 1.0, 0.7),
         mask = Wavy(DType::kF32, {5, 7}, 2.0, 0.4);
  for (bool causal : {false, true}) {
    for (const Tensor* m : std::vector<const Tensor*>{nullptr, &mask}) {
      std::vector<Tensor> operands = {q, k};
      if (m) operands.push_back(*m);
      Tensor got = MustRun(OpKind::kAttentionLse, operands, {{"causal", causal}, {"scale", 0.3}});
      ASSERT_EQ(got.dtype(), DType::kF32);
      ASSERT_EQ(got.shape(), (Shape{2, 3, 5}));
      for (int64_t row = 0; row < 30; ++row) {
        const int64_t b = row / 5, i = row % 5;
        double mx = -kInf, z = 0;
        std::vector<double> s(7);
        for (int64_t j = 0; j < 7; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < 8; ++d) dot += q.GetF64((b * 5 + i) * 8 + d) * k.GetF64((b * 7 + j) * 8 + d);
          s[j] = dot * 0.3 + (m ? m->GetF64(i * 7 + j) : 0.0);
          if (causal && j > i) s[j] = -kInf;
          mx = std::max(mx, s[j]);
        }
        for (double x : s) z += std::exp(x - mx);
        EXPECT_NEAR(got.GetF64(row), mx + std::log(z), 1e-5) << row << (causal ? " causal" : "") << (m ? " mask" : "");
      }
    }
  }
  std::vector<double> rows(15, 0.0);
  for (int j = 0; j < 5; ++j) rows[5 + j] = -kInf;  // row 1 fully masked
  Tensor lse = MustRun(OpKind::kAttentionLse, {Wavy(DType::kBF16, {3, 4}, 1.0, 0.1), Wavy(DType::kBF16, {5, 4}, 1.0, 0.7),
                                               Make(DType::kBF16, {3, 5}, rows)});
  EXPECT_EQ(lse.GetF64(1), kInf);
  EXPECT_TRUE(std::isfinite(lse.GetF64(0)) && std::isfinite(lse.GetF64(2)));
}

TEST(InterpreterComposite, CausalAttentionEqualsAnExplicitMinusInfMask) {
  // Top-left aligned: query i sees keys j <= i, also when S != T.
  for (auto [S, T] : std::vector<std::pair<int64_t, int64_t>>{{6, 6}, {4, 9}, {9, 4}}) {
    Tensor q = Wavy(DType::kF32, {2, S, 8}, 1.0, 0.1), k = Wavy(DType::kF32, {2, T, 8}, 1.0, 0.7),
           v = Wavy(DType::kF32, {2, T, 5}, 1.0, 1.3);
    std::vector<double> m(S * T);
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < T; ++j) m[i * T + j] = j > i ? -kInf : 0.0;
    Tensor causal = MustRun(OpKind::kAttention, {q, k, v}, {{"causal", true}});
    Tensor masked = MustRun(OpKind::kAttention, {q, k, v, Make(DType::kF32, {S, T}, m)});
    EXPECT_TRUE(causal.BitwiseEqual(masked)) << S << "x" << T;
  }
}

TEST(InterpreterComposite, FullyMaskedAttentionRowIsZero) {
  Tensor q = Wavy(DType::kF32, {3, 4}, 1.0, 0.1), k = Wavy(DType::kF32, {5, 4}, 1.0, 0.7),
         v = Wavy(DType::kF32, {5, 2}, 1.0, 1.3);
  std::vector<double> m(15, 0.0);
  for (int j = 0; j < 5; ++j) m[5 + j] = -kInf;  // row 1 fully masked
  m[0] = -kInf;                                  // row 0 partially masked
  Tensor y = MustRun(OpKind::kAttention, {q, k, v, Make(DType::kF32, {3, 5}, m)});
  std::vector<double> got = Values(y);
  EXPECT_EQ(got[2], 0.0);
  EXPECT_EQ(got[3], 0.0);
  for (double g : got) EXPECT_FALSE(std::isnan(g));
  Tensor mask = Make(DType::kF32, {3, 5}, m);
  ExpectNear(got, RefAttention(q, k, v, &mask, false, 0.5), 1e-6);
}

}  // namespace
}  // namespace kiln
