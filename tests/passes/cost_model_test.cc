// The cost model on the fixed h100 spec, against hand-computed numbers.
#include "passes/cost/cost_model.h"

#include "absl/strings/str_format.h"
#include "passes/fusion/layout_access.h"
#include "passes/fusion/reduce_placement.h"

#include "tests/passes/pass_test_util.h"

namespace kiln {
namespace {

using testing::WholeRegion;

TEST(DeviceSpecTest, NamedSpecsAndUnknownName) {
  ASSERT_TRUE(NamedDeviceSpec("h100").ok());
  EXPECT_EQ(NamedDeviceSpec("h100")->sm_count, 132);
  EXPECT_GT(NamedDeviceSpec("h200")->dram_bytes_per_us, NamedDeviceSpec("h100")->dram_bytes_per_us);
  auto bad = NamedDeviceSpec("a100");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("h100, h200"), std::string::npos);
}

// Every row of the op table has a work classification, and it agrees with the op's category.
TEST(CostModelTest, EveryOpOfTheTableHasAWorkClass) {
  for (const OpInfo& op : AllOps()) {
    OpWork w = OpWorkOf(op.kind);
    WorkClass want = WorkClass::kUnclassified;
    switch (op.category) {
      case OpCategory::kLeaf: case OpCategory::kLayout: case OpCategory::kBroadcast:
        want = WorkClass::kDataMovement;
        break;
      case OpCategory::kPointwise:
        want = w.transcendentals > 0 ? WorkClass::kTranscendental : WorkClass::kArithmetic;
        break;
      case OpCategory::kReduction: want = WorkClass::kReduction; break;
      case OpCategory::kComposite: want = WorkClass::kComposite; break;
      case OpCategory::kRandom: want = WorkClass::kRandom; break;
      case OpCategory::kMatmul: want = WorkClass::kMatmul; break;
      case OpCategory::kAttention: want = WorkClass::kAttention; break;
    }
    EXPECT_EQ(WorkClassName(w.work), std::string(WorkClassName(want))) << op.name;
    bool per_element = w.work != WorkClass::kDataMovement && w.work != WorkClass::kMatmul &&
                       w.work != WorkClass::kAttention;
    EXPECT_EQ(w.flops > 0, per_element) << op.name << ": " << w.flops << " flops per element";
  }
}

TEST(CostModelTest, WorkOfMatmulAttentionReductionAndActivation) {
  auto g = testing::Parse(R"(graph g(q: bf16[2,8,16,64], k: bf16[2,8,32,64], v: bf16[2,8,32,32], a: f32[64,128], b: f32[128,256]) {
    att: bf16[2,8,16,32] = attention(q, k, v) {causal = true, scale = 0.0}
    m: f32[64,256] = matmul(a, b)
    s: f32[64] = reduce_sum(a) {axes = [1], keep_dims = false}
    t: f32[64,128] = gelu_tanh(a)
    return att, m, s, t
  })");
  // 2 x batch*S x T x (D + E), halved for causal; one exp per score.
  NodeWork att = WorkOf(g->FindNode("att"));
  EXPECT_DOUBLE_EQ(att.flops, 2.0 * (2 * 8 * 16) * 32 * (64 + 32) / 2);
  EXPECT_DOUBLE_EQ(att.transcendentals, 2.0 * 8 * 16 * 32);
  EXPECT_DOUBLE_EQ(WorkOf(g->FindNode("m")).flops, 2.0 * 64 * 256 * 128);
  EXPECT_DOUBLE_EQ(WorkOf(g->FindNode("s")).flops, 64.0 * 128);  // per input element
  NodeWork t = WorkOf(g->FindNode("t"));
  EXPECT_DOUBLE_EQ(t.flops, 8.0 * 64 * 128);
  EXPECT_DOUBLE_EQ(t.transcendentals, 64.0 * 128);
}

