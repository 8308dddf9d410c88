// Each fusion legality rule, shown by a small graph whose ledger must hold a refusal (or an
// acceptance) under that rule.
#include <algorithm>
#include "passes/fusion/legality.h"

#include "passes/cost/cost_model.h"
#include "passes/fusion/matmul_epilogue.h"
#include "passes/fusion/reduce_placement.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/fusion/priority_fusion.h"
#include "tests/passes/pass_test_util.h"

namespace kiln {
namespace {

struct Plan {
  std::unique_ptr<Graph> graph;
  FusionPlan plan;
};

Plan PlanText(const std::string& text) {
  Plan p;
  p.graph = testing::Parse(text);
  if (!p.graph) return p;
  auto plan = PlanFusion(*p.graph, H100Spec());
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (plan.ok()) p.plan = *plan;
  return p;
}

// The first record with `rule`, or null.
const FusionRecord* FindRule(const FusionPlan& plan, const std::string& rule) {
  for (const FusionRecord& r : plan.records) {
    if (r.rule == rule) return &r;
  }
  return nullptr;
}

void ExpectRefused(const std::string& text, const std::string& rule, const std::string& phrase) {
  Plan p = PlanText(text);
  const FusionRecord* r = nullptr;
  for (const FusionRecord& record : p.plan.records) {
    if (record.rule == rule && record.verdict != "fuse" && r == nullptr) r = &record;
  }
  ASSERT_NE(r, nullptr) << "no refusal under rule " << rule;
  EXPECT_TRUE(r->verdict == "refuse" || r->verdict == "cycle") << r->verdict;
  EXPECT_NE(r->reason.find(phrase), std::string::npos) << r->reason;
}

TEST(LegalityTest, MergeThatWouldCreateACycleIsRefused) {
  ExpectRefused(R"(graph g(x: f32[64,64], w: f32[64,64]) {
    a: f32[64,64] = exp(x)
    m: f32[64,64] = matmul(a, w)
    y: f32[64,64] = mul(a, m)
    return y
  })", "cycle", "would create a cycle");
}

TEST(LegalityTest, ComputeIntoAMatmulIsRefused) {
  ExpectRefused(R"(graph g(x: f32[64,64], w: f32[64,64]) {
    a: f32[64,64] = exp(x)
    m: f32[64,64] = matmul(a, w)
    return m
  })", "consumer-matmul", "consumer is a matmul");
}

TEST(LegalityTest, MatmulEpilogueTakesBiasButNotExp) {
  Plan p = PlanText(R"(graph g(x: bf16[256,256], w: bf16[256,256], b: bf16[256]) {
    m: bf16[256,256] = matmul(x, w)
    t: bf16[256,256] = add(m, b)
    y: bf16[256,256] = exp(t)
    return y
  })");
  const FusionRecord* ok = nullptr;
  for (const FusionRecord& r : p.plan.records) {
    if (r.event == "fuse" && r.rule == "matmul-epilogue") ok = &r;
  }
  ASSERT_NE(ok, nullptr) << "bias add was not folded into the matmul";
  const FusionRecord* refused = FindRule(p.plan, "matmul-epilogue");
  bool saw_exp_refusal = false;
  for (const FusionRecord& r : p.plan.records) {
    saw_exp_refusal |= r.rule == "matmul-epilogue" && r.verdict == "refuse" &&
                       r.reason.find("exp") != std::string::npos;
  }
  EXPECT_TRUE(refused != nullptr && saw_exp_refusal);
  EXPECT_EQ(p.plan.num_kernels(), 2);
}

TEST(LegalityTest, TwoMatmulsStayTwoCalls) {
  ExpectRefused(R"(graph g(x: f32[64,64], w: f32[64,64]) {
    a: f32[64,64] = matmul(x, w)
    b: f32[64,64] = matmul(a, w)
    return b
  })", "matmul-matmul", "two matmuls");
}

