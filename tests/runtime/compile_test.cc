// Compiling without a GPU (label nvrtc: NVRTC runs, nothing launches): every small example
// lowers to a Program that validates, with the steps its plan asks for; compiling is
// deterministic (the same graph gives the same artifact bytes); attention the template does
// not run is lowered before fusion; errors name the node.
#include <filesystem>

#include "api/compiler.h"
#include "ir/parser.h"
#include "passes/fusion/region_kind.h"
#include "gtest/gtest.h"
#include "runtime/artifact.h"
#include "runtime/jit/autotune.h"
#include "runtime/jit/kernel_cache.h"
#include "tests/runtime/linear_graphs.h"

namespace kiln {
namespace {

std::string CacheDir() {
  return (std::filesystem::temp_directory_path() / ("kiln_compile_test_" + std::to_string(getpid()))).string();
}

absl::StatusOr<Compiled> CompileSm90a(std::unique_ptr<Graph> graph, KernelCache& cache) {
  CompileOptions options;
  options.arch = "sm_90a";
  options.cache = &cache;
  return Compile(std::move(graph), options);
}

absl::StatusOr<Compiled> CompileFile(const std::string& path, KernelCache& cache) {
  auto graph = LoadGraph(path);
  if (!graph.ok()) return graph.status();
  return CompileSm90a(std::move(*graph), cache);
}

// The first of the lowered regions' notes that contains `text` ("" if none).
std::string NoteWith(const Compiled& compiled, const std::string& text) {
  for (const LoweredRegion& r : compiled.lowered.regions) {
    for (const std::string& note : r.notes) {
      if (note.find(text) != std::string::npos) return note;
    }
  }
  return "";
}

// Parses `text` and compiles it for sm_90a.
absl::StatusOr<Compiled> CompileText(const std::string& text, KernelCache& cache) {
  auto graph = ParseGraph(text);
  if (!graph.ok()) return graph.status();
  return CompileSm90a(std::move(*graph), cache);
}

int Count(const Program& p, Step::Kind kind) {
  return std::count_if(p.steps.begin(), p.steps.end(), [&](const Step& s) { return s.kind == kind; });
}

class CompileExampleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CompileExampleTest, LowersToAValidProgram) {
  KernelCache cache("");
  auto compiled = CompileFile(std::string(KILN_SOURCE_DIR) + "/examples/small/" + GetParam() + ".json", cache);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const Program& p = compiled->lowered.program;
  EXPECT_TRUE(p.Validate().ok()) << p.Validate();
  EXPECT_EQ(p.inputs.size(), compiled->analysis.graph->inputs().size());
  EXPECT_EQ(p.outputs.size(), compiled->analysis.graph->outputs().size());
  for (const Module& m : p.modules) EXPECT_FALSE(m.cubin.empty()) << m.name;
  // Every kernel region is one launch; a library region one cuBLASLt step.
  int kernels = 0, matmuls = 0;
  for (const Region& r : compiled->analysis.plan.regions) {
    kernels += KindInfo(r.kind).lowering == Lowering::kKernel;
    matmuls += KindInfo(r.kind).lowering == Lowering::kLibrary;
  }
  EXPECT_EQ(Count(p, Step::Kind::kKernel), kernels) << p.ToString();
  EXPECT_EQ(Count(p, Step::Kind::kMatmul), matmuls) << p.ToString();
  // Deterministic: a second compile (from the memory cache) gives the same artifact.
  auto again = CompileFile(std::string(KILN_SOURCE_DIR) + "/examples/small/" + GetParam() + ".json", cache);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(SerializeProgram(again->lowered.program), SerializeProgram(p));
  auto loaded = DeserializeProgram(SerializeProgram(p));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
}

std::vector<std::string> SmallExamples() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/examples/small")) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Linear layers with constant weights (an exported model's form): matmuls sharing an input
// lower to one cuBLASLt step on the joined weight, whose readers (a pointwise kernel, the
// attention kernel) compile with NVRTC; relu after the bias lowers to the RELU_BIAS flag.
TEST(CompileLinearTest, JoinedMatmulsAndReluLowerWithoutAGpu) {
  KernelCache cache("");
  CompileOptions options;
  options.arch = "sm_90a";
  options.cache = &cache;
  struct Case {
    std::unique_ptr<Graph> graph;
    int matmul_steps;
  };
  std::vector<Case> cases;
  cases.push_back({testing::QkvPointwise(DType::kBF16, 37, 96, 20), 1});
  cases.push_back({testing::SwigluMlp(DType::kBF16, 33, 64, 100), 2});
  cases.push_back({testing::QkvAttention(DType::kBF16, 128, 4), 2});
  cases.push_back({testing::BiasRelu(DType::kBF16, 67, 96, 40, false), 1});
  for (Case& c : cases) {
    const std::string name = c.graph->name();
    SCOPED_TRACE(name);
    auto compiled = Compile(std::move(c.graph), options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    const Program& p = compiled->lowered.program;
    EXPECT_TRUE(p.Validate().ok()) << p.Validate();
    EXPECT_EQ(Count(p, Step::Kind::kMatmul), c.matmul_steps) << p.ToString();
    if (name == "bias_relu") {
      ASSERT_EQ(p.steps.size(), 1u) << p.ToString();
      EXPECT_TRUE(p.steps[0].matmul.spec.relu);
      EXPECT_TRUE(p.steps[0].matmul.spec.has_bias);
      auto loaded = DeserializeProgram(SerializeProgram(p));
      ASSERT_TRUE(loaded.ok()) << loaded.status();
      EXPECT_TRUE(loaded->steps[0].matmul.spec.relu);
    } else {
      bool fused = false;
      for (const auto& [pass, d] : compiled->analysis.plan.pass_decisions) fused |= d.decision.ok();
      EXPECT_TRUE(fused) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, CompileExampleTest, ::testing::ValuesIn(SmallExamples()),
                         [](const auto& info) { return info.param; });

// Attention the tiled template does not run (here a head dimension of 320) is rewritten
// before fusion: the plan, and so the ledger and the program, hold QK^T and PV as cuBLASLt
// calls and the masked softmax as a row kernel; no attention region reaches the lowering.
TEST(CompileTest, AttentionTheTemplateDoesNotRunIsLoweredBeforeFusion) {
  auto graph = ParseGraph(R"(graph g(q: bf16[1,2,8,320], k: bf16[1,2,8,320], v: bf16[1,2,8,320]) {
    a: bf16[1,2,8,320] = attention(q, k, v) {causal = true, scale = 0.0}
    return a
  })");
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_FALSE(AttentionTemplateCovers(*(*graph)->FindNode("a")));
  KernelCache cache("");
  CompileOptions options;
  options.arch = "sm_90a";
  options.cache = &cache;
  auto compiled = Compile(std::move(*graph), options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  bool lowered = false;
  for (const PassRecord& pass : compiled->analysis.passes) lowered |= pass.name == "lower_attention" && pass.changed;
  EXPECT_TRUE(lowered);
  for (const Region& r : compiled->analysis.plan.regions) EXPECT_NE(r.kind, RegionKind::kAttention);
  const Program& p = compiled->lowered.program;
  EXPECT_EQ(Count(p, Step::Kind::kMatmul), 2) << p.ToString();
  EXPECT_EQ(Count(p, Step::Kind::kKernel), 1) << p.ToString();  // scale, causal mask and softmax: one row kernel
}

// An LM head's cross-entropy backward (log_softmax recomputed, nll_loss's gradient as a where
// over an iota): its default row kernel keeps the 32000-wide rows in shared memory at 3 blocks
// of 512 threads per SM, and under that __launch_bounds__ minimum ptxas spilled (40 registers).
// A spilling default is built again without the minimum, and the ledger says so.
TEST(CompileTest, ASpillingDefaultIsBuiltWithoutItsBlocksPerSmMinimum) {
  KernelCache cache("");
  auto compiled = CompileText(R"(graph ceb(x: bf16[4096,32000], t: i64[4096], g: f32[], tw: f32[]) {
    lsm: bf16[4096,32000] = log_softmax(x) {axis = 1}
    t2: i64[4096,1] = reshape(t) {shape = [4096, 1]}
    cls: i64[32000] = iota() {shape = [32000], axis = 0, dtype = "i64"}
    hit: bool[4096,32000] = eq(t2, cls)
    ign: i64[] = constant() {data = [-100]}
    kept: bool[4096,1] = ne(t2, ign)
    h: bool[4096,32000] = logical_and(hit, kept)
    gw: f32[] = div(g, tw)
    ng: f32[] = neg(gw)
    ngb: bf16[] = cast(ng) {dtype = "bf16"}
    zero: bf16[] = constant() {data = [0]}
    go: bf16[4096,32000] = where(h, ngb, zero)
    gf: f32[4096,32000] = cast(go) {dtype = "f32"}
    s: f32[4096,1] = reduce_sum(gf) {axes = [1], keep_dims = true}
    lf: f32[4096,32000] = cast(lsm) {dtype = "f32"}
    e: f32[4096,32000] = exp(lf)
    es: f32[4096,32000] = mul(e, s)
    d: f32[4096,32000] = sub(gf, es)
    y: bf16[4096,32000] = cast(d) {dtype = "bf16"}
    return y
  })", cache);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const Program& p = compiled->lowered.program;
  ASSERT_EQ(p.modules.size(), 1u);
  EXPECT_EQ(p.modules[0].spill_bytes, 0) << p.modules[0].params;
  EXPECT_EQ(p.modules[0].params.find("min_blocks"), std::string::npos) << p.modules[0].params;
  EXPECT_NE(NoteWith(*compiled, "built without its blocks-per-SM minimum"), "");
}

// A kernel whose registers let fewer blocks reside than its price assumed says so: softmax over
// four rows of 1000000 f32, split over 66 blocks a row that wait for each other, takes 182
// registers (NVRTC 13, sm_90a), one 256-thread block per SM where the model counted two.
TEST(CompileTest, AKernelBelowItsPricedResidencySaysSo) {
  KernelCache cache("");
  auto compiled = CompileText(R"(graph g(x: f32[4,1000000]) {
    y: f32[4,1000000] = softmax(x) {axis = 1}
    return y
  })", cache);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::string residency = NoteWith(*compiled, "ptxas gave");
  // The note exactly when ptxas's registers leave fewer than two 256-thread blocks an SM.
  ASSERT_EQ(compiled->lowered.program.modules.size(), 1u);
  const int registers = compiled->lowered.program.modules[0].registers;
  ASSERT_GT(registers, 0);
  EXPECT_EQ(!residency.empty(), 65536 / (registers * 256) < 2) << registers << " registers: " << residency;
  // Its 15 cached vectors a thread live through the split's merge to the store pass; with a
  // guard on each of them ptxas took 182 registers (one block an SM, the split in 2 rounds).
  // row_reduce.cuh's SureIters drops the guards no share needs: 120.
  EXPECT_LE(registers, 128) << "the split softmax's cached vectors no longer fit two blocks an SM";
  if (!residency.empty()) {
    EXPECT_NE(residency.find("where the price assumed 2"), std::string::npos) << residency;
    EXPECT_NE(residency.find("run in 2 rounds of 132"), std::string::npos) << residency;
  }
  // A kernel at its priced residency has no such note.
  auto small = CompileFile(std::string(KILN_SOURCE_DIR) + "/examples/small/softmax.json", cache);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(NoteWith(*small, "ptxas gave"), "");
}

// `kiln tune`'s line for a region: each candidate's time, the model's price and what ptxas gave
// it (registers, and spills where there are any), the default and the choice marked.
TEST(TunedRegionTest, EachCandidateCarriesItsPriceAndItsRegisters) {
  TunedRegion tuned;
  tuned.candidates.resize(2);
  tuned.candidates[1].block_size = 512;
  tuned.us = {10.25, 9.5};
  tuned.predicted_us = {8.0, -1};
  tuned.registers = {64, 128};
  tuned.spill_bytes = {0, 24};
  tuned.chosen = 1;
  EXPECT_EQ(tuned.ToString(), absl::StrCat(tuned.candidates[0].ToString(), " 10.2 us (pred 8.0) [64 regs] (default) | ",
                                           tuned.candidates[1].ToString(), " 9.5 us [128 regs, 24 B spilled] <-"));
}

TEST(CompileTest, DiskCacheServesASecondProcess) {
  std::string dir = CacheDir();
  {
    KernelCache cache(dir);
    ASSERT_TRUE(CompileFile(std::string(KILN_SOURCE_DIR) + "/examples/small/softmax.json", cache).ok());
    EXPECT_EQ(cache.stats().compiles, 1);
  }
  KernelCache cache(dir);  // a fresh cache on the same directory: what a new process sees
  auto compiled = CompileFile(std::string(KILN_SOURCE_DIR) + "/examples/small/softmax.json", cache);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_EQ(cache.stats().compiles, 0);
  EXPECT_EQ(cache.stats().disk_hits, 1);
  std::filesystem::remove_all(dir);
}

TEST(CompileTest, IntegerMatmulIsRefusedByName) {
  auto graph = std::make_unique<Graph>("imm");
  Node* a = *graph->AddInput("a", DType::kI32, {4, 4});
  Node* b = *graph->AddInput("b", DType::kI32, {4, 4});
  Node* mm = *graph->AddNode(OpKind::kMatmul, {a, b}, {}, "int_product");
  ASSERT_TRUE(graph->AddOutput(mm).ok());
  KernelCache cache("");
  CompileOptions options;
  options.arch = "sm_90a";
  options.cache = &cache;
  auto compiled = Compile(std::move(graph), options);
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.status().message().find("int_product"), std::string::npos) << compiled.status();
}

}  // namespace
}  // namespace kiln

