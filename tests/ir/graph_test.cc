// The Graph builder API: node construction rejects operand shape/dtype mismatches with
// messages that name the operands and shapes; the rewrite helpers (FreshName,
// ReplaceAllUsesWith, RemoveDeadNodes, Clone) keep the graph consistent; PostOrder stays
// topological when a rewrite appends a replacement node after its users.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ir/base/status.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/printer.h"
#include "ir/tensor.h"
#include "ir/verifier.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

using Ints = std::vector<int64_t>;

// AddNode must fail with a message containing every phrase.
void ExpectRejected(const absl::StatusOr<Node*>& result, std::vector<std::string> phrases) {
  ASSERT_FALSE(result.ok()) << "the builder accepted " << (*result)->ToString();
  for (const std::string& phrase : phrases) {
    EXPECT_TRUE(absl::StrContains(result.status().message(), phrase))
        << "missing \"" << phrase << "\" in: " << result.status().message();
  }
}

TEST(GraphTest, RejectsMismatchedOperands) {
  Graph g;
  Node* a34 = *g.AddInput("a", DType::kF32, {3, 4});
  Node* b5 = *g.AddInput("b", DType::kF32, {5});
  Node* h34 = *g.AddInput("h", DType::kBF16, {3, 4});
  Node* m23 = *g.AddInput("m", DType::kF32, {2, 3});
  Node* m45 = *g.AddInput("n", DType::kF32, {4, 5});
  Node* f3 = *g.AddInput("f", DType::kF32, {3});
  Node* i3 = *g.AddInput("i", DType::kI64, {3});
  Node* w4 = *g.AddInput("w", DType::kF32, {4});
  ExpectRejected(g.AddNode(OpKind::kAdd, {a34, b5}),
                 {"add: operand 1 \"b\" f32[5]", "shapes [3,4] and [5] do not broadcast"});
  ExpectRejected(g.AddNode(OpKind::kAdd, {a34, h34}), {"different dtype", "insert a cast"});
  ExpectRejected(g.AddNode(OpKind::kMatmul, {m23, m45}),
                 {"matmul: contraction mismatch", "has K = 3", "has K = 4"});
  ExpectRejected(g.AddNode(OpKind::kCrossEntropy, {m23, f3}), {"targets", "must be i32 or i64"});
  ExpectRejected(g.AddNode(OpKind::kCrossEntropy, {m23, i3}), {"must have shape [2]"});
  ExpectRejected(g.AddNode(OpKind::kLayerNorm, {m23, w4}),
                 {"layer_norm: operand 1 \"w\" f32[4]", "normalised shape [3]"});
  ExpectRejected(g.AddNode(OpKind::kReshape, {m23}, {{"shape", Ints{4, 2}}}),
                 {"cannot reshape \"m\" f32[2,3] (6 elements) to [4,2]"});
  ExpectRejected(g.AddNode(OpKind::kTranspose, {m23}, {{"perm", Ints{0, 0}}}),
                 {"perm [0,0] is not a permutation of 2 axes"});
  ExpectRejected(g.AddNode(OpKind::kSlice, {m23}, {{"starts", Ints{0}}, {"ends", Ints{1}}}),
                 {"one entry per axis (2)"});
  ExpectRejected(g.AddNode(OpKind::kSlice, {m23},
                           {{"starts", Ints{0, 0}}, {"ends", Ints{1, 1}}, {"steps", Ints{1, 0}}}),
                 {"step 0 on axis 1 must be > 0"});
  ExpectRejected(g.AddNode(OpKind::kConcat, {m23, a34}, {{"axis", int64_t{1}}}),
                 {"operand 1 \"a\" f32[3,4] does not match operand 0", "outside axis 1"});
  ExpectRejected(g.AddNode(OpKind::kGather, {m23, f3}), {"indices", "must be i32 or i64"});
  ExpectRejected(g.AddNode(OpKind::kSoftmax, {m23}, {{"axis", int64_t{2}}}),
                 {"axis 2 is out of range for rank 2"});
  ExpectRejected(g.AddNode(OpKind::kAdd, {a34}), {"add takes 2 operands, got 1"});
  ExpectRejected(g.AddNode(OpKind::kTranspose, {m23}), {"requires attribute \"perm\""});
}