TEST(LegalityTest, AttentionAbsorbsLayoutButNotCompute) {
  Plan p = PlanText(R"(graph g(x: bf16[128,4,64], k: bf16[4,128,64], v: bf16[4,128,64]) {
    q: bf16[4,128,64] = transpose(x) {perm = [1, 0, 2]}
    a: bf16[4,128,64] = attention(q, k, v) {causal = true, scale = 0.0}
    y: bf16[4,128,64] = exp(a)
    return y
  })");
  const FusionRecord* layout = FindRule(p.plan, "attention-layout");
  ASSERT_NE(layout, nullptr);
  EXPECT_EQ(layout->verdict, "fuse");
  const FusionRecord* compute = FindRule(p.plan, "attention-compute");
  ASSERT_NE(compute, nullptr);
  EXPECT_EQ(compute->verdict, "refuse");
  EXPECT_EQ(p.plan.num_kernels(), 2);
}

TEST(LegalityTest, TwoAttentionsAreTwoKernels) {
  ExpectRefused(R"(graph g(q: bf16[4,128,64], k: bf16[4,128,64], v: bf16[4,128,64]) {
    a: bf16[4,128,64] = attention(q, k, v) {causal = true, scale = 0.0}
    b: bf16[4,128,64] = attention(a, k, v) {causal = false, scale = 0.0}
    return b
  })", "attention-attention", "two attentions are two kernels");
}

TEST(LegalityTest, TransposeOfTheLastTwoAxesFoldsIntoTheMatmul) {
  Plan p = PlanText(R"(graph g(x: bf16[256,512], w: bf16[256,512]) {
    t: bf16[512,256] = transpose(w) {perm = [1, 0]}
    m: bf16[256,256] = matmul(x, t)
    return m
  })");
  const FusionRecord* folded = FindRule(p.plan, "matmul-transpose");
  ASSERT_NE(folded, nullptr);
  EXPECT_EQ(folded->verdict, "fuse");
  EXPECT_NE(folded->reason.find("cuBLASLt's operand op"), std::string::npos) << folded->reason;
  EXPECT_EQ(p.plan.num_kernels(), 1);
}

// gelu_tanh after the bias add (decomposed before fusion, as decompose.cc writes it) is
// cuBLASLt's GELU_BIAS epilogue: one call writes the activation; an erf gelu is not.
TEST(LegalityTest, GeluTanhAfterTheBiasIsACublasEpilogue) {
  Plan p = PlanText(R"(graph g(x: bf16[256,256], w: bf16[256,512], b: bf16[512]) {
    m: bf16[256,512] = matmul(x, w)
    t: bf16[256,512] = add(m, b)
    y: bf16[256,512] = gelu_tanh(t)
    return y
  })");
  EXPECT_EQ(p.plan.num_kernels(), 1);
  bool saw = false;
  for (const FusionRecord& r : p.plan.records) {
    saw |= r.event == "fuse" && r.rule == "matmul-epilogue" && r.reason.find("gelu_tanh") != std::string::npos;
  }
  EXPECT_TRUE(saw) << "the gelu was not folded into the matmul";
  Plan erf = PlanText(R"(graph g(x: bf16[256,256], w: bf16[256,512], b: bf16[512]) {
    m: bf16[256,512] = matmul(x, w)
    t: bf16[256,512] = add(m, b)
    y: bf16[256,512] = gelu(t)
    return y
  })");
  EXPECT_EQ(erf.plan.num_kernels(), 2) << "cuBLASLt's GELU is the tanh form only";
}

