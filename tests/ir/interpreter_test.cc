// Checks that the reference interpreter computes every elementary op of ir/ops.def (pointwise,
// reductions, layout, matmul) to values written by hand or computed here with independent
// plain loops, with numpy broadcasting, exact integer arithmetic and one rounding to the
// node's dtype; and that Interpret() validates its inputs and RandomInputs() respects bounds.
#include <cmath>
#include <limits>
#include <set>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"

namespace kiln {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Tensor Make(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.num_elements());
  for (size_t i = 0; i < values.size(); ++i) t.SetF64(i, values[i]);
  return t;
}

Tensor MakeInt(DType dtype, Shape shape, const std::vector<int64_t>& values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.SetI64(i, values[i]);
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.GetF64(i);
  return v;
}

std::vector<int64_t> IntValues(const Tensor& t) {
  std::vector<int64_t> v(t.num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.GetI64(i);
  return v;
}

// Evaluates the one-node graph op(x0, x1, ...) on `args`.
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
  auto status = g.AddOutput(*node);
  if (!status.ok()) return status;
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
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << "element " << i;
    }
  }
}

// Deterministic values in [-scale, scale] that vary from element to element.
Tensor Ramp(DType dtype, Shape shape, double scale) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetF64(i, std::sin(0.37 * i + 0.1) * scale);
  return t;
}

// A tripwire, kept by hand: it fails when ops.def gains (or renames) a row that is not listed
// here, which sends whoever adds an op to write its interpreter test (in this file,
// interpreter_composite_test.cc or dropout_test.cc) and then list it; a listed name that is no
// longer an op fails too. It does not prove that a listed op has a test: that is for review.
TEST(InterpreterOps, TripwireListsEveryOpOfTheTable) {
  const std::set<std::string> listed = {
      "input", "constant", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh",
      "sigmoid", "erf", "relu", "gelu", "gelu_tanh", "silu", "cast", "logical_not", "add", "sub",
      "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
      "logical_and", "logical_or", "where", "iota", "reduce_sum", "reduce_mean", "reduce_max",
      "reduce_min", "softmax", "log_softmax", "layer_norm", "rms_norm", "cross_entropy",
      "dropout", "dropout_grad", "attention", "attention_lse", "reshape", "transpose", "slice", "concat", "gather",
      "broadcast_to", "matmul"};
  std::set<std::string> table;
  for (const OpInfo& info : AllOps()) {
    table.insert(info.name);
    EXPECT_TRUE(listed.count(info.name)) << info.name << " is in ops.def: test it, then list it";
  }
  for (const std::string& name : listed) EXPECT_TRUE(table.count(name)) << name << " is not an op";
}