TEST(GraphTest, ExtremeSliceStepsAndIntegerRoundingDoNotOverflow) {
  // Found by tests/fuzz (regressions/json_import/slice_huge_step.json): the extent was
  // rounded up as (e - b + step - 1) / step, which overflows for a step near INT64_MAX.
  Graph g;
  Node* m23 = *g.AddInput("m", DType::kF32, {2, 3});
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto y = g.AddNode(OpKind::kSlice, {m23}, {{"starts", Ints{0, 1}}, {"ends", Ints{2, 3}}, {"steps", Ints{kMax, kMax}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)->shape(), (Shape{1, 1}));
  // Found by probing ONNX Trilu with k = INT64_MAX: storing a double beyond an integer type's
  // range was an undefined cast; it saturates (NaN and infinities give 0).
  EXPECT_EQ(RoundToDType(1e19, DType::kI64), 9223372036854774784.0);
  EXPECT_EQ(RoundToDType(-1e19, DType::kI64), -9223372036854775808.0);
  EXPECT_EQ(RoundToDType(1e10, DType::kI32), 2147483647.0);
  EXPECT_EQ(RoundToDType(-2.7, DType::kI32), -2.0);
  EXPECT_EQ(RoundToDType(std::nan(""), DType::kI64), 0.0);
  Tensor t(DType::kI64, {1});
  t.SetF64(0, 1e30);
  EXPECT_EQ(t.GetI64(0), 9223372036854774784);
}

TEST(GraphTest, RejectsAttentionMismatches) {
  Graph g;
  Node* q = *g.AddInput("q", DType::kF16, {2, 8, 16});
  Node* k = *g.AddInput("k", DType::kF16, {2, 6, 16});
  Node* v = *g.AddInput("v", DType::kF16, {2, 6, 32});
  Node* k8 = *g.AddInput("k8", DType::kF16, {2, 6, 8});
  Node* v5 = *g.AddInput("v5", DType::kF16, {2, 5, 32});
  Node* kb = *g.AddInput("kb", DType::kF16, {3, 6, 16});
  Node* mask = *g.AddInput("mask", DType::kF16, {8, 7});
  Node* k32 = *g.AddInput("k32", DType::kF32, {2, 6, 16});
  ASSERT_TRUE(g.AddNode(OpKind::kAttention, {q, k, v}).ok());
  ExpectRejected(g.AddNode(OpKind::kAttention, {q, k8, v}), {"differ in head dim"});
  ExpectRejected(g.AddNode(OpKind::kAttention, {q, k, v5}), {"differ in key length"});
  ExpectRejected(g.AddNode(OpKind::kAttention, {q, kb, v}), {"same batch dims"});
  ExpectRejected(g.AddNode(OpKind::kAttention, {q, k, v, mask}),
                 {"mask \"mask\" f16[8,7] must broadcast to the score shape [2,8,6]"});
  ExpectRejected(g.AddNode(OpKind::kAttention, {q, k32, v}), {"different dtype"});
}

// An empty tensor's other dimensions still multiply into its strides: their product is held to
// 2^48 like an element count (a fuzzed ONNX constant of dims [0, 1468395526463145000, 83]
// overflowed RowMajorStrides when the importer folded a cast of it).
TEST(GraphTest, EmptyShapesWithHugeDimensionsAreErrors) {
  EXPECT_EQ(*CheckedNumElements({0, int64_t{1} << 40, 83}), 0);
  const absl::StatusOr<int64_t> huge = CheckedNumElements({0, int64_t{1} << 50, 83});
  ASSERT_FALSE(huge.ok());
  EXPECT_TRUE(absl::StrContains(huge.status().message(), "nonzero dimensions whose product exceeds 2^48"))
      << huge.status();
  EXPECT_FALSE(CheckedNumElements({int64_t{1} << 30, int64_t{1} << 30}).ok());
  Graph g;
  const absl::StatusOr<Node*> c = g.AddConstant("c", Tensor(DType::kF32, {0, int64_t{1} << 50, 83}));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StrContains(c.status().message(), "constant \"c\"")) << c.status();
  EXPECT_TRUE(g.AddConstant("d", Tensor(DType::kF32, {0, 83})).ok());
}