// relu after the bias add is cuBLASLt's RELU_BIAS epilogue, written as relu or as
// maximum(x, 0) in either order (ONNX's Max and Clip(x, 0)); one call writes the activation.
TEST(LegalityTest, ReluAfterTheBiasIsACublasEpilogue) {
  for (const char* relu : {"relu(t)", "maximum(t, zero)", "maximum(zero, t)"}) {
    SCOPED_TRACE(relu);
    Plan p = PlanText(absl::StrCat(R"(graph g(x: bf16[256,256], w: bf16[256,512], b: bf16[512]) {
      zero: bf16[] = constant() {data = [0]}
      m: bf16[256,512] = matmul(x, w)
      t: bf16[256,512] = add(m, b)
      y: bf16[256,512] = )", relu, R"(
      return y
    })"));
    EXPECT_EQ(p.plan.num_kernels(), 1);
    ASSERT_EQ(p.plan.regions.size(), 1u);
    ASSERT_NE(p.plan.regions[0].matmul, nullptr);
    EXPECT_TRUE(p.plan.regions[0].matmul->relu);
    EXPECT_FALSE(p.plan.regions[0].matmul->gelu);
    EXPECT_EQ(p.plan.regions[0].matmul->bias->name(), "b");
    bool saw = false;
    for (const FusionRecord& r : p.plan.records) {
      saw |= r.event == "fuse" && r.rule == "matmul-epilogue" && r.reason.find("relu") != std::string::npos;
    }
    EXPECT_TRUE(saw) << "the relu was not folded into the matmul";
  }
}

// Not a relu: maximum with a non-zero constant, a maximum that broadcasts the matmul up, and a
// relu of the matmul's result that is also read elsewhere (cuBLASLt writes one tensor).
TEST(LegalityTest, LookalikesOfReluAreNotCublasEpilogues) {
  for (const char* y : {"maximum(t, half)", "maximum(t, zeros3)"}) {
    SCOPED_TRACE(y);
    const bool broadcast = std::string(y).find("zeros3") != std::string::npos;
    Plan p = PlanText(absl::StrCat(R"(graph g(x: bf16[256,256], w: bf16[256,512], b: bf16[512]) {
      half: bf16[] = constant() {data = [0.5]}
      zeros3: bf16[2,1,1] = constant() {data = [0, 0]}
      m: bf16[256,512] = matmul(x, w)
      t: bf16[256,512] = add(m, b)
      y: bf16[)", broadcast ? "2,256,512" : "256,512", "] = ", y, R"(
      return y
    })"));
    ASSERT_FALSE(p.plan.regions.empty());
    EXPECT_EQ(p.plan.num_kernels(), 2);
    for (const Region& r : p.plan.regions) {
      if (r.matmul) EXPECT_FALSE(r.matmul->relu);
    }
  }
  Plan read = PlanText(R"(graph g(x: bf16[256,256], w: bf16[256,256], b: bf16[256]) {
    m: bf16[256,256] = matmul(x, w)
    t: bf16[256,256] = add(m, b)
    y: bf16[256,256] = relu(t)
    return y, t
  })");
  EXPECT_EQ(read.plan.num_kernels(), 2);
  for (const Region& r : read.plan.regions) {
    if (r.matmul) EXPECT_FALSE(r.matmul->relu) << "t is a graph output: the relu cannot be the call's epilogue";
  }
}

// MatchRelu names the input and the nodes of each form.
TEST(LegalityTest, MatchReluFindsEachForm) {
  auto g = testing::Parse(R"(graph g(x: f32[4,8]) {
    zero: f32[] = constant() {data = [0]}
    a: f32[4,8] = relu(x)
    b: f32[4,8] = maximum(zero, x)
    c: f32[4,8] = maximum(x, x)
    d: f32[4,8] = minimum(x, zero)
    s: f32[4,8] = add(a, b)
    t: f32[4,8] = add(c, d)
    u: f32[4,8] = add(s, t)
    return u
  })");
  ASSERT_NE(g, nullptr);
  auto a = MatchRelu(g->FindNode("a"));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->x->name(), "x");
  auto b = MatchRelu(g->FindNode("b"));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->x->name(), "x");
  EXPECT_EQ(b->nodes.size(), 2u);  // the maximum and its zero
  EXPECT_FALSE(MatchRelu(g->FindNode("c")).has_value());
  EXPECT_FALSE(MatchRelu(g->FindNode("d")).has_value());
}