// An attention region is priced as the tiled template runs it: q, k, v and the output moved
// once; the FLOPs of the tiles it computes (one 16-row m-tile of the 64-row query block, key
// tiles of 64 up to its last row when causal: one, padded past T = 32) at the attention rate;
// one launch. Its 16 blocks cannot fill the GPU: the longest block sets the time, at one
// SM's share of the rate. (Attention the template does not run never reaches a region:
// lower_attention rewrites it before fusion, and its matmuls and row kernel are priced as such.)
TEST(CostModelTest, AttentionIsPricedAsTheTiledTemplate) {
  auto g = testing::Parse(R"(graph g(q: bf16[2,8,16,64], k: bf16[2,8,32,64], v: bf16[2,8,32,32]) {
    att: bf16[2,8,16,32] = attention(q, k, v) {causal = true, scale = 0.0}
    return att
  })");
  Region r = WholeRegion(*g);
  ASSERT_EQ(r.kind, RegionKind::kAttention);
  RunTimeEstimate e = EstimateRunTime(r, H100Spec());
  const int64_t io = 2 * (2 * 8 * 16 * 64 + 2 * 8 * 32 * 64 + 2 * 8 * 32 * 32) + 2 * (2 * 8 * 16 * 32);  // bytes
  EXPECT_EQ(e.bytes_read + e.bytes_written, io);
  EXPECT_DOUBLE_EQ(e.flops, 2.0 * (2 * 8) * 16 * 64 * (64 + 32));
  const double block = 2.0 * 16 * 64 * (64 + 32);
  EXPECT_NEAR(e.compute_us, block / (H100Spec().attention_flops_per_us / H100Spec().sm_count), 1e-9);
  EXPECT_GT(e.compute_us, e.flops / H100Spec().attention_flops_per_us);
  EXPECT_DOUBLE_EQ(e.launch_us, H100Spec().launch_us);
}

TEST(CostModelTest, PointwiseAddIsBandwidthPlusLaunch) {
  auto g = testing::Parse(R"(graph g(a: f32[1024,1024], b: f32[1024,1024]) {
    c: f32[1024,1024] = add(a, b)
    return c
  })");
  RunTimeEstimate e = EstimateRunTime(WholeRegion(*g), H100Spec());
  EXPECT_EQ(e.bytes_read, 8 << 20);
  EXPECT_EQ(e.bytes_written, 4 << 20);
  EXPECT_DOUBLE_EQ(e.flops, 1 << 20);
  // 12 MiB at 3.0e6 B/us = 4.194304 us; compute 1 Mflop at 60e6 flop/us is far below it.
  EXPECT_NEAR(e.memory_us, 4.194304, 1e-9);
  EXPECT_NEAR(e.total_us, 4.194304 + 3.0, 1e-9);
}

TEST(CostModelTest, ScalarConstantsReadNothingAndBroadcastOperandsAreReadOnce) {
  auto g = testing::Parse(R"(graph g(x: bf16[256,512], b: bf16[512]) {
    h: bf16[] = constant() {data = [0.5]}
    t: bf16[256,512] = add(x, b)
    y: bf16[256,512] = mul(t, h)
    return y
  })");
  RunTimeEstimate e = EstimateRunTime(WholeRegion(*g), H100Spec());
  EXPECT_EQ(e.bytes_read, 256 * 512 * 2 + 512 * 2);
  EXPECT_EQ(e.bytes_written, 256 * 512 * 2);
}

TEST(CostModelTest, MatmulIsPricedAtTheMatmulRate) {
  auto g = testing::Parse(R"(graph g(a: bf16[4096,4096], b: bf16[4096,4096]) {
    c: bf16[4096,4096] = matmul(a, b)
    return c
  })");
  RunTimeEstimate e = EstimateRunTime(WholeRegion(*g), H100Spec());
  double flops = 2.0 * 4096 * 4096 * 4096;
  EXPECT_DOUBLE_EQ(e.flops, flops);
  EXPECT_NEAR(e.compute_us, flops / 798e6, 1e-6);
  EXPECT_GT(e.compute_us, e.memory_us);
}

TEST(CostModelTest, RowThatFitsIsOnePassStreamedSoftmaxIsTwo) {
  const char* kTemplate = R"(graph g(x: f32[4096,%d]) {
    m: f32[4096,1] = reduce_max(x) {axes = [1], keep_dims = true}
    d: f32[4096,%d] = sub(x, m)
    e: f32[4096,%d] = exp(d)
    s: f32[4096,1] = reduce_sum(e) {axes = [1], keep_dims = true}
    y: f32[4096,%d] = div(e, s)
    return y
  })";
  char text[1024];
  for (int n : {8192, 128256}) {
    std::snprintf(text, sizeof(text), kTemplate, n, n, n, n);
    auto g = testing::Parse(text);
    Region r = WholeRegion(*g);
    ASSERT_EQ(r.kind, RegionKind::kRowReduction);
    EXPECT_EQ(r.rows(), 4096);
    EXPECT_EQ(r.row_length(), n);
    RunTimeEstimate e = EstimateRunTime(r, H100Spec());
    // 8192 f32: 64 values per thread over 128 threads, one block per row. 128256 needs 256 per
    // thread at 512 (passes/cost/row_fit.h): streamed, a statistics pass (online max+sum) then
    // the output pass, or split over blocks that each keep a share on chip.
    const RowFit& fit = r.reduce->fit;
    EXPECT_EQ(e.row_on_chip, fit.on_chip);
    if (n == 8192) EXPECT_TRUE(e.row_on_chip && fit.split == 1);
    EXPECT_EQ(e.passes, fit.on_chip ? 1 : 2);
    EXPECT_EQ(e.bytes_read, int64_t{4096} * n * 4 * e.passes);
  }
}