#include "api/reference.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/promote.h"

namespace kiln {
namespace {

// The reference a compiled graph is checked against rounds exactly where the plan stores:
// for a one-region graph it is the f32 evaluation of the whole graph; for the bf16 block it
// differs from it by boundary rounding only (well below 1.6e-2 of the output's magnitude).
TEST(PlannedReferenceTest, RoundsOnlyAtRegionBoundaries) {
  for (const std::string name : {"bias_gelu", "transformer_block"}) {
    auto graph = LoadGraph(std::string(KILN_SOURCE_DIR) + "/examples/small/" + name + ".json");
    ASSERT_TRUE(graph.ok());
    auto analysis = Analyze(std::move(*graph), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << analysis.status();
    const Graph& g = *analysis->graph;
    auto inputs = RandomInputs(g, 3);
    auto planned = InterpretAsPlanned(g, analysis->plan, inputs);
    ASSERT_TRUE(planned.ok()) << planned.status();
    auto whole = Interpret(**PromoteTo32(g), inputs);
    ASSERT_TRUE(whole.ok()) << whole.status();
    const Tensor &p = (*planned)[0], &w = (*whole)[0];
    if (name == "bias_gelu") {
      EXPECT_TRUE(p.BitwiseEqual(w));
      continue;
    }
    double scale = 0;
    for (int64_t i = 0; i < w.num_elements(); ++i) scale = std::max(scale, std::abs(w.GetF64(i)));
    Comparison c = Compare(p, w, Tolerance{0, 0});
    EXPECT_GT(c.max_abs, 0) << "the block's plan stores bf16 between regions";
    EXPECT_LT(c.max_abs, 1.6e-2 * scale) << c.ToString();
  }
}

}  // namespace
}  // namespace kiln

#include "ir/parser.h"

namespace kiln {
namespace {

// Dropout stores no mask: a plan with the forward and its backward (seed and offset given at
// run time as graph inputs) holds no buffer of the mask's element count besides the graph's
// own inputs and outputs, and no scratch.
TEST(DropoutPlanTest, NoBufferHoldsAMask) {
  KernelCache cache("");
  auto compiled = CompileText(R"(graph g(x: bf16[64,1024], r: bf16[64,1024], dy: bf16[64,1024], seed: i64[], offset: i64[]) {
    d: bf16[64,1024] = dropout(x, seed, offset) {offset = 0, p = 0.1, seed = 0}
    h: bf16[64,1024] = add(d, r)
    dx: bf16[64,1024] = dropout_grad(dy, seed, offset) {offset = 0, p = 0.1, seed = 0}
    return h, dx
  })", cache);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const Program& p = compiled->lowered.program;
  for (const Buffer& b : p.buffers) {
    if (b.kind == BufferKind::kInput || b.kind == BufferKind::kOutput) continue;
    EXPECT_NE(NumElements(b.shape), 64 * 1024) << b.name << " " << BufferKindName(b.kind) << " could hold a mask";
  }
  EXPECT_EQ(p.arena_bytes, 0) << p.ToString();
  EXPECT_EQ(p.persistent_bytes, 0) << p.ToString();
}

}  // namespace
}  // namespace kiln
