// Verify(): one case per rule of ir/verifier.h. Each case starts from a valid graph, breaks
// one invariant (through the public API where it can be broken that way, through
// GraphTestPeer where only a buggy rewrite could break it) and checks that the message names
// the node and the rule.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/verifier.h"

namespace kiln {

// Reaches into Graph and Node (a friend, declared in ir/graph.h) to build malformed graphs.
class GraphTestPeer {
 public:
  static void SetOperands(Node* n, std::vector<Node*> operands) { n->operands_ = std::move(operands); }
  static std::vector<Node*>& Users(Node* n) { return n->users_; }
  static void SetName(Node* n, std::string name) { n->name_ = std::move(name); }
  static void SetShape(Node* n, Shape shape) { n->shape_ = std::move(shape); }
  static void SetAttrs(Node* n, Attributes attrs) { n->attrs_ = std::move(attrs); }
  static void SetValue(Node* n, std::optional<Tensor> value) { n->value_ = std::move(value); }
  static std::vector<Node*>& Inputs(Graph& g) { return g.inputs_; }
  static std::vector<Graph::Output>& Outputs(Graph& g) { return g.outputs_; }
};

namespace {

using Peer = GraphTestPeer;

// x, w -> t = add(x, w) -> s = softmax(t); c a constant; outputs s and c.
std::unique_ptr<Graph> Valid() {
  auto g = ParseGraph(R"(
    graph g(x: f32[2,3], w: f32[3]) {
      c: f32[2] = constant() {data = [1, 2]}
      t: f32[2,3] = add(x, w)
      s: f32[2,3] = softmax(t) {axis = -1}
      return s, c
    })");
  EXPECT_TRUE(g.ok()) << g.status();
  return std::move(*g);
}

void ExpectError(const Graph& g, const std::string& phrase) {
  absl::Status status = Verify(g);
  ASSERT_FALSE(status.ok()) << "expected an error containing: " << phrase;
  EXPECT_NE(status.message().find(phrase), std::string::npos) << status.message();
}

TEST(VerifierTest, ValidGraphPasses) {
  auto g = Valid();
  EXPECT_TRUE(Verify(*g).ok()) << Verify(*g);
  EXPECT_TRUE(Verify(*g->Clone()).ok());
}

TEST(VerifierTest, Cycle) {
  auto g = Valid();
  Node* t = g->FindNode("t");
  Node* u = *g->AddNode(OpKind::kNeg, {t}, {}, "u");
  g->ReplaceOperand(t, 0, u);  // t = add(u, w), u = neg(t)
  ExpectError(*g, "is on a cycle: ");
  ExpectError(*g, "t <- u <- t");
}

TEST(VerifierTest, ArityAgainstTheOpTable) {
  auto g = Valid();
  Node* t = g->FindNode("t");
  Node* w = g->FindNode("w");
  Peer::SetOperands(t, {g->FindNode("x")});
  Peer::Users(w).clear();
  ExpectError(*g, "node \"t\" (add): has 1 operands; the op table allows exactly 2");
}

TEST(VerifierTest, AttributesAgainstTheSchema) {
  auto g = Valid();
  Peer::SetAttrs(g->FindNode("s"), Attributes{{"axis", std::string("last")}});
  ExpectError(*g, "node \"s\" (softmax): softmax attribute \"axis\" must be int");
  Peer::SetAttrs(g->FindNode("s"), Attributes{{"axis", int64_t{-1}}, {"eps", 1.0}});
  ExpectError(*g, "softmax has no attribute \"eps\"");
}

TEST(VerifierTest, AttributeDefaultsFilledIn) {
  auto g = Valid();
  Peer::SetAttrs(g->FindNode("s"), Attributes{});
  ExpectError(*g, "node \"s\" (softmax): attribute \"axis\" is missing");
}

TEST(VerifierTest, RecordedTypeEqualsInferred) {
  auto g = Valid();
  Peer::SetShape(g->FindNode("t"), {6});
  ExpectError(*g, "node \"t\" (add): is recorded as f32[6] but add infers f32[2,3]");
}

TEST(VerifierTest, ReinferenceFailsAfterABadOperandSwap) {
  auto g = Valid();
  Node* other = *g->AddInput("z", DType::kF32, {4});
  g->ReplaceOperand(g->FindNode("t"), 1, other);  // add(x: [2,3], z: [4])
  ExpectError(*g, "node \"t\" (add): add: operand 1 \"z\" f32[4]: shapes [2,3] and [4] do not broadcast");
}

TEST(VerifierTest, NamesUniqueAndValid) {
  auto g = Valid();
  Peer::SetName(g->FindNode("s"), "t");
  ExpectError(*g, "node \"t\" (softmax): its name is also used by node 3");
  auto h = Valid();
  Peer::SetName(h->FindNode("s"), "1s");
  ExpectError(*h, "node \"1s\" (softmax): invalid name");
}

TEST(VerifierTest, OperandsAreNodesOfThisGraph) {
  auto g = Valid();
  auto other = Valid();
  g->ReplaceOperand(g->FindNode("s"), 0, other->FindNode("t"));
  ExpectError(*g, "node \"s\" (softmax): operand 0 is not a live node of this graph");
}

TEST(VerifierTest, UseListsMatchOperandLists) {
  auto g = Valid();
  Peer::Users(g->FindNode("x")).clear();
  ExpectError(*g, "node \"t\" (add): uses node \"x\" (input), whose user list does not hold it");
  auto h = Valid();
  Peer::Users(h->FindNode("w")).push_back(h->FindNode("s"));
  ExpectError(*h, "node \"w\" (input): its user list holds node \"s\" (softmax), which does not use it");
  auto k = Valid();
  Peer::Users(k->FindNode("t")).push_back(k->FindNode("s"));
  ExpectError(*k, "its user list holds node \"s\" (softmax) twice");
}

TEST(VerifierTest, GraphInputsAreInputNodes) {
  auto g = Valid();
  Peer::Inputs(*g).push_back(g->FindNode("t"));
  ExpectError(*g, "node \"t\" (add): is graph input 2 but not an input node");
}

TEST(VerifierTest, EveryInputNodeIsAGraphInput) {
  auto g = Valid();
  Peer::Inputs(*g).pop_back();
  ExpectError(*g, "node \"w\" (input): is an input node but not a graph input");
}

TEST(VerifierTest, ConstantsHoldAMatchingValue) {
  auto g = Valid();
  Peer::SetValue(g->FindNode("c"), Tensor(DType::kF32, {3}));
  ExpectError(*g, "node \"c\" (constant): its value is f32[3] but the node is f32[2]");
  Peer::SetValue(g->FindNode("c"), std::nullopt);
  ExpectError(*g, "node \"c\" (constant): has no value");
  auto h = Valid();
  Peer::SetValue(h->FindNode("t"), Tensor(DType::kF32, {2, 3}));
  ExpectError(*h, "node \"t\" (add): holds a constant value but is not a constant");
}

TEST(VerifierTest, AtLeastOneOutput) {
  Graph g("empty");
  ASSERT_TRUE(g.AddInput("x", DType::kF32, {2}).ok());
  ExpectError(g, "graph empty has no outputs");
}

TEST(VerifierTest, OutputNamesUniqueAndValid) {
  auto g = Valid();
  Peer::Outputs(*g).push_back({"s", g->FindNode("t")});
  ExpectError(*g, "graph output name \"s\" is used twice");
  auto h = Valid();
  ASSERT_TRUE(h->AddOutput(h->FindNode("t"), "not a name").ok());
  ExpectError(*h, "graph output 2 has the invalid name \"not a name\"");
}

TEST(VerifierTest, OutputsAreNodesOfThisGraph) {
  auto g = Valid();
  auto other = Valid();
  ASSERT_TRUE(g->AddOutput(other->FindNode("t"), "foreign").ok());
  ExpectError(*g, "graph output \"foreign\" is not a live node of this graph");
}

}  // namespace
}  // namespace kiln
