// Linear layers on the GPU (label gpu; skips without a device): matmuls that share an input and
// run as one cuBLASLt call on joined weights (passes/horizontal_matmul.h), read back as slices
// by pointwise and attention regions, and the relu epilogue. Each graph is compiled for this
// GPU, run on random inputs, and compared with the interpreter evaluating the same plan
// (api/reference.h) at the graph tolerances of ir/compare.h.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "api/compiler.h"
#include "api/reference.h"
#include "gtest/gtest.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/promote.h"
#include "passes/fusion/ledger.h"
#include "passes/fusion/norm_matmul_plan.h"
#include "runtime/artifact.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#include "tests/runtime/linear_graphs.h"

namespace kiln {
namespace {

class LinearGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  }

  // Compiles `graph`, runs it, compares with the planned interpreter (and prints the distance
  // to the original graph in f32); returns the compiled result for further checks.
  // `adjust` may change the random inputs first; `force` names ledger rules whose legal merges
  // are taken whatever their price (KILN_FORCE_FUSE).
  std::optional<Compiled> CompileRunAndCompare(std::unique_ptr<Graph> graph, bool tune = false,
                                               const std::function<void(std::map<std::string, Tensor>&)>& adjust = {},
                                               const std::set<std::string>& force = {}) {
    const std::string name = graph->name();
    std::unique_ptr<Graph> original = graph->Clone();
    CompileOptions options;
    options.tune = tune;
    options.tune_afresh = tune;
    options.analyze.debug.forced_rules = force;
    auto arch = CurrentDeviceArch();
    EXPECT_TRUE(arch.ok()) << arch.status();
    if (!arch.ok()) return std::nullopt;
    options.arch = *arch;
    auto compiled = Compile(std::move(graph), options);
    EXPECT_TRUE(compiled.ok()) << name << ": " << compiled.status();
    if (!compiled.ok()) return std::nullopt;
    const Graph& g = *compiled->analysis.graph;
    std::map<std::string, Tensor> inputs = RandomInputs(g, 17);
    if (adjust) adjust(inputs);
    std::vector<Tensor> in;
    for (const Node* n : g.inputs()) in.push_back(inputs.at(n->name()));
    auto exe = Executable::Load(compiled->lowered.program);
    EXPECT_TRUE(exe.ok()) << exe.status();
    if (!exe.ok()) return std::nullopt;
    auto got = (*exe)->RunOnHost(in);
    EXPECT_TRUE(got.ok()) << got.status();
    auto want = InterpretAsPlanned(g, compiled->analysis.plan, inputs);
    EXPECT_TRUE(want.ok()) << want.status();
    auto whole = Interpret(**PromoteTo32(*original), inputs);
    EXPECT_TRUE(whole.ok()) << whole.status();
    if (!got.ok() || !want.ok() || !whole.ok()) return std::nullopt;
    for (size_t i = 0; i < got->size(); ++i) {
      Comparison c = Compare((*got)[i], (*want)[i], GraphTolerance((*want)[i].dtype()));
      EXPECT_TRUE(c.ok()) << name << " output " << i << ": " << c.ToString();
      Comparison f = Compare((*got)[i], (*whole)[i], GraphTolerance((*want)[i].dtype()));
      std::printf("  %s output %zu: vs planned %s; vs the unfused graph in f32: %s\n", name.c_str(), i,
                  c.ToString().c_str(), f.ToString().c_str());
    }
    // The artifact computes the same.
    auto reloaded = DeserializeProgram(SerializeProgram(compiled->lowered.program));
    EXPECT_TRUE(reloaded.ok()) << reloaded.status();
    if (reloaded.ok()) {
      auto exe2 = Executable::Load(std::move(*reloaded));
      EXPECT_TRUE(exe2.ok()) << exe2.status();
      if (exe2.ok()) {
        auto again = (*exe2)->RunOnHost(in);
        EXPECT_TRUE(again.ok()) << again.status();
        for (size_t i = 0; again.ok() && i < again->size(); ++i) {
          EXPECT_TRUE((*again)[i].BitwiseEqual((*got)[i])) << name << ": the artifact computes something else";
        }
      }
    }
    return std::move(*compiled);
  }
};

int MatmulSteps(const Compiled& c) {
  int n = 0;
  for (const Step& s : c.lowered.program.steps) n += s.kind == Step::Kind::kMatmul;
  return n;
}

