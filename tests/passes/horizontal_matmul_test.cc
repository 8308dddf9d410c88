// horizontal_matmul: each case states one property. Graphs are built in C++ (the weights are
// random constants); every rewrite is checked on the printed graph and by running the graph
// before and after the pass in the interpreter on the same random inputs.
#include "passes/horizontal_matmul.h"

#include <random>

#include "api/compiler.h"
#include "api/fusion_report.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "passes/fusion/ledger.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

// Builds graphs with random constant weights; every Add names its node.
class Builder {
 public:
  explicit Builder(DType dtype = DType::kF32) : g_(std::make_unique<Graph>("g")), dtype_(dtype) {}
  Node* Input(const std::string& name, Shape shape) { return *g_->AddInput(name, dtype_, std::move(shape)); }
  Node* Weight(const std::string& name, Shape shape) {
    Tensor t(dtype_, shape);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    for (int64_t i = 0; i < t.num_elements(); ++i) t.SetF64(i, u(rng_));
    return *g_->AddConstant(name, std::move(t));
  }
  Node* Op(const std::string& name, OpKind op, std::vector<Node*> operands, Attributes attrs = {}) {
    absl::StatusOr<Node*> n = g_->AddNode(op, std::move(operands), std::move(attrs), name);
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? *n : nullptr;
  }
  Node* T(const std::string& name, Node* x) { return Op(name, OpKind::kTranspose, {x}, {{"perm", std::vector<int64_t>{1, 0}}}); }
  std::unique_ptr<Graph> Return(std::vector<Node*> outputs) {
    for (Node* n : outputs) EXPECT_TRUE(g_->AddOutput(n).ok());
    return std::move(g_);
  }

 private:
  std::unique_ptr<Graph> g_;
  DType dtype_;
  std::mt19937 rng_{7};
};

struct Result {
  bool changed = false;
  std::vector<PassDecision> decisions;
  std::string printed;
};