// The plain kernel pays its index arithmetic: one element per thread, a 4-D permute's three
// divisions and three remainders per element (instruction-bound: more than the copy); vectors
// of 8 pay them once per vector (the copy bound).
TEST(CostModelTest, ScalarIndexArithmeticIsChargedVectorsAmortiseIt) {
  auto g = testing::Parse(R"(graph g(x: bf16[8,2048,32,128]) {
    y: bf16[8,32,2048,128] = transpose(x) {perm = [0, 2, 1, 3]}
    return y
  })");
  Region r = WholeRegion(*g);
  const RunTimeEstimate vector = EstimateRunTime(r, H100Spec());
  const double elements = 8.0 * 2048 * 32 * 128;
  EXPECT_NEAR(vector.index_ops, elements * 2 * 4 / 8, 1) << vector.ToString();
  EXPECT_GT(vector.memory_us, vector.compute_us);
  auto scalar_plan = std::make_shared<LayoutPlan>(*r.layout);
  scalar_plan->plain_vector = 1;
  r.layout = scalar_plan;
  const RunTimeEstimate scalar = EstimateRunTime(r, H100Spec());
  EXPECT_EQ(scalar.index_ops, elements * 6) << scalar.ToString();
  EXPECT_GT(scalar.compute_us, 2 * scalar.memory_us) << scalar.ToString();
  EXPECT_NEAR(scalar.total_us, 198.3, 0.15 * 198.3) << "measured on the H100 (bench/zoo.py)";
}

// Columns of an odd count of bf16: rows start off 32-byte boundaries, the vector is still 8
// (ragged: shifted into place), and a warp's segment of a row (lanes x 16 bytes) straddles
// (W + 30) / 32 sectors on average against W / 32; an even count is aligned.
TEST(CostModelTest, UnalignedColumnRowsPayTheSectorsTheyStraddle) {
  for (int64_t columns : {50257, 50256}) {
    auto g = testing::Parse(absl::StrFormat(R"(graph g(x: bf16[512,%d]) {
      y: bf16[%d] = reduce_sum(x) {axes = [0], keep_dims = false}
      return y
    })", columns, columns));
    Region r = WholeRegion(*g);
    ASSERT_EQ(r.kind, RegionKind::kColumnReduction);
    const RunTimeEstimate e = EstimateRunTime(r, H100Spec());
    const double input = 512.0 * columns * 2;
    if (columns % 2 == 1) {
      const RowFit& fit = r.reduce->fit;
      ASSERT_EQ(fit.vector, 8);
      const double segment = std::min(fit.lanes, 32) * 16.0;
      EXPECT_NEAR(e.wasted_bytes, input * ((segment + 30) / segment - 1), 0.01 * input) << e.ToString();
    } else {
      EXPECT_EQ(e.wasted_bytes, 0) << e.ToString();
    }
  }
}

// A view costs nothing, except where its output is a graph output: then the caller's buffer is
// filled by a copy (one launch at the copy bandwidth).
TEST(CostModelTest, ViewsCostNothingUnlessReturned) {
  auto g = testing::Parse(R"(graph g(x: f32[4,8]) {
    r: f32[32] = reshape(x) {shape = [32]}
    e: f32[32] = exp(r)
    return e
  })");
  Node* r = nullptr;
  for (Node* n : g->PostOrder()) {
    if (n->name() == "r") r = n;
  }
  Region view = DescribeRegion(0, {r}, *g, g->PostOrder(), H100Spec());
  EXPECT_EQ(view.kind, RegionKind::kView);
  EXPECT_EQ(EstimateRunTime(view, H100Spec()).total_us, 0);
  auto returned = testing::Parse(R"(graph g(x: f32[1048576,1]) {
    r: f32[1048576] = reshape(x) {shape = [1048576]}
    return r
  })");
  Region copy = WholeRegion(*returned);
  EXPECT_EQ(copy.kind, RegionKind::kView);
  const RunTimeEstimate e = EstimateRunTime(copy, H100Spec());
  EXPECT_EQ(e.bytes_read, 4 << 20);
  EXPECT_EQ(e.bytes_written, 4 << 20);
  EXPECT_NEAR(e.total_us, 8.0 * (1 << 20) / 3.0e6 + H100Spec().launch_us, 1e-6);
}

}  // namespace
}  // namespace kiln