bool Fused(const Compiled& c) {
  for (const auto& [pass, d] : c.analysis.plan.pass_decisions) {
    if (pass == "horizontal_matmul" && d.decision) return true;
  }
  return false;
}

// Slice offsets of 20 and 100 elements are not 16-byte multiples: the readers must not assume
// vector alignment of a slice's start.
TEST_F(LinearGpuTest, QkvLinearsReadAsSlicesByAPointwiseRegion) {
  for (auto [dtype, rows, n] : {std::tuple{DType::kBF16, 37, 24}, std::tuple{DType::kBF16, 64, 20},
                                std::tuple{DType::kF32, 5, 20}, std::tuple{DType::kF16, 1, 128}}) {
    SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " rows ", rows, " n ", n));
    auto c = CompileRunAndCompare(testing::QkvPointwise(dtype, rows, 96, n));
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(Fused(*c));
    EXPECT_EQ(MatmulSteps(*c), 1);
  }
}

TEST_F(LinearGpuTest, SwigluGateAndUpAsOneMatmul) {
  for (auto [dtype, rows, n] : {std::tuple{DType::kBF16, 33, 100}, std::tuple{DType::kBF16, 256, 512},
                                std::tuple{DType::kF32, 7, 64}}) {
    SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " rows ", rows, " n ", n));
    auto c = CompileRunAndCompare(testing::SwigluMlp(dtype, rows, 64, n));
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(Fused(*c));
    EXPECT_EQ(MatmulSteps(*c), 2);  // gate+up, down
  }
}

// Attention reads q, k and v as slices of one projection (head split folded into its indexing).
TEST_F(LinearGpuTest, QkvLinearsReadAsSlicesByAttention) {
  for (int64_t seq : {128, 77}) {
    SCOPED_TRACE(absl::StrCat("seq ", seq));
    auto c = CompileRunAndCompare(testing::QkvAttention(DType::kBF16, seq, 4));
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(Fused(*c));
    EXPECT_EQ(MatmulSteps(*c), 2);  // q+k+v, o
  }
}

// relu after the bias, as relu or maximum(t, 0): one cuBLASLt call with RELU_BIAS.
TEST_F(LinearGpuTest, ReluEpilogue) {
  for (bool relu_op : {true, false}) {
    for (DType dtype : {DType::kBF16, DType::kF32}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), relu_op ? " relu" : " maximum"));
      auto c = CompileRunAndCompare(testing::BiasRelu(dtype, 67, 96, 40, relu_op));
      ASSERT_TRUE(c.has_value());
      ASSERT_EQ(c->lowered.program.steps.size(), 1u) << c->lowered.program.ToString();
      EXPECT_TRUE(c->lowered.program.steps[0].matmul.spec.relu);
      EXPECT_TRUE(c->lowered.program.steps[0].matmul.spec.has_bias);
    }
  }
}

// rms_norm -> matmul as one norm_matmul kernel (templates/norm_matmul.cuh; the fold forced, as
// KILN_FORCE_FUSE=norm-matmul does, where the cost model declines it) on shapes it was not tuned on: token rows that fill no tile (1, 5 x 3, 7, 100, 200: several token tiles), K and N
// not multiples of its tiles, batched x, W stored [N, K], and the epilogues.
TEST_F(LinearGpuTest, RmsNormFoldedIntoItsLinear) {
  struct Case {
    int64_t rows, k, n;
    testing::NormLinearOptions o;
  };
  const Case cases[] = {
      {1, 1024, 1024, {}},        {7, 200, 24, {}},
      {16, 1024, 1024, {.transposed = true}},   {64, 256, 512, {}},
      {100, 256, 264, {.bias = true}},          {100, 64, 64, {.residual = true}},
      {200, 64, 40, {.residual = true}}, {5, 128, 96, {.batch = {3}, .transposed = true, .bias = true, .gelu = true}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("rows ", c.rows, " k ", c.k, " n ", c.n, c.o.transposed ? " W[N,K]" : "",
                              c.o.bias ? " bias" : "", c.o.residual ? " residual" : "", c.o.gelu ? " gelu" : ""));
    auto compiled = CompileRunAndCompare(testing::NormLinear(c.rows, c.k, c.n, c.o), false, {}, {"norm-matmul"});
    ASSERT_TRUE(compiled.has_value());
    int folded = 0;
    for (const Region& r : compiled->analysis.plan.regions) folded += r.kind == RegionKind::kNormMatmul;
    EXPECT_EQ(folded, 1) << LedgerJsonLines(compiled->analysis.plan);
  }
}