// cuBLASLt writes one tensor: a bias add whose input is also read elsewhere (here: a graph
// output) would make the matmul region write two.
TEST(LegalityTest, MatmulEpilogueWritesOneTensor) {
  ExpectRefused(R"(graph g(x: bf16[256,256], w: bf16[256,256], b: bf16[256]) {
    m: bf16[256,256] = matmul(x, w)
    t: bf16[256,256] = add(m, b)
    return t, m
  })", "matmul-epilogue", "cuBLASLt writes one tensor, the end of the epilogue; the region would write 2");
}

TEST(LegalityTest, MatmulEpilogueAddsOnlyATensorReadFromMemory) {
  ExpectRefused(R"(graph g(x: bf16[256,256], w: bf16[256,256]) {
    m: bf16[256,256] = matmul(x, w)
    t: bf16[256,256] = add(m, m)
    return t
  })", "matmul-epilogue", "an epilogue add must add a tensor read from memory");
}

// A pointwise loop runs over its largest output and evaluates every member where that output
// needs it: a slice of a larger producer fuses (exp runs on the 128 rows kept, not on 256).
TEST(LegalityTest, ASliceOfALargerProducerFusesIntoTheLoopOverTheOutput) {
  Plan p = PlanText(R"(graph g(x: f32[256,256]) {
    e: f32[256,256] = exp(x)
    s: f32[128,256] = slice(e) {ends = [128, 256], starts = [0, 0], steps = [1, 1]}
    y: f32[128,256] = neg(s)
    return y
  })");
  ASSERT_EQ(p.plan.num_kernels(), 1);
  EXPECT_EQ(p.plan.regions[0].space, (Shape{128, 256}));
}

TEST(LegalityTest, ReductionsOverDifferentRowsAreRefused) {
  ExpectRefused(R"(graph g(x: f32[64,128]) {
    s: f32[64] = reduce_sum(x) {axes = [1], keep_dims = false}
    e: f32[64] = exp(s)
    t: f32[8,8] = reshape(e) {shape = [8, 8]}
    u: f32[8] = reduce_max(t) {axes = [1], keep_dims = false}
    return u
  })", "reduce-space", "does not line up with the space [8 x 8]");
}

TEST(LegalityTest, TransposeInsideARowKernelIsRefused) {
  ExpectRefused(R"(graph g(x: f32[64,64]) {
    t: f32[64,64] = transpose(x) {perm = [1, 0]}
    s: f32[64] = reduce_sum(t) {axes = [1], keep_dims = false}
    return s
  })", "reduce-layout", "reorder the row");
}

// A transpose of a tensor in memory whose rows come in long contiguous runs is read through:
// batch norm's statistics as canonicalize writes them (x transposed to [C, N, H, W], the mean
// and the variance over the trailing axes) are one row kernel that reads x in runs of H x W,
// and the normalisation one pointwise kernel.
TEST(LegalityTest, ARowKernelReadsATensorInMemoryThroughATranspose) {
  Plan p = PlanText(R"(graph g(x: f16[8,64,28,28]) {
    t: f16[64,8,28,28] = transpose(x) {perm = [1, 0, 2, 3]}
    m: f16[64,1,1,1] = reduce_mean(t) {axes = [1, 2, 3], keep_dims = true}
    d: f16[64,8,28,28] = sub(t, m)
    q: f16[64,8,28,28] = mul(d, d)
    v: f16[64,1,1,1] = reduce_mean(q) {axes = [1, 2, 3], keep_dims = true}
    m4: f16[1,64,1,1] = reshape(m) {shape = [1, 64, 1, 1]}
    v4: f16[1,64,1,1] = reshape(v) {shape = [1, 64, 1, 1]}
    c: f16[8,64,28,28] = sub(x, m4)
    y: f16[8,64,28,28] = mul(c, v4)
    return y
  })");
  ASSERT_EQ(p.plan.num_kernels(), 2);
  const Region& row = p.plan.regions[0];
  ASSERT_EQ(row.kind, RegionKind::kRowReduction);
  ASSERT_TRUE(row.reduce);
  EXPECT_EQ(row.reduce->space.ToString(), "[64 x 6272]");
  const Node* x = p.graph->FindNode("x");
  EXPECT_EQ(row.reduce->Of(x).through, p.graph->FindNode("t"));
  EXPECT_EQ(p.plan.regions[1].kind, RegionKind::kPointwise);
}