// Runs the pass on `g`; checks that the graph computes what it computed before (the same
// products summed in the same order: equal up to the last bit's rounding of a zero bias).
Result RunAndCompare(Graph& g) {
  std::unique_ptr<Graph> before = g.Clone();
  HorizontalMatmul pass;
  Result r;
  r.changed = testing::RunPass(pass, g);
  r.decisions = pass.TakeDecisions();
  r.printed = PrintGraph(g);
  const std::map<std::string, Tensor> inputs = RandomInputs(*before, 11);
  auto want = Interpret(*before, inputs);
  auto got = Interpret(g, inputs);
  EXPECT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
  if (want.ok() && got.ok()) {
    for (size_t i = 0; i < want->size(); ++i) {
      Comparison c = Compare((*got)[i], (*want)[i], Tolerance{1e-6, 1e-6});
      EXPECT_TRUE(c.ok()) << "output " << i << ": " << c.ToString();
    }
  }
  return r;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The decision naming `node`, or null.
const PassDecision* DecisionOf(const Result& r, const std::string& node) {
  for (const PassDecision& d : r.decisions) {
    if (std::count(d.nodes.begin(), d.nodes.end(), node)) return &d;
  }
  return nullptr;
}

// Three Linear layers on one normalised input, each with its bias, read by pointwise work.
std::unique_ptr<Graph> Qkv(DType dtype = DType::kF32) {
  Builder b(dtype);
  Node* x = b.Input("x", {2, 8, 32});
  Node* h = b.Op("h", OpKind::kTanh, {x});
  std::vector<Node*> y;
  for (const char* p : {"q", "k", "v"}) {
    Node* mm = b.Op(std::string(p) + "_mm", OpKind::kMatmul, {h, b.Weight(std::string("w_") + p, {32, 16})});
    y.push_back(b.Op(p, OpKind::kAdd, {mm, b.Weight(std::string("b_") + p, {16})}));
  }
  Node* qk = b.Op("qk", OpKind::kMul, {y[0], y[1]});
  return b.Return({b.Op("out", OpKind::kAdd, {qk, y[2]})});
}

TEST(HorizontalMatmulTest, QkvLinearsBecomeOneMatmulOnJoinedWeightsAndBiases) {
  auto g = Qkv();
  Result r = RunAndCompare(*g);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Count(r.printed, "= matmul("), 1) << r.printed;
  EXPECT_EQ(Count(r.printed, "= slice("), 3) << r.printed;
  EXPECT_TRUE(FileCheck(r.printed, R"(
    CHECK: q_mm.hfuse.weight: f32[32,48] = constant()
    CHECK: q_mm.hfuse.matmul: f32[2,8,48] = matmul(h, q_mm.hfuse.weight)
    CHECK: q_mm.hfuse.bias: f32[48] = constant()
    CHECK: q_mm.hfuse.add: f32[2,8,48] = add(q_mm.hfuse.matmul, q_mm.hfuse.bias)
    CHECK: q: f32[2,8,16] = slice(q_mm.hfuse.add) {ends = [2, 8, 16], starts = [0, 0, 0]
    CHECK: k: f32[2,8,16] = slice(q_mm.hfuse.add) {ends = [2, 8, 32], starts = [0, 0, 16]
    CHECK: v: f32[2,8,16] = slice(q_mm.hfuse.add) {ends = [2, 8, 48], starts = [0, 0, 32]
  )")) << r.printed;
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_TRUE(r.decisions[0].decision);
  EXPECT_EQ(r.decisions[0].decision.rule(), "horizontal-matmul");
  EXPECT_EQ(r.decisions[0].nodes, (std::vector<std::string>{"q_mm", "k_mm", "v_mm"}));
  EXPECT_NE(r.decisions[0].decision.reason().find("one cuBLASLt call instead of 3"), std::string::npos)
      << r.decisions[0].decision.reason();
}

// SwiGLU: gate and up without biases, bf16; silu(gate) * up then reads two slices.
TEST(HorizontalMatmulTest, SwigluGateAndUpBecomeOneMatmul) {
  Builder b(DType::kBF16);
  Node* x = b.Input("x", {16, 64});
  Node* gate = b.Op("gate", OpKind::kMatmul, {x, b.Weight("w_gate", {64, 96})});
  Node* up = b.Op("up", OpKind::kMatmul, {x, b.Weight("w_up", {64, 96})});
  Node* act = b.Op("act", OpKind::kMul, {b.Op("s", OpKind::kSilu, {gate}), up});
  auto g = b.Return({b.Op("down", OpKind::kMatmul, {act, b.Weight("w_down", {96, 64})})});
  Result r = RunAndCompare(*g);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Count(r.printed, "= matmul("), 2) << r.printed;  // gate+up, down
  EXPECT_TRUE(FileCheck(r.printed, R"(
    CHECK: gate.hfuse.matmul: bf16[16,192] = matmul(x, gate.hfuse.weight)
    CHECK-NOT: bias
    CHECK: gate: bf16[16,96] = slice(gate.hfuse.matmul)
    CHECK: up: bf16[16,96] = slice(gate.hfuse.matmul)
  )")) << r.printed;
}

// torch's Linear keeps W as [N, K]: the W's stack along their rows under one transpose.
TEST(HorizontalMatmulTest, TransposedWeightsStackUnderOneTranspose) {
  Builder b;
  Node* x = b.Input("x", {8, 32});
  Node* a = b.Op("a", OpKind::kMatmul, {x, b.T("wa_t", b.Weight("wa", {24, 32}))});
  Node* c = b.Op("c", OpKind::kMatmul, {x, b.T("wc_t", b.Weight("wc", {8, 32}))});
  auto g = b.Return({b.Op("y", OpKind::kExp, {a}), b.Op("z", OpKind::kExp, {c})});
  Result r = RunAndCompare(*g);
  EXPECT_TRUE(r.changed);
  EXPECT_TRUE(FileCheck(r.printed, R"(
    CHECK: a.hfuse.weight: f32[32,32] = constant()
    CHECK: a.hfuse.transpose: f32[32,32] = transpose(a.hfuse.weight) {perm = [1, 0]}
    CHECK: a.hfuse.matmul: f32[8,32] = matmul(x, a.hfuse.transpose)
    CHECK: a: f32[8,24] = slice
    CHECK: c: f32[8,8] = slice
  )")) << r.printed;
}

// A branch without a bias gets zeros in the joined bias when another has one.
TEST(HorizontalMatmulTest, ABranchWithoutBiasGetsZeros) {
  Builder b;
  Node* x = b.Input("x", {4, 16});
  Node* p = b.Op("p", OpKind::kAdd, {b.Op("p_mm", OpKind::kMatmul, {x, b.Weight("wp", {16, 8})}), b.Weight("bp", {8})});
  Node* q = b.Op("q", OpKind::kMatmul, {x, b.Weight("wq", {16, 8})});
  auto g = b.Return({b.Op("y", OpKind::kMul, {p, q})});
  Result r = RunAndCompare(*g);
  EXPECT_TRUE(r.changed);
  EXPECT_TRUE(FileCheck(r.printed, R"(
    CHECK: p_mm.hfuse.bias: f32[16] = constant()
    CHECK: = add(p_mm.hfuse.matmul, p_mm.hfuse.bias)
  )")) << r.printed;
}

TEST(HorizontalMatmulTest, MatmulsOfDifferentInputsStayApart) {
  Builder b;
  Node* x = b.Input("x", {4, 16});
  Node* x2 = b.Input("x2", {4, 16});
  Node* p = b.Op("p", OpKind::kMatmul, {x, b.Weight("wp", {16, 8})});
  Node* q = b.Op("q", OpKind::kMatmul, {x2, b.Weight("wq", {16, 8})});
  auto g = b.Return({b.Op("y", OpKind::kMul, {p, q})});
  Result r = RunAndCompare(*g);
  EXPECT_FALSE(r.changed);
  EXPECT_TRUE(r.decisions.empty()) << "no two matmuls share an input: nothing to decide";
}

// Weights given at run time would have to be joined on every run: refused, and said so.
TEST(HorizontalMatmulTest, WeightInputsAreNotJoined) {
  Builder b;
  Node* x = b.Input("x", {4, 16});
  Node* p = b.Op("p", OpKind::kMatmul, {x, b.Input("wp", {16, 8})});
  Node* q = b.Op("q", OpKind::kMatmul, {x, b.Input("wq", {16, 8})});
  auto g = b.Return({b.Op("y", OpKind::kMul, {p, q})});
  Result r = RunAndCompare(*g);
  EXPECT_FALSE(r.changed);
  const PassDecision* d = DecisionOf(r, "p");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->decision);
  EXPECT_EQ(d->decision.rule(), "horizontal-weights");
  EXPECT_NE(d->decision.reason().find("weights are inputs: concatenation would copy them every run"),
            std::string::npos)
      << d->decision.reason();
  // A constant weight next to an input one has no partner left.
  Builder b2;
  Node* x2 = b2.Input("x", {4, 16});
  Node* p2 = b2.Op("p", OpKind::kMatmul, {x2, b2.Weight("wp", {16, 8})});
  Node* q2 = b2.Op("q", OpKind::kMatmul, {x2, b2.Input("wq", {16, 8})});
  auto g2 = b2.Return({b2.Op("y", OpKind::kMul, {p2, q2})});
  Result r2 = RunAndCompare(*g2);
  EXPECT_FALSE(r2.changed);
  ASSERT_NE(DecisionOf(r2, "p"), nullptr);
  EXPECT_EQ(DecisionOf(r2, "p")->decision.rule(), "horizontal-alone");
}

// One cuBLASLt call has one transpose flag for B: a plain and a transposed weight stay apart.
// (K and the dtype need no check of their own: matmuls of one A share both.)
TEST(HorizontalMatmulTest, PlainAndTransposedWeightsStayApart) {
  Builder b;
  Node* x = b.Input("x", {4, 16});
  Node* p = b.Op("p", OpKind::kMatmul, {x, b.Weight("wp", {16, 8})});
  Node* q = b.Op("q", OpKind::kMatmul, {x, b.T("wq_t", b.Weight("wq", {8, 16}))});
  auto g = b.Return({b.Op("y", OpKind::kMul, {p, q})});
  Result r = RunAndCompare(*g);
  EXPECT_FALSE(r.changed);
  ASSERT_NE(DecisionOf(r, "q"), nullptr);
  EXPECT_EQ(DecisionOf(r, "q")->decision.rule(), "horizontal-transpose");
  EXPECT_NE(DecisionOf(r, "q")->decision.reason().find("one transpose flag"), std::string::npos);
}

// A relu after one branch's bias is a free cuBLASLt epilogue on its own call: that branch
// stays out; the other two still join.
TEST(HorizontalMatmulTest, ABranchWithAnActivationEpilogueStaysOut) {
  Builder b;
  Node* x = b.Input("x", {4, 16});
  Node* p = b.Op("p", OpKind::kMatmul, {x, b.Weight("wp", {16, 8})});
  Node* q = b.Op("q", OpKind::kMatmul, {x, b.Weight("wq", {16, 8})});
  Node* r_mm = b.Op("r_mm", OpKind::kMatmul, {x, b.Weight("wr", {16, 8})});
  Node* r_b = b.Op("r_b", OpKind::kAdd, {r_mm, b.Weight("br", {8})});
  Node* r = b.Op("r", OpKind::kRelu, {r_b});
  auto g = b.Return({b.Op("y", OpKind::kMul, {b.Op("pq", OpKind::kMul, {p, q}), r})});
  Result res = RunAndCompare(*g);
  EXPECT_TRUE(res.changed);
  EXPECT_EQ(Count(res.printed, "= matmul("), 2) << res.printed;
  const PassDecision* d = DecisionOf(res, "r_mm");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->decision.rule(), "horizontal-epilogue");
  EXPECT_NE(d->decision.reason().find("relu"), std::string::npos) << d->decision.reason();
  ASSERT_NE(DecisionOf(res, "p"), nullptr);
  EXPECT_TRUE(DecisionOf(res, "p")->decision);
}

// A residual add is cuBLASLt's C on the branch's own call.
TEST(HorizontalMatmulTest, ABranchWithAResidualStaysOut) {
  Builder b;
  Node* x = b.Input("x", {4, 16});
  Node* res = b.Input("res", {4, 8});
  Node* p = b.Op("p", OpKind::kMatmul, {x, b.Weight("wp", {16, 8})});
  Node* q = b.Op("q", OpKind::kMatmul, {x, b.Weight("wq", {16, 8})});
  auto g = b.Return({b.Op("y", OpKind::kAdd, {p, res}), b.Op("z", OpKind::kExp, {q})});
  Result r = RunAndCompare(*g);
  EXPECT_FALSE(r.changed);
  ASSERT_NE(DecisionOf(r, "p"), nullptr);
  EXPECT_EQ(DecisionOf(r, "p")->decision.rule(), "horizontal-epilogue");
}

// A slice read by a matmul, or returned, would be copied: such branches stay out.
TEST(HorizontalMatmulTest, SlicesThatWouldBeCopiedStayOut) {
  Builder b;
  Node* x = b.Input("x", {4, 16});
  Node* p = b.Op("p", OpKind::kMatmul, {x, b.Weight("wp", {16, 8})});
  Node* q = b.Op("q", OpKind::kMatmul, {x, b.Weight("wq", {16, 8})});
  Node* pr = b.Op("pr", OpKind::kReshape, {p}, {{"shape", std::vector<int64_t>{8, 4}}});
  Node* next = b.Op("next", OpKind::kMatmul, {pr, b.Weight("wn", {4, 4})});
  auto g = b.Return({next, q});
  Result r = RunAndCompare(*g);
  EXPECT_FALSE(r.changed);
  ASSERT_NE(DecisionOf(r, "p"), nullptr);
  EXPECT_EQ(DecisionOf(r, "p")->decision.rule(), "horizontal-slice-copy");
  EXPECT_NE(DecisionOf(r, "p")->decision.reason().find("matmul next reads pr"), std::string::npos);
  ASSERT_NE(DecisionOf(r, "q"), nullptr);
  EXPECT_NE(DecisionOf(r, "q")->decision.reason().find("graph output"), std::string::npos);
}

TEST(HorizontalMatmulTest, BatchedWeightsAreNotJoined) {
  Builder b;
  Node* x = b.Input("x", {2, 4, 16});
  Node* p = b.Op("p", OpKind::kMatmul, {x, b.Weight("wp", {2, 16, 8})});
  Node* q = b.Op("q", OpKind::kMatmul, {x, b.Weight("wq", {2, 16, 8})});
  auto g = b.Return({b.Op("y", OpKind::kMul, {p, q})});
  Result r = RunAndCompare(*g);
  EXPECT_FALSE(r.changed);
  ASSERT_NE(DecisionOf(r, "p"), nullptr);
  EXPECT_NE(DecisionOf(r, "p")->decision.reason().find("batched"), std::string::npos);
}

// Through the pipeline and fusion: the dump, the ledger and --why say what happened, and the
// gate/up pair becomes one matmul region (three matmul regions -> two).
TEST(HorizontalMatmulTest, DumpAndLedgerShowTheDecision) {
  auto make = [] {
    Builder b(DType::kBF16);
    Node* x = b.Input("x", {16, 64});
    Node* gate = b.Op("gate", OpKind::kMatmul, {x, b.Weight("w_gate", {64, 96})});
    Node* up = b.Op("up", OpKind::kMatmul, {x, b.Weight("w_up", {64, 96})});
    Node* act = b.Op("act", OpKind::kMul, {b.Op("s", OpKind::kSilu, {gate}), up});
    return b.Return({b.Op("down", OpKind::kMatmul, {act, b.Weight("w_down", {96, 64})})});
  };
  auto matmul_regions = [](const Analysis& a) {
    int n = 0;
    for (const Region& r : a.plan.regions) n += r.kind == RegionKind::kMatmul;
    return n;
  };
  AnalyzeOptions options;
  auto fused = Analyze(make(), options);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(matmul_regions(*fused), 2);
  EXPECT_EQ(fused->plan.num_kernels(), 3);  // gate+up, silu * up, down
  const std::string report = FusionReport(*fused);
  EXPECT_NE(report.find("horizontal_matmul: fused gate, up (horizontal-matmul): one cuBLASLt call instead of 2"),
            std::string::npos)
      << report;
  EXPECT_NE(LedgerJsonLines(fused->plan).find(R"("record":"pass_decision","pass":"horizontal_matmul","verdict":"fuse")"),
            std::string::npos);
  EXPECT_NE(FusionPlanJson(fused->plan).find(R"("pass_decisions":[{)"), std::string::npos);
  auto why = WhyReport(*fused, "gate");
  ASSERT_TRUE(why.ok()) << why.status();
  EXPECT_NE(why->find("horizontal_matmul: fused gate, up"), std::string::npos) << *why;

  options.debug.disabled_passes.insert("horizontal_matmul");
  auto unfused = Analyze(make(), options);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  EXPECT_EQ(matmul_regions(*unfused), 3);
  EXPECT_EQ(unfused->plan.num_kernels(), 4);
}

// Weights as graph inputs: the dump says why nothing was joined.
TEST(HorizontalMatmulTest, DumpSaysWhyWeightInputsAreNotJoined) {
  Builder b(DType::kBF16);
  Node* x = b.Input("x", {16, 64});
  Node* gate = b.Op("gate", OpKind::kMatmul, {x, b.Input("w_gate", {64, 96})});
  Node* up = b.Op("up", OpKind::kMatmul, {x, b.Input("w_up", {64, 96})});
  auto g = b.Return({b.Op("act", OpKind::kMul, {b.Op("s", OpKind::kSilu, {gate}), up})});
  auto a = Analyze(std::move(g), AnalyzeOptions{});
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string report = FusionReport(*a);
  EXPECT_NE(report.find("horizontal_matmul: refused gate (horizontal-weights): weights are inputs: concatenation "
                        "would copy them every run"),
            std::string::npos)
      << report;
}

// The Llama fixture (torch's ONNX export): gate and up join; the graph computes the same.
TEST(HorizontalMatmulTest, LlamaFixtureGateAndUpJoin) {
  auto g = LoadGraph(std::string(KILN_SOURCE_DIR) + "/tests/frontends/onnx_fixtures/llama_opset18/model.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  std::unique_ptr<Graph> original = (*g)->Clone();
  auto a = Analyze(std::move(*g), AnalyzeOptions{});
  ASSERT_TRUE(a.ok()) << a.status();
  bool fused = false;
  for (const auto& [pass, d] : a->plan.pass_decisions) fused |= d.decision && d.nodes.size() == 2;
  EXPECT_TRUE(fused) << FusionReport(*a);
  const auto inputs = RandomInputs(*original, 5);
  auto want = Interpret(*original, inputs);
  auto got = Interpret(*a->graph, inputs);
  ASSERT_TRUE(want.ok() && got.ok());
  for (size_t i = 0; i < want->size(); ++i) {
    Comparison c = Compare((*got)[i], (*want)[i], GraphTolerance((*want)[i].dtype()));
    EXPECT_TRUE(c.ok()) << c.ToString();
  }
}

}  // namespace
}  // namespace kiln