// layer_norm -> matmul as one norm_matmul kernel (forced): x centred on its row mean by the template,
// the bias b a virtual token row. The rows of x are shifted by means of -20 to 60 (against a
// spread of order one), where a correction applied after the product would cancel: the tiles
// with 7 rows and the virtual one in 8, 8 rows that need a second group, several token tiles,
// W [N, K], the epilogues, and every tuning candidate on one decoding row of 4096 x 4096.
TEST_F(LinearGpuTest, LayerNormFoldedIntoItsLinear) {
  struct Case {
    int64_t rows, k, n;
    testing::NormLinearOptions o;
    bool tune = false;
  };
  const Case cases[] = {
      {1, 1024, 1024, {.layer = true}},
      {7, 200, 24, {.layer = true}},
      {8, 256, 512, {.transposed = true, .layer = true}},
      {100, 256, 264, {.bias = true, .layer = true}},
      {5, 128, 96, {.batch = {3}, .transposed = true, .bias = true, .gelu = true, .layer = true}},
      {1, 4096, 4096, {.layer = true}, /*tune=*/true},
  };
  auto shift_rows = [](std::map<std::string, Tensor>& in) {
    Tensor& x = in.at("x");
    const int64_t k = x.shape().back();
    for (int64_t i = 0; i < x.num_elements(); ++i) x.SetF64(i, x.GetF64(i) + 40.0 * ((i / k) % 3) - 20.0);
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("rows ", c.rows, " k ", c.k, " n ", c.n, c.o.transposed ? " W[N,K]" : "",
                              c.o.bias ? " bias" : "", c.o.gelu ? " gelu" : "", c.tune ? " tuned" : ""));
    auto compiled = CompileRunAndCompare(testing::NormLinear(c.rows, c.k, c.n, c.o), c.tune, shift_rows, {"norm-matmul"});
    ASSERT_TRUE(compiled.has_value());
    int folded = 0;
    for (const Region& r : compiled->analysis.plan.regions) {
      if (r.kind != RegionKind::kNormMatmul) continue;
      ++folded;
      ASSERT_NE(r.norm_matmul, nullptr);
      EXPECT_NE(r.norm_matmul->centred, nullptr);
      EXPECT_NE(r.norm_matmul->column_bias, nullptr);
    }
    EXPECT_EQ(folded, 1) << LedgerJsonLines(compiled->analysis.plan);
  }
}

// Every tuning candidate of the fold (forced; splits of K over blocks, warps along k, load depths) on
// shapes that use them: the tuner launches each on poisoned outputs and fails the compile if
// one differs from the default beyond the kernel tolerance, and the tuned kernel is checked
// against the interpreter here. One token row of a 4096 x 4096 weight (split over many
// blocks), 24 rows of 1000 -> 1032 (three token groups, a K that is not a multiple of 32, a
// partial feature tile), and W [N, K].
TEST_F(LinearGpuTest, RmsNormFoldEveryTuningCandidate) {
  struct Case {
    int64_t rows, k, n;
    testing::NormLinearOptions o;
  };
  const Case cases[] = {{1, 4096, 4096, {}}, {24, 1000, 1032, {.bias = true}}, {8, 2048, 512, {.transposed = true}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("rows ", c.rows, " k ", c.k, " n ", c.n, c.o.transposed ? " W[N,K]" : ""));
    auto compiled = CompileRunAndCompare(testing::NormLinear(c.rows, c.k, c.n, c.o), /*tune=*/true, {}, {"norm-matmul"});
    ASSERT_TRUE(compiled.has_value());
    int folded = 0;
    for (const Region& r : compiled->analysis.plan.regions) folded += r.kind == RegionKind::kNormMatmul;
    EXPECT_EQ(folded, 1) << LedgerJsonLines(compiled->analysis.plan);
    EXPECT_FALSE(compiled->tuning.regions.empty());
  }
}

}  // namespace
}  // namespace kiln