// With the normalisation in the statistics' transposed space (canonicalize's
// SinkIntoTransposedSpace), batch norm is one row kernel: x read once through the transpose,
// and the result stored through the inverse one, in runs of H x W. A transpose whose store
// would scatter the row (runs of 4 elements) is refused.
TEST(LegalityTest, ARowKernelStoresItsResultThroughATranspose) {
  const char* text = R"(graph g(x: f16[8,64,%1$d,%1$d], w: f16[64,1,1,1]) {
    t: f16[64,8,%1$d,%1$d] = transpose(x) {perm = [1, 0, 2, 3]}
    m: f16[64,1,1,1] = reduce_mean(t) {axes = [1, 2, 3], keep_dims = true}
    d: f16[64,8,%1$d,%1$d] = sub(t, m)
    q: f16[64,8,%1$d,%1$d] = mul(d, d)
    v: f16[64,1,1,1] = reduce_mean(q) {axes = [1, 2, 3], keep_dims = true}
    r: f16[64,1,1,1] = rsqrt(v)
    n: f16[64,8,%1$d,%1$d] = mul(d, r)
    s: f16[64,8,%1$d,%1$d] = mul(n, w)
    y: f16[8,64,%1$d,%1$d] = transpose(s) {perm = [1, 0, 2, 3]}
    return y
  })";
  Plan p = PlanText(absl::StrFormat(text, 28));
  ASSERT_EQ(p.plan.num_kernels(), 1);
  const Region& row = p.plan.regions[0];
  ASSERT_EQ(row.kind, RegionKind::kRowReduction);
  const Node* y = p.graph->FindNode("y");
  EXPECT_EQ(row.reduce->Of(y).stored_through, y);
  EXPECT_EQ(row.reduce->Of(p.graph->FindNode("x")).through, p.graph->FindNode("t"));
  ASSERT_EQ(row.outputs.size(), 1u);
  EXPECT_EQ(row.outputs[0], y);
  Plan scattered = PlanText(absl::StrFormat(text, 2));
  EXPECT_GT(scattered.plan.num_kernels(), 1);

  // Both tensors divide the row index once per access (a quotient and a remainder by H x W):
  // once per 8-element vector in runs of 28 x 28, once per element in runs of 7 x 7 (at the
  // zoo's [32, 2048, 7, 7] the index arithmetic, not the bytes, sets the price).
  for (const int hw : {28, 7}) {
    Plan q = PlanText(absl::StrFormat(text, hw));
    ASSERT_EQ(q.plan.num_kernels(), 1) << hw;
    const Region& r = q.plan.regions[0];
    EXPECT_EQ(r.reduce->through_index_ops, 4) << hw;
    const int vector = hw == 28 ? 8 : 1;
    EXPECT_EQ(RowVector(r, *r.reduce), vector) << hw;
    const RunTimeEstimate e = EstimateRunTime(r, H100Spec());
    EXPECT_DOUBLE_EQ(e.index_ops, 4.0 * 64 * 8 * hw * hw / vector) << hw;
    EXPECT_GE(e.compute_us, e.index_ops / H100Spec().index_ops_per_us) << hw << ": " << e.ToString();
  }
}