TEST(InterpreterOps, UnaryFloatOpsMatchHandValues) {
  // Expected values from the closed forms, evaluated with Python's math module.
  const std::vector<double> x = {-1.5, -0.25, 0.5, 2.0};
  struct Case { OpKind op; std::vector<double> want; };
  const std::vector<Case> cases = {
      {OpKind::kNeg, {1.5, 0.25, -0.5, -2.0}},
      {OpKind::kAbs, {1.5, 0.25, 0.5, 2.0}},
      {OpKind::kExp, {0.22313016014842982, 0.7788007830714049, 1.6487212707001282, 7.38905609893065}},
      {OpKind::kTanh, {-0.9051482536448664, -0.24491866240370913, 0.46211715726000974, 0.9640275800758169}},
      {OpKind::kSigmoid, {0.18242552380635635, 0.43782349911420193, 0.6224593312018546, 0.8807970779778823}},
      {OpKind::kErf, {-0.9661051464753108, -0.2763263901682369, 0.5204998778130465, 0.9953222650189527}},
      {OpKind::kRelu, {0, 0, 0.5, 2.0}},
      {OpKind::kGelu, {-0.10021080190328713, -0.10032341857926907, 0.34573123063700656, 1.9544997361036416}},
      {OpKind::kGeluTanh, {-0.10042842301976707, -0.100324649298315, 0.34571400982514394, 1.954597694087775}},
      {OpKind::kSilu, {-0.2736382857095345, -0.10945587477855048, 0.3112296656009273, 1.7615941559557646}},
      {OpKind::kReciprocal, {-1 / 1.5, -4.0, 2.0, 0.5}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(OpName(c.op));
    ExpectNear(Values(MustRun(c.op, {Make(DType::kF32, {4}, x)})), c.want, 1e-7);
  }
  const std::vector<double> pos = {0.25, 1.0, 4.0, 9.0};
  ExpectNear(Values(MustRun(OpKind::kLog, {Make(DType::kF32, {4}, pos)})),
             {-1.3862943611198906, 0.0, 1.3862943611198906, 2.1972245773362196}, 1e-7);
  ExpectNear(Values(MustRun(OpKind::kSqrt, {Make(DType::kF32, {4}, pos)})), {0.5, 1, 2, 3}, 0);
  ExpectNear(Values(MustRun(OpKind::kRsqrt, {Make(DType::kF32, {4}, pos)})), {2, 1, 0.5, 1 / 3.0}, 1e-7);
}

TEST(InterpreterOps, ResultsAreRoundedOnceToTheNodeDType) {
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie (-> 1, even), 1 + 3 * 2^-9 rounds up.
  Tensor a = Make(DType::kBF16, {3}, {1.0, 1.0, 256.0});
  Tensor b = Make(DType::kBF16, {3}, {0.00390625, 0.005859375, 1.0});
  EXPECT_EQ(Values(MustRun(OpKind::kAdd, {a, b})), (std::vector<double>{1.0, 1.0078125, 256.0}));
  // f16: 2048 + 1 ties to 2048, 2048 + 3 = 2051 rounds to 2052; exp(1) = 2.71875 in f16.
  Tensor h = Make(DType::kF16, {2}, {2048, 2048});
  Tensor k = Make(DType::kF16, {2}, {1, 3});
  EXPECT_EQ(Values(MustRun(OpKind::kAdd, {h, k})), (std::vector<double>{2048, 2052}));
  EXPECT_EQ(Values(MustRun(OpKind::kExp, {Make(DType::kF16, {1}, {1.0})})), (std::vector<double>{2.71875}));
  // A chain in bf16 rounds at every node: (1 + 2^-8) stored as 1, then * 3 = 3.
  Graph g;
  Node* x = *g.AddInput("x", DType::kBF16, {1});
  Node* s = *g.AddNode(OpKind::kAdd, {x, *g.AddConstant("c", Make(DType::kBF16, {1}, {0.00390625}))});
  Node* m = *g.AddNode(OpKind::kMul, {s, *g.AddConstant("three", Make(DType::kBF16, {1}, {3}))});
  ASSERT_TRUE(g.AddOutput(m).ok());
  auto out = Interpret(g, {{"x", Make(DType::kBF16, {1}, {1.0})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{3.0}));
}

TEST(InterpreterOps, IntegerArithmeticIsExact) {
  Tensor a = MakeInt(DType::kI32, {6}, {7, -7, 7, -7, 100, -2147483647});
  Tensor b = MakeInt(DType::kI32, {6}, {2, 2, -2, -2, 7, 1});
  EXPECT_EQ(IntValues(MustRun(OpKind::kDiv, {a, b})), (std::vector<int64_t>{3, -3, -3, 3, 14, -2147483647}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kAdd, {a, b})), (std::vector<int64_t>{9, -5, 5, -9, 107, -2147483646}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kSub, {a, b})), (std::vector<int64_t>{5, -9, 9, -5, 93, -2147483648LL}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kMul, {a, b})), (std::vector<int64_t>{14, -14, -14, 14, 700, -2147483647}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kMaximum, {a, b})), (std::vector<int64_t>{7, 2, 7, -2, 100, 1}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kMinimum, {a, b})), (std::vector<int64_t>{2, -7, -2, -7, 7, -2147483647}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kNeg, {a})), (std::vector<int64_t>{-7, 7, -7, 7, -100, 2147483647}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kAbs, {b})), (std::vector<int64_t>{2, 2, 2, 2, 7, 1}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kRelu, {a})), (std::vector<int64_t>{7, 0, 7, 0, 100, 0}));
  EXPECT_EQ(Values(MustRun(OpKind::kLt, {a, b})), (std::vector<double>{0, 1, 0, 1, 0, 1}));
  // i64 beyond 2^53, where a double path would lose the last bit.
  const int64_t big = (int64_t{1} << 53) + 1;
  Tensor c = MakeInt(DType::kI64, {2}, {big, big});
  Tensor d = MakeInt(DType::kI64, {2}, {2, big - 1});
  EXPECT_EQ(IntValues(MustRun(OpKind::kAdd, {c, d})), (std::vector<int64_t>{big + 2, 2 * big - 1}));
  EXPECT_EQ(Values(MustRun(OpKind::kEq, {c, d})), (std::vector<double>{0, 0}));
  EXPECT_EQ(Values(MustRun(OpKind::kGt, {c, d})), (std::vector<double>{1, 1}));
}

