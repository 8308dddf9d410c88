// The op-table walk for the CUDA emitter: every pointwise and random op of ir/ops.def has an
// expression emitter (a new op without one fails here), and literals are exact.
#include <cmath>
#include <cstring>
#include <memory>

#include "codegen/pointwise_expr.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {
namespace {

// A node of `op` over f32[4] inputs, with the attributes the op requires.
Node* MakeNode(Graph& g, OpKind op) {
  const OpInfo& info = GetOpInfo(op);
  Attributes attrs;
  if (op == OpKind::kCast) attrs.Set("dtype", std::string("f16"));
  if (op == OpKind::kIota) attrs.Set("shape", std::vector<int64_t>{4});
  if (op == OpKind::kDropout || op == OpKind::kDropoutGrad) attrs.Set("p", 0.5);
  std::vector<Node*> operands;
  const bool logical = op == OpKind::kLogicalAnd || op == OpKind::kLogicalOr || op == OpKind::kLogicalNot;
  for (int k = 0; k < info.min_arity; ++k) {
    DType dt = logical || (op == OpKind::kWhere && k == 0) ? DType::kBool : DType::kF32;
    operands.push_back(*g.AddInput(absl::StrCat("x", k), dt, {4}));
  }
  auto node = g.AddNode(op, operands, attrs);
  EXPECT_TRUE(node.ok()) << OpName(op) << ": " << node.status();
  return node.ok() ? *node : nullptr;
}

TEST(PointwiseExprTest, EveryPointwiseAndRandomOpHasAnEmitter) {
  int covered = 0;
  for (const OpInfo& info : AllOps()) {
    const bool want = info.category == OpCategory::kPointwise || info.category == OpCategory::kRandom;
    EXPECT_EQ(HasPointwiseEmitter(info.kind), want) << info.name;
    if (!want) continue;
    Graph g;
    Node* n = MakeNode(g, info.kind);
    ASSERT_NE(n, nullptr);
    std::vector<TypedExpr> operands;
    for (const Node* o : n->operands()) operands.push_back({o->name(), ComputeType(o->dtype())});
    auto e = EmitPointwiseExpr(*n, operands, "i");
    ASSERT_TRUE(e.ok()) << info.name << " has no CUDA emitter: " << e.status();
    EXPECT_EQ(e->type, ComputeType(n->dtype())) << info.name;
    EXPECT_FALSE(e->code.empty()) << info.name;
    ++covered;
  }
  EXPECT_GT(covered, 30);
}

TEST(PointwiseExprTest, DropoutUsesTheHostThresholdAndScale) {
  Graph g;
  Node* x = *g.AddInput("x", DType::kBF16, {8});
  Node* d = *g.AddNode(OpKind::kDropout, {x}, Attributes{{"p", 0.1}, {"seed", int64_t{1234}}, {"offset", int64_t{5}}});
  auto e = EmitPointwiseExpr(*d, {{"x", CType::kFloat}}, "idx");
  ASSERT_TRUE(e.ok()) << e.status();
  // threshold = floor(0.1 * 2^32) = 429496729; s = 1 / (1 - 0.1f) = 0x1.c71c72p+0f... exactly as float.
  EXPECT_NE(e->code.find("429496729u"), std::string::npos) << e->code;
  EXPECT_NE(e->code.find("1234ULL, 5ULL"), std::string::npos) << e->code;
  EXPECT_NE(e->code.find(FloatLiteral(1.0f / (1.0f - 0.1f))), std::string::npos) << e->code;
  // p == 1 drops all, p == 0 keeps all: no Philox call.
  Node* all = *g.AddNode(OpKind::kDropout, {x}, Attributes{{"p", 1.0}});
  EXPECT_EQ(EmitPointwiseExpr(*all, {{"x", CType::kFloat}}, "i")->code, "0.0f");
  Node* none = *g.AddNode(OpKind::kDropout, {x}, Attributes{{"p", 0.0}});
  EXPECT_EQ(EmitPointwiseExpr(*none, {{"x", CType::kFloat}}, "i")->code, "x");
}

TEST(PointwiseExprTest, FloatLiteralsAreExact) {
  for (float v : {1.0f, 0.1f, -3.5e-20f, 65504.0f, 1e30f, 0.044715f}) {
    std::string lit = FloatLiteral(v);
    ASSERT_EQ(lit.back(), 'f');
    float back = std::strtof(lit.substr(0, lit.size() - 1).c_str(), nullptr);
    EXPECT_EQ(std::memcmp(&back, &v, sizeof(float)), 0) << lit;
  }
  EXPECT_EQ(FloatLiteral(INFINITY), "kiln::kInfF()");
  EXPECT_EQ(FloatLiteral(-INFINITY), "kiln::kNegInfF()");
  EXPECT_EQ(FloatLiteral(NAN), "kiln::kNaNF()");
  EXPECT_EQ(FloatLiteral(-0.0f), "-0.0f");
  EXPECT_EQ(IntLiteral(INT64_MIN), "(-9223372036854775807LL - 1)");
}

// x / c for a one-element float constant c is x * (1 / c) in f32: exact for a power of two,
// within 1.5 ulp otherwise. A divisor that is not such a constant (an input, zero, a reciprocal
// that would be subnormal) keeps the division.
TEST(PointwiseExprTest, DivisionByAConstantIsAMultiplyByItsReciprocal) {
  Graph g;
  Node* x = *g.AddInput("x", DType::kF32, {4});
  auto divide = [&](Node* divisor) {
    Node* d = *g.AddNode(OpKind::kDiv, {x, divisor});
    auto e = EmitPointwiseExpr(*d, {{"x", CType::kFloat}, {"c", CType::kFloat}}, "i");
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? e->code : std::string();
  };
  auto scalar = [&](float v) {
    Tensor t(DType::kF32, {});
    t.SetF64(0, v);
    return *g.AddConstant(g.FreshName("c"), std::move(t));
  };
  EXPECT_EQ(divide(scalar(2.0f)), "(x * 0x1p-1f)");
  EXPECT_EQ(divide(scalar(std::sqrt(2.0f))), "(x * " + FloatLiteral(static_cast<float>(1.0 / std::sqrt(2.0f))) + ")");
  EXPECT_EQ(divide(scalar(0.0f)), "(x / c)");
  EXPECT_EQ(divide(scalar(1e-39f)), "(x / c)");  // 1 / c is not a finite f32
  EXPECT_EQ(divide(*g.AddInput("y", DType::kF32, {4})), "(x / c)");
}

TEST(PointwiseExprTest, IntegerArithmeticWrapsAndI32Wraps) {
  Graph g;
  Node* a = *g.AddInput("a", DType::kI32, {4});
  Node* b = *g.AddInput("b", DType::kI32, {4});
  Node* add = *g.AddNode(OpKind::kAdd, {a, b});
  auto e = EmitPointwiseExpr(*add, {{"a", CType::kInt}, {"b", CType::kInt}}, "i");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->code, "kiln::WrapI32(kiln::WrapAdd(a, b))");
}

}  // namespace
}  // namespace kiln