// A reshape that only leaves the kernel keeps every element's linear index, so it is stored as
// its operand: group norm's [N, G, C/G, HW] result viewed back as [N, C, H, W] (its axes cross
// the space's [N*G | C/G*HW] groups) is still one row kernel. Read inside the kernel, such a
// reshape would need its own cut, and is refused.
TEST(LegalityTest, AReshapeAcrossTheGroupsIsStoredAsItsOperand) {
  Plan p = PlanText(R"(graph g(x: f32[2,8,4,64], w: f32[4,2,1]) {
    ln: f32[2,4,2,256] = reshape(x) {shape = [2, 4, 2, 256]}
    m: f32[2,4,1,1] = reduce_mean(ln) {axes = [2, 3], keep_dims = true}
    d: f32[2,4,2,256] = sub(ln, m)
    q: f32[2,4,2,256] = mul(d, d)
    v: f32[2,4,1,1] = reduce_mean(q) {axes = [2, 3], keep_dims = true}
    r: f32[2,4,1,1] = rsqrt(v)
    n: f32[2,4,2,256] = mul(d, r)
    s: f32[2,4,2,256] = mul(n, w)
    y: f32[2,8,16,16] = reshape(s) {shape = [2, 8, 16, 16]}
    return y
  })");
  ASSERT_EQ(p.plan.num_kernels(), 1);
  const Region& row = *std::find_if(p.plan.regions.begin(), p.plan.regions.end(),
                                    [](const Region& r) { return r.kind == RegionKind::kRowReduction; });
  const Node* y = p.graph->FindNode("y");
  ASSERT_TRUE(std::find(row.outputs.begin(), row.outputs.end(), y) != row.outputs.end());
  EXPECT_EQ(row.reduce->Of(y).like, p.graph->FindNode("s"));
  ExpectRefused(R"(graph g(x: f32[2,4,2,256]) {
    m: f32[2,4,1,1] = reduce_mean(x) {axes = [2, 3], keep_dims = true}
    n: f32[2,4,2,256] = sub(x, m)
    y: f32[2,8,16,16] = reshape(n) {shape = [2, 8, 16, 16]}
    e: f32[2,8,16,16] = exp(y)
    return e
  })", "reduce-space", "mixes axes of different groups");
}

// A reduction region has one space: a second reduction over other axes is another kernel.
TEST(LegalityTest, ReductionsOverOtherAxesOfAColumnAreRefused) {
  ExpectRefused(R"(graph g(x: f32[64,32,16]) {
    s: f32[32,16] = reduce_sum(x) {axes = [0], keep_dims = false}
    u: f32[16] = reduce_max(s) {axes = [0], keep_dims = false}
    return u
  })", "reduce-space", "does not reduce the reduced axes");
}

// A column region holds every level of its space: a softmax over a middle axis (max, sum of
// exponentials, division) is one column kernel, as a last-axis softmax is one row kernel.
TEST(LegalityTest, SoftmaxOverAMiddleAxisIsOneColumnKernel) {
  Plan p = PlanText(R"(graph g(x: f32[16,64,32]) {
    m: f32[16,1,32] = reduce_max(x) {axes = [1], keep_dims = true}
    d: f32[16,64,32] = sub(x, m)
    e: f32[16,64,32] = exp(d)
    s: f32[16,1,32] = reduce_sum(e) {axes = [1], keep_dims = true}
    y: f32[16,64,32] = div(e, s)
    return y
  })");
  ASSERT_EQ(p.plan.num_kernels(), 1);
  EXPECT_EQ(p.plan.regions[0].kind, RegionKind::kColumnReduction);
  EXPECT_EQ(p.plan.regions[0].reduce->levels, 1);  // the max and its sum of exponentials share a level
}

TEST(LegalityTest, SmallProducerReadElsewhereIsNotWrittenFromABroadcastLoop) {
  ExpectRefused(R"(graph g(x: f32[256,256], b: f32[256]) {
    e: f32[256] = exp(b)
    y: f32[256,256] = add(x, e)
    return y, e
  })", "broadcast-output", "broadcast loop");
}