TEST(InterpreterOps, IntegerDivisionByZeroIsAnError) {
  auto out = RunOp(OpKind::kDiv, {MakeInt(DType::kI32, {2}, {1, 2}), MakeInt(DType::kI32, {2}, {1, 0})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("division by zero"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("\"y\""), std::string::npos) << out.status();
}

TEST(InterpreterOps, CastTruncatesSaturatesAndTestsNonZero) {
  Tensor x = Make(DType::kF32, {7}, {-2.7, 2.7, -0.5, kNaN, kInf, -kInf, 3e10});
  EXPECT_EQ(IntValues(MustRun(OpKind::kCast, {x}, {{"dtype", std::string("i32")}})),
            (std::vector<int64_t>{-2, 2, 0, 0, 0, 0, 2147483647}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kCast, {x}, {{"dtype", std::string("i64")}})),
            (std::vector<int64_t>{-2, 2, 0, 0, 0, 0, 30000001024}));  // 3e10 as f32
  EXPECT_EQ(Values(MustRun(OpKind::kCast, {Make(DType::kF32, {4}, {0.0, -0.5, kNaN, -0.0})},
                           {{"dtype", std::string("bool")}})),
            (std::vector<double>{0, 1, 1, 0}));
  EXPECT_EQ(Values(MustRun(OpKind::kCast, {MakeInt(DType::kI32, {3}, {-3, 0, 257})},
                           {{"dtype", std::string("bf16")}})),
            (std::vector<double>{-3, 0, 256}));  // 257 is not a bf16; ties to 256
  EXPECT_EQ(Values(MustRun(OpKind::kCast, {Make(DType::kBool, {2}, {1, 0})}, {{"dtype", std::string("f32")}})),
            (std::vector<double>{1, 0}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kCast, {MakeInt(DType::kI64, {1}, {(int64_t{1} << 40) + 5})},
                              {{"dtype", std::string("i32")}})),
            (std::vector<int64_t>{5}));  // integer narrowing keeps the low bits
}

