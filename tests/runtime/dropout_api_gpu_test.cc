// Seeded dropout through the whole API (api/compiler.h Compile, runtime/executable.h; label
// gpu, skips without a device):
//  * fused == unfused: dropout_add_layernorm compiled as one kernel and with fusion fuel 0
//    (every op its own kernel) draws the same mask (h[i] != r[i] iff DropoutKeep); in f32 h is
//    identical byte for byte, in bf16 within GraphTolerance (unfused, the dropout's output is
//    stored in bf16 before the add, fused it stays f32: one more rounding); y within
//    GraphTolerance.
//  * seed and offset as graph inputs: one Executable runs with (seed, offset) = (1, 0), (1, 1),
//    (-3, 7), (2^40 + 5, 3); every run's mask equals the interpreter's and DropoutKeep's for the
//    u64 reading of the pair, h equals the interpreter's planned reference bit for bit, and the
//    kernel cache has compiled nothing after Compile().
// Inputs are drawn with 0.5 <= |v| < 1, so a kept x * s never vanishes next to r.
#include <cstdio>
#include <optional>
#include <random>

#include "absl/strings/str_format.h"
#include "api/compiler.h"
#include "api/reference.h"
#include "gtest/gtest.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/philox.h"
#include "ir/promote.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#include "runtime/jit/kernel_cache.h"

namespace kiln {
namespace {

// Float graph inputs with 0.5 <= |v| < 1 and a random sign, deterministic in `seed`.
Tensor Draw(DType dtype, const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> magnitude(0.5, 1.0);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetF64(i, (rng() & 1 ? 1 : -1) * magnitude(rng));
  return t;
}

absl::StatusOr<Compiled> CompileText(const std::string& text, std::optional<int64_t> fuel, KernelCache* cache) {
  auto graph = ParseGraph(text);
  if (!graph.ok()) return graph.status();
  CompileOptions options;
  auto arch = CurrentDeviceArch();
  if (!arch.ok()) return arch.status();
  options.arch = *arch;
  options.analyze.debug.fusion_fuel = fuel;
  options.cache = cache;
  return Compile(std::move(*graph), options);
}

int KernelSteps(const Program& p) {
  int n = 0;
  for (const Step& s : p.steps) n += s.kind == Step::Kind::kKernel;
  return n;
}

// Elements where h[i] != r[i] differ from DropoutKeep(seed, offset, i, p): the count.
int64_t MaskMismatches(const Tensor& h, const Tensor& r, uint64_t seed, uint64_t offset, double p) {
  int64_t bad = 0;
  for (int64_t i = 0; i < h.num_elements(); ++i) bad += (h.GetF64(i) != r.GetF64(i)) != DropoutKeep(seed, offset, i, p);
  return bad;
}

class DropoutApiGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  }
};

TEST_F(DropoutApiGpuTest, FusedAndUnfusedDrawTheSameMask) {
  const uint64_t seed = 1234, offset = 9;
  const double p = 0.1;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const std::string d = DTypeName(dtype);
    SCOPED_TRACE(d);
    const std::string text = absl::StrFormat(R"(graph dropout_add_layernorm(x: %s[333,1001], r: %s[333,1001],
                                                  w: %s[1001], b: %s[1001]) {
        xd: %s[333,1001] = dropout(x) {offset = %d, p = %g, seed = %d}
        h: %s[333,1001] = add(xd, r)
        y: %s[333,1001] = layer_norm(h, w, b) {axis = -1, eps = 1e-05}
        return y, h
      })", d, d, d, d, d, offset, p, seed, d, d);
    auto fused = CompileText(text, std::nullopt, nullptr);
    ASSERT_TRUE(fused.ok()) << fused.status();
    auto unfused = CompileText(text, 0, nullptr);
    ASSERT_TRUE(unfused.ok()) << unfused.status();
    EXPECT_EQ(KernelSteps(fused->lowered.program), 1);
    EXPECT_GE(KernelSteps(unfused->lowered.program), 3) << "dropout, add and the layer norm's pieces";

    std::vector<Tensor> in;
    uint64_t draw = 1;
    for (const Node* n : fused->analysis.graph->inputs()) in.push_back(Draw(n->dtype(), n->shape(), draw++));
    const Tensor& r = in[1];
    std::vector<std::vector<Tensor>> outs;
    for (const Compiled* c : {&*fused, &*unfused}) {
      auto exe = Executable::Load(c->lowered.program);
      ASSERT_TRUE(exe.ok()) << exe.status();
      auto got = (*exe)->RunOnHost(in);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), 2u);
      EXPECT_EQ(MaskMismatches((*got)[1], r, seed, offset, p), 0)
          << (c == &*fused ? "fused" : "unfused") << ": h's keep bits differ from DropoutKeep";
      outs.push_back(std::move(*got));
    }
    const Tensor &h_fused = outs[0][1], &h_unfused = outs[1][1];
    if (dtype == DType::kF32) {
      EXPECT_TRUE(h_fused.BitwiseEqual(h_unfused)) << "h: " << Compare(h_fused, h_unfused, Tolerance{}).ToString();
    } else {
      Comparison c = Compare(h_fused, h_unfused, GraphTolerance(dtype));
      EXPECT_TRUE(c.ok()) << "h: " << c.ToString();
    }
    Comparison y = Compare(outs[0][0], outs[1][0], GraphTolerance(dtype));
    EXPECT_TRUE(y.ok()) << "y: " << y.ToString();
    std::printf("  %s: fused 1 kernel, unfused %d kernels; h %s; y %s\n", d.c_str(),
                KernelSteps(unfused->lowered.program),
                h_fused.BitwiseEqual(h_unfused) ? "bitwise equal" : Compare(h_fused, h_unfused, GraphTolerance(dtype)).ToString().c_str(),
                y.ToString().c_str());
  }
}