TEST(GraphTest, RejectsDuplicateAndInvalidNames) {
  Graph g;
  ASSERT_TRUE(g.AddInput("x", DType::kF32, {2}).ok());
  auto dup = g.AddInput("x", DType::kF32, {2});
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(absl::StrContains(dup.status().message(), "duplicate name \"x\""));
  auto bad = g.AddNode(OpKind::kNeg, {g.FindNode("x")}, {}, "2y");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "invalid name \"2y\""));
}

TEST(GraphTest, FreshName) {
  Graph g;
  Node* x = *g.AddInput("x", DType::kF32, {2});
  EXPECT_EQ(g.FreshName("neg"), "neg");
  EXPECT_EQ((*g.AddNode(OpKind::kNeg, {x}))->name(), "neg");
  EXPECT_EQ(g.FreshName("neg"), "neg.1");
  EXPECT_EQ((*g.AddNode(OpKind::kNeg, {x}))->name(), "neg.1");
  EXPECT_EQ(g.FreshName("neg"), "neg.2");
  EXPECT_EQ(g.FreshName("x"), "x.1");
}

TEST(GraphTest, ReplaceAllUsesWithUpdatesUsersAndOutputs) {
  Graph g;
  Node* x = *g.AddInput("x", DType::kF32, {4});
  Node* a = *g.AddNode(OpKind::kExp, {x}, {}, "a");
  Node* b = *g.AddNode(OpKind::kMul, {a, a}, {}, "b");
  ASSERT_TRUE(g.AddOutput(a, "first").ok());
  ASSERT_TRUE(g.AddOutput(b).ok());
  Node* r = *g.AddNode(OpKind::kTanh, {x}, {}, "r");
  g.ReplaceAllUsesWith(a, r);
  EXPECT_EQ(b->operand(0), r);
  EXPECT_EQ(b->operand(1), r);
  EXPECT_TRUE(a->users().empty());
  EXPECT_EQ(r->users(), std::vector<Node*>{b});
  EXPECT_EQ(g.outputs()[0].node, r);
  EXPECT_EQ(g.outputs()[0].name, "first");
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

TEST(GraphTest, RemoveDeadNodesKeepsInputsAndLiveNodes) {
  Graph g;
  Node* x = *g.AddInput("x", DType::kF32, {4});
  Node* unused = *g.AddInput("unused", DType::kF32, {4});
  Node* a = *g.AddNode(OpKind::kExp, {x}, {}, "a");
  Node* dead = *g.AddNode(OpKind::kLog, {a}, {}, "dead");
  ASSERT_TRUE(g.AddNode(OpKind::kNeg, {dead}, {}, "dead2").ok());
  ASSERT_TRUE(g.AddNode(OpKind::kNeg, {unused}, {}, "dead3").ok());
  ASSERT_TRUE(g.AddOutput(a).ok());
  EXPECT_EQ(g.RemoveDeadNodes(), 3);
  EXPECT_EQ(g.num_nodes(), 3);
  EXPECT_EQ(g.FindNode("dead"), nullptr);
  EXPECT_NE(g.FindNode("unused"), nullptr);
  EXPECT_TRUE(a->users().empty());
  EXPECT_TRUE(unused->users().empty());
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
  EXPECT_EQ(g.RemoveDeadNodes(), 0);
}

// x -> a = neg(x) -> b = exp(a) -> c = tanh(b); then a is replaced by r = relu(x), created
// after b, so creation order (x, b, c, r) is no longer topological.
std::unique_ptr<Graph> Rewritten() {
  auto g = std::make_unique<Graph>("rw");
  Node* x = *g->AddInput("x", DType::kF32, {4});
  Node* a = *g->AddNode(OpKind::kNeg, {x}, {}, "a");
  Node* b = *g->AddNode(OpKind::kExp, {a}, {}, "b");
  Node* c = *g->AddNode(OpKind::kTanh, {b}, {}, "c");
  KILN_CHECK_OK(g->AddOutput(c));
  Node* r = *g->AddNode(OpKind::kRelu, {x}, {}, "r");
  g->ReplaceAllUsesWith(a, r);
  EXPECT_EQ(g->RemoveDeadNodes(), 1);
  return g;
}

TEST(GraphTest, PostOrderIsTopologicalAfterARewrite) {
  auto g = Rewritten();
  std::vector<Node*> order = g->PostOrder();
  ASSERT_EQ(order.size(), 4u);
  auto position = [&](const Node* n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  for (const Node* node : order) {
    for (const Node* operand : node->operands()) EXPECT_LT(position(operand), position(node));
  }
  std::vector<std::string> names;
  for (const Node* node : order) names.push_back(node->name());
  EXPECT_EQ(names, (std::vector<std::string>{"x", "r", "b", "c"}));
  EXPECT_TRUE(FileCheck(PrintGraph(*g), R"(
    CHECK: graph rw(x: f32[4]) {
    CHECK-NEXT: r: f32[4] = relu(x)
    CHECK-NEXT: b: f32[4] = exp(r)
    CHECK-NEXT: c: f32[4] = tanh(b)
    CHECK-NEXT: return c
  )"));
  EXPECT_TRUE(Verify(*g).ok()) << Verify(*g);
}

TEST(GraphTest, ClonePreservesPrintingAndIsIndependent) {
  auto g = Rewritten();
  auto copy = g->Clone();
  EXPECT_EQ(PrintGraph(*copy), PrintGraph(*g));
  EXPECT_TRUE(Verify(*copy).ok()) << Verify(*copy);
  for (const Node* node : copy->nodes()) {
    EXPECT_NE(g->FindNode(node->name()), node);
    EXPECT_EQ(g->FindNode(node->name())->id(), node->id());
  }
  // Editing the copy leaves the original alone.
  Node* extra = *copy->AddNode(OpKind::kNeg, {copy->FindNode("c")}, {}, "extra");
  ASSERT_TRUE(copy->AddOutput(extra).ok());
  EXPECT_EQ(g->FindNode("extra"), nullptr);
  EXPECT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->FindNode("c")->users().size(), 0u);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A rewrite can leave a dead user stored before its dead operand (here b, created before c,
// is pointed at c). Removing dead nodes must not touch a freed operand while detaching a user
// (issue 15: a heap-use-after-free under AddressSanitizer, silent in a release build).
TEST(GraphTest, RemoveDeadNodesWhenADeadOperandIsStoredAfterItsUser) {
  Graph g;
  Node* x = *g.AddInput("x", DType::kF32, Shape{4});
  Node* a = *g.AddNode(OpKind::kNeg, {x}, {}, "a");
  Node* b = *g.AddNode(OpKind::kExp, {a}, {}, "b");
  Node* c = *g.AddNode(OpKind::kAbs, {x}, {}, "c");
  Node* y = *g.AddNode(OpKind::kRelu, {x}, {}, "y");
  g.ReplaceOperand(b, 0, c);  // b (stored second) now reads c (stored third)
  ASSERT_TRUE(g.AddOutput(y).ok());
  EXPECT_EQ(g.RemoveDeadNodes(), 3);  // a, b, c
  EXPECT_EQ(g.num_nodes(), 2);
  EXPECT_EQ(g.FindNode("b"), nullptr);
  EXPECT_EQ(g.FindNode("c"), nullptr);
  // x's user list holds only live nodes.
  ASSERT_EQ(x->users().size(), 1u);
  EXPECT_EQ(x->users()[0], y);
}

}  // namespace
}  // namespace kiln