TEST(InterpreterOps, IotaCountsAlongItsAxis) {
  using V = std::vector<int64_t>;
  Graph g;
  Node* a = *g.AddNode(OpKind::kIota, {}, {{"shape", V{2, 3}}, {"axis", int64_t{1}}});
  Node* b = *g.AddNode(OpKind::kIota, {}, {{"shape", V{2, 3}}, {"axis", int64_t{0}}, {"dtype", std::string("f32")}});
  ASSERT_TRUE(g.AddOutput(a).ok());
  ASSERT_TRUE(g.AddOutput(b).ok());
  auto out = Interpret(g, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kI64);
  EXPECT_EQ(IntValues((*out)[0]), (V{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Values((*out)[1]), (std::vector<double>{0, 0, 0, 1, 1, 1}));
}

TEST(InterpreterOps, BinaryFloatOpsAndNaNRules) {
  Tensor a = Make(DType::kF32, {4}, {2.0, -1.0, kNaN, 0.5});
  Tensor b = Make(DType::kF32, {4}, {3.0, 4.0, 1.0, kNaN});
  ExpectNear(Values(MustRun(OpKind::kSub, {a, b})), {-1, -5, kNaN, kNaN}, 0);
  ExpectNear(Values(MustRun(OpKind::kDiv, {a, b})), {2 / 3.0, -0.25, kNaN, kNaN}, 1e-7);
  ExpectNear(Values(MustRun(OpKind::kPow, {a, b})), {8, 1, kNaN, kNaN}, 0);
  ExpectNear(Values(MustRun(OpKind::kMaximum, {a, b})), {3, 4, kNaN, kNaN}, 0);
  ExpectNear(Values(MustRun(OpKind::kMinimum, {a, b})), {2, -1, kNaN, kNaN}, 0);
  EXPECT_EQ(Values(MustRun(OpKind::kEq, {a, b})), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(Values(MustRun(OpKind::kNe, {a, b})), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(Values(MustRun(OpKind::kLe, {a, b})), (std::vector<double>{1, 1, 0, 0}));
  EXPECT_EQ(Values(MustRun(OpKind::kGe, {a, b})), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(Values(MustRun(OpKind::kGt, {b, a})), (std::vector<double>{1, 1, 0, 0}));
  ExpectNear(Values(MustRun(OpKind::kRelu, {a})), {2, 0, kNaN, 0.5}, 0);
  ExpectNear(Values(MustRun(OpKind::kPow, {Make(DType::kF32, {2}, {4, -8}), Make(DType::kF32, {2}, {0.5, 1 / 3.0})})),
             {2, kNaN}, 1e-7);  // negative base, fractional exponent: NaN as in C
}

TEST(InterpreterOps, LogicalOpsAndWhere) {
  Tensor p = Make(DType::kBool, {4}, {0, 0, 1, 1});
  Tensor q = Make(DType::kBool, {4}, {0, 1, 0, 1});
  EXPECT_EQ(Values(MustRun(OpKind::kLogicalAnd, {p, q})), (std::vector<double>{0, 0, 0, 1}));
  EXPECT_EQ(Values(MustRun(OpKind::kLogicalOr, {p, q})), (std::vector<double>{0, 1, 1, 1}));
  EXPECT_EQ(Values(MustRun(OpKind::kLogicalNot, {p})), (std::vector<double>{1, 1, 0, 0}));
  EXPECT_EQ(Values(MustRun(OpKind::kEq, {p, q})), (std::vector<double>{1, 0, 0, 1}));
  // where broadcasts all three operands: cond [2,1], a [3], b scalar.
  Tensor cond = Make(DType::kBool, {2, 1}, {1, 0});
  Tensor a = Make(DType::kF32, {3}, {1, 2, 3});
  Tensor b = Make(DType::kF32, {}, {-1});
  Tensor y = MustRun(OpKind::kWhere, {cond, a, b});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(Values(y), (std::vector<double>{1, 2, 3, -1, -1, -1}));
  const int64_t big = (int64_t{1} << 60) + 3;  // exact for i64
  EXPECT_EQ(IntValues(MustRun(OpKind::kWhere, {Make(DType::kBool, {2}, {0, 1}), MakeInt(DType::kI64, {2}, {big, big}),
                                                MakeInt(DType::kI64, {2}, {-big, -big})})),
            (std::vector<int64_t>{-big, big}));
}

// Independent broadcast reference: out[i] = a[ia] + b[ib] with indices computed per dim.
TEST(InterpreterOps, NumpyBroadcasting) {
  struct Case { Shape a, b, out; };
  for (const Case& c : std::vector<Case>{{{2, 3}, {3}, {2, 3}}, {{2, 1}, {1, 3}, {2, 3}},
                                         {{4, 1, 3}, {2, 1}, {4, 2, 3}}, {{}, {2, 2}, {2, 2}},
                                         {{3, 1, 1}, {1, 5}, {3, 1, 5}}}) {
    std::vector<double> av(NumElements(c.a)), bv(NumElements(c.b));
    for (size_t i = 0; i < av.size(); ++i) av[i] = 1 + i;
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = 100 * (1 + i);
    Tensor y = MustRun(OpKind::kAdd, {Make(DType::kF32, c.a, av), Make(DType::kF32, c.b, bv)});
    ASSERT_EQ(y.shape(), c.out);
    const int64_t r = c.out.size();
    for (int64_t i = 0; i < NumElements(c.out); ++i) {
      std::vector<int64_t> idx(r);
      for (int64_t d = r - 1, rest = i; d >= 0; --d) idx[d] = rest % c.out[d], rest /= c.out[d];
      auto flat = [&](const Shape& s) {
        int64_t f = 0;
        for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + (s[d] == 1 ? 0 : idx[r - s.size() + d]);
        return f;
      };
      EXPECT_EQ(y.GetF64(i), av[flat(c.a)] + bv[flat(c.b)]) << ShapeToString(c.out) << " at " << i;
    }
  }
}

TEST(InterpreterOps, ReductionsOverAxes) {
  // x[2,3,2] = 1..12
  std::vector<double> v(12);
  for (int i = 0; i < 12; ++i) v[i] = i + 1;
  Tensor x = Make(DType::kF32, {2, 3, 2}, v);
  using V = std::vector<int64_t>;
  Tensor s1 = MustRun(OpKind::kReduceSum, {x}, {{"axes", V{1}}});
  EXPECT_EQ(s1.shape(), (Shape{2, 2}));
  EXPECT_EQ(Values(s1), (std::vector<double>{9, 12, 27, 30}));
  Tensor s02 = MustRun(OpKind::kReduceSum, {x}, {{"axes", V{0, -1}}, {"keep_dims", true}});
  EXPECT_EQ(s02.shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(Values(s02), (std::vector<double>{1 + 2 + 7 + 8, 3 + 4 + 9 + 10, 5 + 6 + 11 + 12}));
  Tensor all = MustRun(OpKind::kReduceMean, {x});
  EXPECT_EQ(all.shape(), Shape{});
  EXPECT_EQ(Values(all), (std::vector<double>{6.5}));
  EXPECT_EQ(Values(MustRun(OpKind::kReduceMax, {x}, {{"axes", V{2}}})), (std::vector<double>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(Values(MustRun(OpKind::kReduceMin, {x}, {{"axes", V{0}}})), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // NaN propagates through max/min wherever it sits in the row.
  Tensor n = Make(DType::kF32, {2, 3}, {kNaN, 1, 2, 1, 2, kNaN});
  ExpectNear(Values(MustRun(OpKind::kReduceMax, {n}, {{"axes", V{1}}})), {kNaN, kNaN}, 0);
  ExpectNear(Values(MustRun(OpKind::kReduceMin, {n}, {{"axes", V{1}}})), {kNaN, kNaN}, 0);
  ExpectNear(Values(MustRun(OpKind::kReduceMax, {n}, {{"axes", V{0}}})), {kNaN, 2, kNaN}, 0);
}

TEST(InterpreterOps, ReductionsAccumulateInDoubleAndIntegersExactly) {
  // 4096 copies of bf16(0.1) = 0.10009765625: a bf16 or f32 running sum would drift; the
  // double sum is exact and rounds once.
  const double tenth = 0.10009765625;
  Tensor x = Make(DType::kBF16, {4096}, std::vector<double>(4096, 0.1));
  EXPECT_EQ(x.GetF64(0), tenth);
  EXPECT_EQ(Values(MustRun(OpKind::kReduceSum, {x})), (std::vector<double>{RoundToDType(4096 * tenth, DType::kBF16)}));
  Tensor f = Make(DType::kF32, {1 << 20}, std::vector<double>(1 << 20, 0.1));
  EXPECT_EQ(Values(MustRun(OpKind::kReduceMean, {f})), (std::vector<double>{static_cast<float>(0.1)}));
  const int64_t big = (int64_t{1} << 55) + 1;
  Tensor i = MakeInt(DType::kI64, {2, 2}, {big, 1, -3, 4});
  EXPECT_EQ(IntValues(MustRun(OpKind::kReduceSum, {i}, {{"axes", std::vector<int64_t>{1}}})),
            (std::vector<int64_t>{big + 1, 1}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kReduceMean, {MakeInt(DType::kI32, {3}, {-1, -2, -4})})),
            (std::vector<int64_t>{-2}));  // -7 / 3 truncates toward zero
  // Row-parallel path (trailing axes) and strided path (leading axis) against plain loops.
  Tensor w = Ramp(DType::kF32, {300, 1000}, 3.0);
  std::vector<double> rows(300, 0.0), cols(1000, 0.0);
  for (int r = 0; r < 300; ++r)
    for (int c = 0; c < 1000; ++c) rows[r] += w.GetF64(r * 1000 + c), cols[c] += w.GetF64(r * 1000 + c);
  std::vector<double> got_rows = Values(MustRun(OpKind::kReduceSum, {w}, {{"axes", std::vector<int64_t>{1}}}));
  std::vector<double> got_cols = Values(MustRun(OpKind::kReduceSum, {w}, {{"axes", std::vector<int64_t>{0}}}));
  for (int r = 0; r < 300; ++r) EXPECT_EQ(got_rows[r], static_cast<float>(rows[r])) << r;
  for (int c = 0; c < 1000; ++c) EXPECT_EQ(got_cols[c], static_cast<float>(cols[c])) << c;
  EXPECT_EQ(IntValues(MustRun(OpKind::kReduceMax, {MakeInt(DType::kI32, {3}, {-5, -2, -9})})), (std::vector<int64_t>{-2}));
  EXPECT_EQ(IntValues(MustRun(OpKind::kReduceMin, {MakeInt(DType::kI32, {3}, {-5, -2, -9})})), (std::vector<int64_t>{-9}));
}

TEST(InterpreterOps, LayoutOps) {
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  Tensor x = Make(DType::kF32, {2, 3, 4}, v);
  using V = std::vector<int64_t>;
  Tensor r = MustRun(OpKind::kReshape, {x}, {{"shape", V{4, -1}}});
  EXPECT_EQ(r.shape(), (Shape{4, 6}));
  EXPECT_EQ(Values(r), v);
  // transpose perm [2, 0, 1]: y[k][i][j] = x[i][j][k].
  Tensor t = MustRun(OpKind::kTranspose, {x}, {{"perm", V{2, 0, 1}}});
  ASSERT_EQ(t.shape(), (Shape{4, 2, 3}));
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(t.GetF64((k * 2 + i) * 3 + j), x.GetF64((i * 3 + j) * 4 + k));
  // slice: axis 0 [-1:] ; axis 1 [0:100:2] (end clamped) ; axis 2 [-3:-1]
  Tensor s = MustRun(OpKind::kSlice, {x}, {{"starts", V{-1, 0, -3}}, {"ends", V{2, 100, -1}}, {"steps", V{1, 2, 1}}});
  ASSERT_EQ(s.shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(Values(s), (std::vector<double>{13, 14, 21, 22}));
  // concat along axis 1 of three operands.
  Tensor a = Make(DType::kF32, {2, 1}, {1, 2}), b = Make(DType::kF32, {2, 2}, {3, 4, 5, 6}),
         c = Make(DType::kF32, {2, 1}, {7, 8});
  Tensor cat = MustRun(OpKind::kConcat, {a, b, c}, {{"axis", int64_t{-1}}});
  ASSERT_EQ(cat.shape(), (Shape{2, 4}));
  EXPECT_EQ(Values(cat), (std::vector<double>{1, 3, 4, 7, 2, 5, 6, 8}));
  // broadcast_to [3] -> [2, 3]
  Tensor bt = MustRun(OpKind::kBroadcastTo, {Make(DType::kBF16, {3}, {1, 2, 3})}, {{"shape", V{2, 3}}});
  EXPECT_EQ(Values(bt), (std::vector<double>{1, 2, 3, 1, 2, 3}));
}

TEST(InterpreterOps, GatherWithNegativeIndicesAndRangeErrors) {
  std::vector<double> v(12);
  for (int i = 0; i < 12; ++i) v[i] = i;
  Tensor x = Make(DType::kF32, {3, 4}, v);
  // axis 0, indices [2,2] with a negative one: rows.
  Tensor y = MustRun(OpKind::kGather, {x, MakeInt(DType::kI64, {2, 2}, {2, -3, 0, -1})});
  ASSERT_EQ(y.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(Values(y), (std::vector<double>{8, 9, 10, 11, 0, 1, 2, 3, 0, 1, 2, 3, 8, 9, 10, 11}));
  // axis 1, indices [3] (i32).
  Tensor z = MustRun(OpKind::kGather, {x, MakeInt(DType::kI32, {3}, {3, 0, -4})}, {{"axis", int64_t{1}}});
  ASSERT_EQ(z.shape(), (Shape{3, 3}));
  EXPECT_EQ(Values(z), (std::vector<double>{3, 0, 0, 7, 4, 4, 11, 8, 8}));
  for (int64_t bad : {3, -4}) {
    auto out = RunOp(OpKind::kGather, {x, MakeInt(DType::kI64, {2}, {0, bad})});
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find(std::to_string(bad)), std::string::npos) << out.status();
    EXPECT_NE(out.status().message().find("position 1"), std::string::npos) << out.status();
  }
}

// Plain triple loop in double over the broadcast batch, the reference for matmul.
std::vector<double> NaiveMatmul(const Tensor& a, const Tensor& b, const Shape& out) {
  const int64_t r = out.size(), m = out[r - 2], n = out[r - 1], k = a.shape().back();
  const int64_t batches = NumElements(out) / (m * n);
  const int64_t a_batches = a.num_elements() / (m * k), b_batches = b.num_elements() / (k * n);
  std::vector<double> y(NumElements(out));
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Tests below only broadcast whole operands (batch 1) or use equal batches.
    const int64_t ab = a_batches == 1 ? 0 : bi, bb = b_batches == 1 ? 0 : bi;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t kk = 0; kk < k; ++kk) s += a.GetF64((ab * m + i) * k + kk) * b.GetF64((bb * k + kk) * n + j);
        y[(bi * m + i) * n + j] = s;
      }
  }
  return y;
}

TEST(InterpreterOps, MatmulMatchesPlainLoops) {
  Tensor a = Make(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Make(DType::kF32, {3, 2}, {7, 8, 9, 10, 11, 12});
  EXPECT_EQ(Values(MustRun(OpKind::kMatmul, {a, b})), (std::vector<double>{58, 64, 139, 154}));
  // Odd sizes crossing the 128-column panel and the 4-row blocks; batch broadcasting.
  struct Case { Shape a, b, out; };
  for (const Case& c : std::vector<Case>{{{37, 19}, {19, 130}, {37, 130}},
                                         {{3, 5, 7}, {1, 7, 131}, {3, 5, 131}},
                                         {{2, 1, 6, 4}, {3, 4, 9}, {2, 3, 6, 9}}}) {
    Tensor x = Ramp(DType::kF32, c.a, 1.0), w = Ramp(DType::kF32, c.b, 0.5);
    Tensor y = MustRun(OpKind::kMatmul, {x, w});
    ASSERT_EQ(y.shape(), c.out);
    if (c.a.size() == 4) {  // a [2,1,6,4] x b [3,4,9]: batch (i, j) uses a[i], b[j]
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          for (int r = 0; r < 6; ++r)
            for (int col = 0; col < 9; ++col) {
              double s = 0;
              for (int kk = 0; kk < 4; ++kk) s += x.GetF64((i * 6 + r) * 4 + kk) * w.GetF64((j * 4 + kk) * 9 + col);
              EXPECT_FLOAT_EQ(y.GetF64(((i * 3 + j) * 6 + r) * 9 + col), s);
            }
    } else {
      std::vector<double> want = NaiveMatmul(x, w, c.out);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(y.GetF64(i), static_cast<float>(want[i])) << i;
    }
  }
}

TEST(InterpreterOps, MatmulRoundsOnceAndIntegersAreExact) {
  // bf16 inputs, double accumulation, one rounding to bf16 at the end.
  Tensor a = Ramp(DType::kBF16, {5, 300}, 1.0), b = Ramp(DType::kBF16, {300, 3}, 1.0);
  Tensor y = MustRun(OpKind::kMatmul, {a, b});
  std::vector<double> want = NaiveMatmul(a, b, {5, 3});
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y.GetF64(i), RoundToDType(want[i], DType::kBF16));
  const int64_t big = int64_t{1} << 30;  // big * big + 15 is exact in i64, not in double
  Tensor ia = MakeInt(DType::kI64, {1, 2}, {big, 3});
  Tensor ib = MakeInt(DType::kI64, {2, 2}, {big, 1, 5, -7});
  EXPECT_EQ(IntValues(MustRun(OpKind::kMatmul, {ia, ib})),
            (std::vector<int64_t>{(int64_t{1} << 60) + 15, big - 21}));
}

TEST(InterpreterValidation, InputsAreCheckedByName) {
  Graph g;
  Node* x = *g.AddInput("x", DType::kF32, {2});
  Node* y = *g.AddInput("y", DType::kF32, {2});
  ASSERT_TRUE(g.AddOutput(*g.AddNode(OpKind::kAdd, {x, y}, {}, "z")).ok());
  Tensor ok = Make(DType::kF32, {2}, {1, 2});
  struct Case { std::map<std::string, Tensor> inputs; std::string needle; };
  const std::vector<Case> cases = {
      {{{"x", ok}}, "missing input \"y\""},
      {{{"x", ok}, {"y", ok}, {"w", ok}}, "unknown input \"w\""},
      {{{"x", ok}, {"y", Make(DType::kF16, {2}, {1, 2})}}, "input \"y\" is f16[2]"},
      {{{"x", Make(DType::kF32, {3}, {1, 2, 3})}, {"y", ok}}, "input \"x\" is f32[3] but the graph declares f32[2]"},
  };
  for (const Case& c : cases) {
    auto out = Interpret(g, c.inputs);
    ASSERT_FALSE(out.ok()) << c.needle;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find(c.needle), std::string::npos) << out.status();
  }
  auto out = Interpret(g, {{"x", ok}, {"y", ok}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{2, 4}));
}

TEST(InterpreterValidation, OutputsConstantsAndSharedValues) {
  // Outputs in graph order; a node output twice, an input output directly, a constant operand.
  Graph g;
  Node* x = *g.AddInput("x", DType::kF32, {2});
  Node* c = *g.AddConstant("c", Make(DType::kF32, {2}, {10, 20}));
  Node* s = *g.AddNode(OpKind::kAdd, {x, c}, {}, "s");
  Node* d = *g.AddNode(OpKind::kMul, {s, s}, {}, "d");
  ASSERT_TRUE(g.AddOutput(d).ok());
  ASSERT_TRUE(g.AddOutput(s, "s_again").ok());
  ASSERT_TRUE(g.AddOutput(s, "s_third").ok());
  ASSERT_TRUE(g.AddOutput(x, "x_out").ok());
  ASSERT_TRUE(g.AddOutput(c, "c_out").ok());
  auto out = Interpret(g, {{"x", Make(DType::kF32, {2}, {1, 2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 5u);
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{121, 484}));
  EXPECT_EQ(Values((*out)[1]), (std::vector<double>{11, 22}));
  EXPECT_EQ(Values((*out)[2]), (std::vector<double>{11, 22}));
  EXPECT_EQ(Values((*out)[3]), (std::vector<double>{1, 2}));
  EXPECT_EQ(Values((*out)[4]), (std::vector<double>{10, 20}));
}

TEST(InterpreterValidation, RandomInputsAreDeterministicNonZeroAndInRange) {
  Graph g;
  Node* logits = *g.AddInput("logits", DType::kBF16, {64, 7});
  Node* targets = *g.AddInput("targets", DType::kI64, {64});
  Node* table = *g.AddInput("table", DType::kF32, {5, 3});
  Node* idx = *g.AddInput("idx", DType::kI32, {100});
  Node* flag = *g.AddInput("flag", DType::kBool, {1000});
  Node* other = *g.AddInput("other", DType::kI32, {1000});
  ASSERT_TRUE(g.AddOutput(*g.AddNode(OpKind::kCrossEntropy, {logits, targets})).ok());
  ASSERT_TRUE(g.AddOutput(*g.AddNode(OpKind::kGather, {table, idx})).ok());
  ASSERT_TRUE(g.AddOutput(flag).ok());
  ASSERT_TRUE(g.AddOutput(other).ok());
  auto in1 = RandomInputs(g, 1), again = RandomInputs(g, 1), in2 = RandomInputs(g, 2);
  ASSERT_EQ(in1.size(), 6u);
  for (const auto& [name, t] : in1) EXPECT_TRUE(t.BitwiseEqual(again.at(name))) << name;
  EXPECT_FALSE(in1.at("logits").BitwiseEqual(in2.at("logits")));
  for (double v : Values(in1.at("logits"))) {  // bf16 rounding may reach +-1, never 0
    EXPECT_GE(v, -1.0);
    EXPECT_LE(v, 1.0);
    EXPECT_NE(v, 0.0);
  }
  for (double v : Values(in1.at("table"))) {
    EXPECT_GT(v, -1.0);
    EXPECT_LT(v, 1.0);
    EXPECT_NE(v, 0.0);
  }
  for (int64_t t : IntValues(in1.at("targets"))) EXPECT_TRUE(t >= 0 && t < 7) << t;
  for (int64_t t : IntValues(in1.at("idx"))) EXPECT_TRUE(t >= 0 && t < 5) << t;
  std::set<int64_t> seen;
  for (int64_t t : IntValues(in1.at("other"))) seen.insert(t);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 15);
  double ones = 0;
  for (double b : Values(in1.at("flag"))) ones += b;
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);
  EXPECT_TRUE(Interpret(g, in1).ok());
}

}  // namespace
}  // namespace kiln