TEST_F(DropoutApiGpuTest, SeedAndOffsetInputsChangeTheMaskWithoutRecompiling) {
  const double p = 0.5;
  const std::string text = R"(graph dropout_seeded(x: bf16[333,1001], r: bf16[333,1001], w: bf16[1001], b: bf16[1001],
                                                   seed: i64[], offset: i64[]) {
      xd: bf16[333,1001] = dropout(x, seed, offset) {p = 0.5}
      h: bf16[333,1001] = add(xd, r)
      y: bf16[333,1001] = layer_norm(h, w, b) {axis = -1, eps = 1e-05}
      return y, h
    })";
  KernelCache cache("");
  auto compiled = CompileText(text, std::nullopt, &cache);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const Graph& graph = *compiled->analysis.graph;
  EXPECT_EQ(KernelSteps(compiled->lowered.program), 1);
  auto exe = Executable::Load(compiled->lowered.program);
  ASSERT_TRUE(exe.ok()) << exe.status();
  const CacheStats before = cache.stats();
  EXPECT_GT(before.compiles, 0);

  std::map<std::string, Tensor> inputs;
  uint64_t draw = 1;
  for (const Node* n : graph.inputs()) {
    if (n->dtype() != DType::kI64) inputs.emplace(n->name(), Draw(n->dtype(), n->shape(), draw++));
  }
  const Tensor& r = inputs.at("r");
  std::vector<Tensor> previous;
  for (auto [seed, offset] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 0}, {1, 1}, {-3, 7}, {(int64_t{1} << 40) + 5, 3}}) {
    SCOPED_TRACE(absl::StrFormat("seed %d, offset %d", seed, offset));
    inputs["seed"] = Tensor(DType::kI64, {});
    inputs["seed"].SetI64(0, seed);
    inputs["offset"] = Tensor(DType::kI64, {});
    inputs["offset"].SetI64(0, offset);
    std::vector<Tensor> in;
    for (const Node* n : graph.inputs()) in.push_back(inputs.at(n->name()));
    auto got = (*exe)->RunOnHost(in);
    ASSERT_TRUE(got.ok()) << got.status();
    const Tensor& h = (*got)[1];
    // The contract, the interpreter on the whole graph, and the planned reference.
    EXPECT_EQ(MaskMismatches(h, r, static_cast<uint64_t>(seed), static_cast<uint64_t>(offset), p), 0);
    auto whole = Interpret(**PromoteTo32(graph), inputs);
    ASSERT_TRUE(whole.ok()) << whole.status();
    int64_t differ = 0;
    for (int64_t i = 0; i < h.num_elements(); ++i) {
      differ += (h.GetF64(i) != r.GetF64(i)) != ((*whole)[1].GetF64(i) != r.GetF64(i));
    }
    EXPECT_EQ(differ, 0) << "keep bits differ from the interpreter's";
    auto planned = InterpretAsPlanned(graph, compiled->analysis.plan, inputs);
    ASSERT_TRUE(planned.ok()) << planned.status();
    EXPECT_TRUE(h.BitwiseEqual((*planned)[1])) << "h: " << Compare(h, (*planned)[1], Tolerance{}).ToString();
    Comparison y = Compare((*got)[0], (*planned)[0], GraphTolerance(DType::kBF16));
    EXPECT_TRUE(y.ok()) << "y: " << y.ToString();
    if (!previous.empty()) {
      EXPECT_FALSE(h.BitwiseEqual(previous[1])) << "the mask did not change";
    }
    previous = std::move(*got);
  }
  const CacheStats after = cache.stats();
  EXPECT_EQ(after.compiles, before.compiles);
  EXPECT_EQ(after.memory_hits, before.memory_hits);
  EXPECT_EQ(after.disk_hits, before.disk_hits);
}

}  // namespace
}  // namespace kiln