// `a` feeds u (before the matmul m) and v (after it). Merging it into u leaves v reading it
// from memory, and merging it into v alone is a cycle (v reaches a through u and m);
// recomputing it in both is no cycle (every consumer holds a) and saves more than the merge,
// so the plan is {a, u}, m, {a, v}, and a is never written.
TEST(LegalityTest, CheapProducerWithTwoConsumersIsRecomputedInBoth) {
  Plan p = PlanText(R"(graph g(x: f32[1024,1024], w: f32[1024,1024]) {
    a: f32[1024,1024] = neg(x)
    u: f32[1024,1024] = add(a, w)
    m: f32[1024,1024] = matmul(u, w)
    v: f32[1024,1024] = mul(a, m)
    return v
  })");
  const FusionRecord* recompute = nullptr;
  for (const FusionRecord& r : p.plan.records) {
    if (r.event == "fuse" && r.mode == "recompute") recompute = &r;
  }
  ASSERT_NE(recompute, nullptr) << "a was not recomputed";
  EXPECT_EQ(recompute->producer_nodes, std::vector<std::string>{"a"});
  EXPECT_EQ(recompute->consumer_ids.size(), 2u);
  EXPECT_GT(recompute->saved_us(), 0);
  EXPECT_EQ(p.plan.num_kernels(), 3);
  const Node* a = p.graph->FindNode("a");
  int holders = 0;
  for (const Region& r : p.plan.regions) {
    holders += r.Contains(a);
    EXPECT_EQ(std::count(r.outputs.begin(), r.outputs.end(), a), 0) << "a is written by region " << r.id;
  }
  EXPECT_EQ(holders, 2);
}

TEST(LegalityTest, UnprofitableMergesAreRecordedWithTheirPrices) {
  // A tiny producer of a huge consumer through broadcast: merging reads nothing less.
  Plan p = PlanText(R"(graph g(x: f32[4096,4096]) {
    s: f32[4096] = reduce_sum(x) {axes = [1], keep_dims = false}
    t: f32[4096,4096] = transpose(x) {perm = [1, 0]}
    y: f32[4096,4096] = add(t, s)
    return y
  })");
  for (const FusionRecord& r : p.plan.records) {
    if (r.event == "stop" || r.verdict == "fuse") continue;
    EXPECT_FALSE(r.rule.empty());
    EXPECT_GT(r.unfused_us(), 0);
  }
}

// A producer read by `consumers` matmuls (regions it cannot join): its recompute is priced up
// to 16 consumers, and past that refused unpriced ("recompute-fanout"), so that a value read
// by thousands of regions is not re-described at every merge of one of them.
Plan FanOut(int consumers) {
  std::string text = "graph g(x: f32[64,64], w: f32[64,64]) {\n  a: f32[64,64] = neg(x)\n";
  std::string outs;
  for (int i = 0; i < consumers; ++i) {
    absl::StrAppend(&text, "  m", i, ": f32[64,64] = matmul(a, w)\n  t", i, ": f32[64,64] = tanh(m", i, ")\n");
    absl::StrAppend(&outs, i ? ", " : "", "t", i);
  }
  return PlanText(absl::StrCat(text, "  return ", outs, "\n}"));
}

TEST(LegalityTest, RecomputeIntoManyConsumersIsRefusedUnpriced) {
  Plan few = FanOut(3);
  EXPECT_EQ(FindRule(few.plan, "recompute-fanout"), nullptr);
  Plan many = FanOut(17);
  const FusionRecord* r = FindRule(many.plan, "recompute-fanout");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->verdict, "refuse");
  EXPECT_EQ(r->consumer_ids.size(), 17u);
  EXPECT_EQ(r->producer_nodes, std::vector<std::string>{"a"});
  EXPECT_NE(r->reason.find("at most 16"), std::string::npos) << r->reason;
  EXPECT_EQ(r->saved_us(), 0);
}

}  // namespace
}  // namespace kiln
