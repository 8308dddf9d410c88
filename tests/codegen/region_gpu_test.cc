// Every generated kernel against the reference interpreter, on the GPU (label gpu; skips
// without a device), through tests/codegen/region_check.h: each region's kernel is compiled
// with NVRTC, launched with poisoned outputs and compared element by element, twice.
// Graphs: examples/small/*.json, a shape sweep of the row kernels (N in {1, 3, 31, 32, 33,
// 127, 1000, 1024, 4095, 4097, 8192, 32768, 128256}, rows in {1, 7, 1024}: softmax and
// log_softmax f32, layer_norm bf16, add + rms_norm f16 with two outputs, cross-entropy bf16
// with some targets ignored), each row kernel with every KernelParams candidate at a few
// shapes, pointwise kernels at sizes that are not multiples of the vector width, and the tiled
// transpose kernel (templates/layout.cuh) under every candidate: 2-D to 6-D permutes, odd
// extents, one row or column, f32/f16/bf16, several reads and permutations, rotary embeddings;
// the vectorised plain kernel (codegen/emit_vector.cc) under every candidate; reductions over
// axes in several runs (batch norm's statistics) read through a transpose.
// KILN_SWEEP_MAX_ELEMENTS caps rows * N in the sweep (scripts/gpu-check lowers it under
// compute-sanitizer, whose slowdown makes the 10^8-element rows too slow).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "absl/strings/str_format.h"
#include "api/compiler.h"
#include "codegen/emit_kernel.h"
#include "codegen/kernel_params.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "tests/codegen/layout_cases.h"
#include "tests/codegen/region_check.h"

namespace kiln {
namespace {

using testing_gpu::CheckGraph;
using testing_gpu::CheckOptions;
using testing_gpu::Parse;

class RegionGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing_gpu::HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  }
};

TEST_F(RegionGpuTest, SmallExamples) {
  for (const auto& entry : std::filesystem::directory_iterator(testing_gpu::SourceDir() + "/examples/small")) {
    if (entry.path().extension() != ".json") continue;
    auto g = LoadGraph(entry.path().string());
    ASSERT_TRUE(g.ok()) << g.status();
    CheckGraph(entry.path().stem().string(), std::move(*g));
  }
}

// The row graphs of the sweep, for `rows` rows of `n`.
std::vector<std::pair<std::string, std::string>> RowGraphs(int64_t rows, int64_t n) {
  const std::string r = std::to_string(rows), c = std::to_string(n);
  return {
      {"softmax_f32", absl::StrFormat(R"(graph g(x: f32[%s,%s]) {
          y: f32[%s,%s] = softmax(x) {axis = 1}
          return y
        })", r, c, r, c)},
      {"log_softmax_f32", absl::StrFormat(R"(graph g(x: f32[%s,%s]) {
          y: f32[%s,%s] = log_softmax(x) {axis = 1}
          return y
        })", r, c, r, c)},
      {"layernorm_bf16", absl::StrFormat(R"(graph g(x: bf16[%s,%s], w: bf16[%s], b: bf16[%s]) {
          y: bf16[%s,%s] = layer_norm(x, w, b) {axis = 1, eps = 1e-05}
          return y
        })", r, c, c, c, r, c)},
      {"add_rmsnorm_f16", absl::StrFormat(R"(graph g(x: f16[%s,%s], res: f16[%s,%s], w: f16[%s]) {
          h: f16[%s,%s] = add(x, res)
          y: f16[%s,%s] = rms_norm(h, w) {axis = 1, eps = 1e-06}
          return y, h
        })", r, c, r, c, c, r, c, r, c)},
      {"xent_bf16", absl::StrFormat(R"(graph g(x: bf16[%s,%s], t: i64[%s]) {
          l: bf16[] = cross_entropy(x, t) {ignore_index = -100, reduction = "mean"}
          return l
        })", r, c, r)},
  };
}

// Cross-entropy targets: random columns, every third row ignored (-100), and, when there are
// enough rows, one target past the row (n) that matches no column.
std::map<std::string, Tensor> XentTargets(int64_t rows, int64_t n, uint64_t seed) {
  Tensor t(DType::kI64, {rows});
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < rows; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    int64_t col = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(n));
    if (i % 3 == 2) col = -100;
    if (rows >= 7 && i == 4) col = n;
    t.SetI64(i, col);
  }
  return {{"t", t}};
}

TEST_F(RegionGpuTest, RowKernelShapeSweep) {
  // KILN_SWEEP_MIN_N starts the sweep at a row length (to rerun its tail).
  const char* min_n = std::getenv("KILN_SWEEP_MIN_N");
  const char* max_elements = std::getenv("KILN_SWEEP_MAX_ELEMENTS");
  for (int64_t n : {1, 3, 31, 32, 33, 127, 1000, 1024, 4095, 4097, 8192, 32768, 128256}) {
    if (min_n != nullptr && n < std::atoll(min_n)) continue;
    for (int64_t rows : {1, 7, 1024}) {
      if (max_elements != nullptr && rows * n > std::atoll(max_elements)) continue;
      const std::map<std::string, Tensor> targets = XentTargets(rows, n, 7);
      for (const auto& [name, text] : RowGraphs(rows, n)) {
        CheckOptions options;
        if (name == "xent_bf16") options.inputs = &targets;
        CheckGraph(absl::StrFormat("%s_%dx%d", name, rows, n), Parse(text), options);
      }
    }
  }
}

// Every kernel region of `text` under every KernelParams candidate (on the h100 spec), each
// launched twice with poisoned outputs, labelled "label/rID params".
void CheckEveryCandidate(const std::string& label, const std::string& text, CheckOptions options = {}) {
  auto analysis = Analyze(Parse(text), AnalyzeOptions{});
  ASSERT_TRUE(analysis.ok()) << label << ": " << analysis.status();
  for (const Region& region : analysis->plan.regions) {
    if (!HasKernel(region.kind)) continue;
    for (const KernelParams& params : CandidateParams(region, H100Spec())) {
      options.params = params;
      testing_gpu::CheckRegion(absl::StrFormat("%s/r%d %s", label, region.id, params.ToString()), *analysis->graph,
                               region, options);
    }
  }
}

// Every row graph of RowGraphs over [rows, n] under every candidate (the cross entropy's
// targets drawn with `seed`).
void CheckRowGraphsUnderEveryCandidate(int64_t rows, int64_t n, int seed) {
  const std::map<std::string, Tensor> targets = XentTargets(rows, n, seed);
  for (const auto& [name, text] : RowGraphs(rows, n)) {
    CheckOptions options;
    if (name == "xent_bf16") options.inputs = &targets;
    CheckEveryCandidate(absl::StrFormat("%s_%dx%d", name, rows, n), text, options);
  }
}

// Every KernelParams candidate of each row region (block sizes, warp or block per row, cached
// or streamed) computes the same function.
TEST_F(RegionGpuTest, RowKernelsUnderEveryCandidateParams) {
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{7, 33}, {33, 1000}, {5, 4097}, {3, 40000}}) {
    CheckRowGraphsUnderEveryCandidate(rows, n, 3);
  }
}

// Many short rows: a thread owns a whole row (one or two lanes a row where each has at most four
// vectors; row_fit.cc's FewestShortRowLanes), odd widths with heads and tails included, under
// every candidate (four lanes and more among them).
TEST_F(RegionGpuTest, ManyShortRowsOfOneOrTwoLanes) {
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{34000, 3}, {34000, 8}, {34001, 16}, {40000, 20}}) {
    CheckRowGraphsUnderEveryCandidate(rows, n, 5);
  }
}

// Persistent launches (KernelParams::max_grid): more rows or vectors than the SMs' blocks, each
// block looping over several; the cross entropy's mean combines its rows' losses across blocks.
// Only the candidates with max_grid, on the h100 spec (132 SMs: grids of 1056 to 4224 blocks);
// run 7 of session 28 checked 22 such launches, with a second, half-size grid since removed.
TEST_F(RegionGpuTest, PersistentLaunches) {
  int checked = 0;
  auto check = [&](const std::string& label, const std::string& text, CheckOptions options) {
    auto analysis = Analyze(Parse(text), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << label << ": " << analysis.status();
    for (const Region& region : analysis->plan.regions) {
      if (!HasKernel(region.kind)) continue;
      for (const KernelParams& params : CandidateParams(region, H100Spec())) {
        if (params.max_grid == 0) continue;
        options.params = params;
        testing_gpu::CheckRegion(absl::StrFormat("%s/r%d %s", label, region.id, params.ToString()), *analysis->graph,
                                 region, options);
        ++checked;
      }
    }
  };
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{40001, 96}, {9000, 1000}}) {
    const std::map<std::string, Tensor> targets = XentTargets(rows, n, 5);
    for (const auto& [name, text] : RowGraphs(rows, n)) {
      CheckOptions options;
      if (name == "xent_bf16") options.inputs = &targets;
      check(absl::StrFormat("%s_%dx%d", name, rows, n), text, options);
    }
  }
  check("pointwise_3001x4099", R"(graph g(x: f16[3001,4099], y: f16[4099]) {
      z: f16[3001,4099] = mul(x, y)
      w: f16[3001,4099] = tanh(z)
      return w
    })", CheckOptions{});
  EXPECT_GE(checked, 8);
}

// Few long rows split over several blocks (a cooperative launch; the blocks of a row exchange
// their partial statistics through global memory), with lengths that are not multiples of the
// vector, and every split candidate.
TEST_F(RegionGpuTest, SplitRows) {
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 1048576}, {2, 1000003}, {9, 50257}, {16, 262144}}) {
    for (const auto& [name, text] : RowGraphs(rows, n)) {
      if (name == "xent_bf16") continue;  // the sweep covers it; its targets need the row count
      CheckEveryCandidate(absl::StrFormat("%s_%dx%d", name, rows, n), text);
    }
  }
}

// Reductions over axes in several runs whose innermost run is long (batch norm's statistics
// over N, H and W) are row kernels that read the input through a transpose (canonicalize.h,
// reduce_placement.h): runs of H x W that are whole vectors, runs that are not (33 x 33, 7 x 7,
// and 6 x 6 against f16's 8-wide vectors), a row split over blocks (3 channels of 32 x 224 x 224),
// and every candidate. Each is one row kernel: batch norm's normalisation is computed in the
// statistics' transposed space and stored through the inverse transpose (canonicalize's
// SinkIntoTransposedSpace, Placement::stored_through), with vectors that divide the runs.
// Also group norms whose result is viewed back across the groups.
TEST_F(RegionGpuTest, RowsReadThroughATranspose) {
  const char* kBatchNorm = R"(graph g(x: %s[%d,%d,%d,%d], w: %s[%d], b: %s[%d]) {
      wc: %s[%d,1,1] = reshape(w) {shape = [%d, 1, 1]}
      bc: %s[%d,1,1] = reshape(b) {shape = [%d, 1, 1]}
      m: %s[1,%d,1,1] = reduce_mean(x) {axes = [0, 2, 3], keep_dims = true}
      d: %s[%d,%d,%d,%d] = sub(x, m)
      q: %s[%d,%d,%d,%d] = mul(d, d)
      v: %s[1,%d,1,1] = reduce_mean(q) {axes = [0, 2, 3], keep_dims = true}
      eps: %s[] = constant() {data = [1e-05]}
      e: %s[1,%d,1,1] = add(v, eps)
      r: %s[1,%d,1,1] = rsqrt(e)
      n: %s[%d,%d,%d,%d] = mul(d, r)
      s: %s[%d,%d,%d,%d] = mul(n, wc)
      y: %s[%d,%d,%d,%d] = add(s, bc)
      return y, m, v
    })";
  std::vector<std::pair<std::string, std::string>> graphs;
  for (auto [t, n, c, h, w] : std::vector<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>>{
           {"f16", 16, 64, 56, 56}, {"f32", 3, 5, 33, 33}, {"f16", 2, 7, 6, 6}, {"bf16", 32, 3, 224, 224},
           {"bf16", 16, 48, 7, 7}}) {
    const char* d = t.c_str();
    graphs.push_back({absl::StrFormat("batchnorm_%s_%dx%dx%dx%d", t, n, c, h, w),
                      absl::StrFormat(kBatchNorm, d, n, c, h, w, d, c, d, c, d, c, c, d, c, c, d, c, d, n, c, h, w, d,
                                      n, c, h, w, d, c, d, d, c, d, c, d, n, c, h, w, d, n, c, h, w, d, n, c, h, w)});
  }
  graphs.push_back({"max_over_0_2_bf16", R"(graph g(x: bf16[9,40,1000]) {
      s: bf16[40] = reduce_max(x) {axes = [0, 2], keep_dims = false}
      return s
    })"});
  graphs.push_back({"nhw_mean_nchw_f32", R"(graph g(x: f32[4,32,17,64]) {
      s: f32[32] = reduce_mean(x) {axes = [0, 2, 3], keep_dims = false}
      return s
    })"});
  // Group norm as the ONNX importer writes it: x viewed as [N, G, C/G, HW], layer_norm over
  // the last two axes, a per-channel weight and bias viewed as [G, C/G, 1] (one value per run of
  // HW: shared by a vector's lanes where HW holds whole vectors), the result viewed back as
  // [N, C, H, W] (stored at its linear index). One row kernel each.
  const char* kGroupNorm = R"(graph g(x: %s[%d,%d,%d,%d], w: %s[%d], b: %s[%d]) {
      v: %s[%d,%d,%d,%d] = reshape(x) {shape = [%d, %d, %d, %d]}
      ln: %s[%d,%d,%d,%d] = layer_norm(v) {axis = 2, eps = 1e-05}
      wg: %s[%d,%d,1] = reshape(w) {shape = [%d, %d, 1]}
      bg: %s[%d,%d,1] = reshape(b) {shape = [%d, %d, 1]}
      s: %s[%d,%d,%d,%d] = mul(ln, wg)
      t: %s[%d,%d,%d,%d] = add(s, bg)
      y: %s[%d,%d,%d,%d] = reshape(t) {shape = [%d, %d, %d, %d]}
      return y
    })";
  for (auto [t, n, c, hw, groups] : std::vector<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>>{
           {"f16", 2, 320, 64, 32}, {"f32", 3, 6, 5, 3}, {"bf16", 4, 64, 9, 8}}) {
    const char* d = t.c_str();
    const int64_t cg = c / groups, r = hw * hw;
    graphs.push_back({absl::StrFormat("groupnorm_%s_%dx%dx%dx%d_g%d", t, n, c, hw, hw, groups),
                      absl::StrFormat(kGroupNorm, d, n, c, hw, hw, d, c, d, c, d, n, groups, cg, r, n, groups, cg, r, d,
                                      n, groups, cg, r, d, groups, cg, groups, cg, d, groups, cg, groups, cg, d, n,
                                      groups, cg, r, d, n, groups, cg, r, d, n, c, hw, hw, n, c, hw, hw)});
  }
  for (const auto& [name, text] : graphs) {
    auto analysis = Analyze(Parse(text), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << name << ": " << analysis.status();
    int rows = 0, kernels = 0;
    for (const Region& region : analysis->plan.regions) {
      if (!HasKernel(region.kind)) continue;
      ++kernels;
      rows += region.kind == RegionKind::kRowReduction;
      for (const KernelParams& params : CandidateParams(region, H100Spec())) {
        CheckOptions options;
        options.params = params;
        testing_gpu::CheckRegion(absl::StrFormat("%s/r%d %s", name, region.id, params.ToString()), *analysis->graph,
                                 region, options);
      }
    }
    EXPECT_EQ(rows, 1) << name;
    EXPECT_EQ(kernels, 1) << name;
  }
}

// layer_norm's mean and variance come from one pass of Welford accumulators (MeanVar) where
// that saves a pass or a wait. Rows far from zero, 1000 + U(-1, 1) (mean / spread about 1700):
// any f32 kernel, and the reference, place the mean within a few ulps of 1000 (6.1e-5 each), so
// y = (x - mean) * rstd is compared within 1e-3 absolute (ten ulps over the spread, 0.58).
// E[x^2] - E[x]^2 in f32 would miss the variance (0.33) by about an ulp of 1e6 (0.06): 10% of y.
// Every candidate: registers, shared memory, streamed, split and cluster.
TEST_F(RegionGpuTest, LayerNormOfRowsFarFromZero) {
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{64, 4096}, {3, 40000}, {2, 1000003}}) {
    const std::string r = std::to_string(rows), c = std::to_string(n);
    const std::string text = absl::StrFormat(R"(graph g(x: f32[%s,%s], w: f32[%s], b: f32[%s]) {
        y: f32[%s,%s] = layer_norm(x, w, b) {axis = 1, eps = 1e-05}
        return y
      })", r, c, c, c, r, c);
    Tensor x(DType::kF32, {rows, n});
    uint64_t state = 12345;
    for (int64_t i = 0; i < rows * n; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x.SetF64(i, 1000.0 + (static_cast<double>(state >> 40) / static_cast<double>(1ull << 24)) * 2.0 - 1.0);
    }
    const std::map<std::string, Tensor> inputs = {{"x", x}};
    CheckOptions options;
    options.inputs = &inputs;
    options.tolerance = Tolerance{1e-3, 1e-4};
    CheckEveryCandidate(absl::StrFormat("layer_norm_far_%dx%d", rows, n), text, options);
  }
}

// Column reductions (the reduced axes are followed by kept ones): sums over the leading axis,
// softmax and a normalisation over a middle axis, with few and many columns, reduced extents
// from 1 to 32768, inner extents that are not multiples of the vector, and every candidate
// (split tiles, narrower tiles, cached or streamed).
TEST_F(RegionGpuTest, ColumnKernels) {
  // A sum of squares: positive terms, so the f32 tolerance is not about cancellation.
  const char* kSum = R"(graph g(x: f32[%d,%d]) {
      q: f32[%d,%d] = mul(x, x)
      s: f32[%d] = reduce_sum(q) {axes = [0], keep_dims = false}
      return s
    })";
  const char* kSoftmax = R"(graph g(x: bf16[%d,%d,%d]) {
      y: bf16[%d,%d,%d] = softmax(x) {axis = 1}
      return y
    })";
  const char* kNorm = R"(graph g(x: f16[%d,%d,%d]) {
      m: f16[%d,1,%d] = reduce_mean(x) {axes = [1], keep_dims = true}
      d: f16[%d,%d,%d] = sub(x, m)
      q: f16[%d,%d,%d] = mul(d, d)
      v: f16[%d,1,%d] = reduce_mean(q) {axes = [1], keep_dims = true}
      r: f16[%d,1,%d] = rsqrt(v)
      y: f16[%d,%d,%d] = mul(d, r)
      return y, m
    })";
  std::vector<std::pair<std::string, std::string>> graphs;
  // Inner extents no vector wider than one element divides: 1001, 3, 37, 4095, 50257.
  for (auto [k, i] : {std::pair<int64_t, int64_t>{1, 33}, {7, 3}, {1000, 256}, {32768, 96}, {4096, 4096}, {200003, 24},
                      {999, 1001}}) {
    graphs.push_back({absl::StrFormat("colsum_%dx%d", k, i), absl::StrFormat(kSum, k, i, k, i, i)});
  }
  for (auto [o, k, i] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {2, 1000, 96}, {16, 77, 40}, {1, 4096, 8}, {3, 5, 1000}, {2, 300, 37}}) {
    graphs.push_back({absl::StrFormat("colsoftmax_%dx%dx%d", o, k, i), absl::StrFormat(kSoftmax, o, k, i, o, k, i)});
    graphs.push_back({absl::StrFormat("colnorm_%dx%dx%d", o, k, i),
                      absl::StrFormat(kNorm, o, k, i, o, i, o, k, i, o, k, i, o, i, o, i, o, k, i)});
  }
  // A gradient written beside the bias gradient that sums it (kStoreInStep: the full-space
  // output waits for no reduction, so level 1 stores it as it reads, and split blocks do not wait).
  for (auto [k, i] : {std::pair<int64_t, int64_t>{7, 3}, {1000, 96}, {4096, 1024}, {3000, 200}, {600, 4095}}) {
    graphs.push_back({absl::StrFormat("gradbias_%dx%d", k, i),
                      absl::StrFormat(R"(graph g(x: bf16[%d,%d], y: bf16[%d,%d]) {
      d: bf16[%d,%d] = mul(x, y)
      t: bf16[%d,%d] = tanh(d)
      s: bf16[%d] = reduce_sum(t) {axes = [0], keep_dims = false}
      return t, s
    })", k, i, k, i, k, i, k, i, i)});
  }
  // Split tiles whose last block merges and stores (one level, no outputs of the full space):
  // a max over a middle axis and an NHWC sum over N, H and W.
  graphs.push_back({"colmax_16x3000x80", R"(graph g(x: f16[16,3000,80]) {
      s: f16[16,80] = reduce_max(x) {axes = [1], keep_dims = false}
      return s
    })"});
  graphs.push_back({"colsum_512x50257_bf16", R"(graph g(x: bf16[512,50257]) {
      s: bf16[50257] = reduce_sum(x) {axes = [0], keep_dims = false}
      return s
    })"});
  // Ragged columns (an inner extent no wide vector divides): a per-column weight read by
  // every lane's clamped index, two levels, outputs per column; [3,300,37] is not a whole
  // number of 16-byte chunks, so its vector is 1.
  for (auto [o, k, i] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {4, 300, 37}, {2, 128, 1001}, {1, 64, 9}, {3, 300, 37}, {1, 512, 50257}}) {
    graphs.push_back({absl::StrFormat("colvarw_%dx%dx%d", o, k, i),
                      absl::StrFormat(R"(graph g(x: bf16[%d,%d,%d], w: bf16[%d]) {
      m: bf16[%d,1,%d] = reduce_mean(x) {axes = [1], keep_dims = true}
      d: bf16[%d,%d,%d] = sub(x, m)
      q: bf16[%d,%d,%d] = mul(d, d)
      v: bf16[%d,1,%d] = reduce_mean(q) {axes = [1], keep_dims = true}
      y: bf16[%d,1,%d] = mul(v, w)
      return y, m
    })", o, k, i, i, o, i, o, k, i, o, k, i, o, i, o, i)});
  }
  graphs.push_back({"colmax_16x3000x81_f32", R"(graph g(x: f32[16,3000,81]) {
      s: f32[16,81] = reduce_max(x) {axes = [1], keep_dims = false}
      return s
    })"});
  graphs.push_back({"nhwsum_8x56x56x256", R"(graph g(x: f16[8,56,56,256]) {
      q: f16[8,56,56,256] = mul(x, x)
      s: f16[256] = reduce_sum(q) {axes = [0, 1, 2], keep_dims = false}
      return s
    })"});
  for (const auto& [name, text] : graphs) {
    auto analysis = Analyze(Parse(text), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << analysis.status();
    for (const Region& region : analysis->plan.regions) {
      if (!HasKernel(region.kind)) continue;
      // A sum over one row is a reshape since canonicalize drops unit reduced axes: the
      // square runs as a pointwise kernel; every other case is a column reduction.
      const RegionKind want = name == "colsum_1x33" ? RegionKind::kPointwise : RegionKind::kColumnReduction;
      EXPECT_EQ(region.kind, want) << name;
      for (const KernelParams& params : CandidateParams(region, H100Spec())) {
        CheckOptions options;
        options.params = params;
        testing_gpu::CheckRegion(absl::StrFormat("%s/r%d %s", name, region.id, params.ToString()), *analysis->graph,
                                 region, options);
      }
    }
  }
}

// Ragged vectors where no fit or candidate takes them, but the emitter must be right when the
// parameters ask: outputs of the full space stored through StoreVecAt (a column softmax; a
// gradient stored as level 1 reads it, beside its bias gradient), under every candidate's
// launch shape with the vector forced to 8.
TEST_F(RegionGpuTest, RaggedColumnsWithFullSpaceOutputs) {
  const std::vector<std::pair<std::string, std::string>> graphs = {
      {"colsoftmax_8x77x1001_ragged", R"(graph g(x: f16[8,77,1001]) {
      y: f16[8,77,1001] = softmax(x) {axis = 1}
      return y
    })"},
      {"gradbias_600x4095_ragged", R"(graph g(x: bf16[600,4095], y: bf16[600,4095]) {
      d: bf16[600,4095] = mul(x, y)
      t: bf16[600,4095] = tanh(d)
      s: bf16[4095] = reduce_sum(t) {axes = [0], keep_dims = false}
      return t, s
    })"}};
  for (const auto& [name, text] : graphs) {
    auto analysis = Analyze(Parse(text), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << analysis.status();
    for (const Region& region : analysis->plan.regions) {
      if (region.kind != RegionKind::kColumnReduction) continue;
      std::vector<KernelParams> seen;
      for (KernelParams params : CandidateParams(region, H100Spec())) {
        params.vector_width = 8;
        params.smem = false;
        if (std::find(seen.begin(), seen.end(), params) != seen.end()) continue;
        seen.push_back(params);
        CheckOptions options;
        options.params = params;
        testing_gpu::CheckRegion(absl::StrFormat("%s/r%d %s", name, region.id, params.ToString()), *analysis->graph,
                                 region, options);
      }
    }
  }
}

// The row kernel of attention the template does not run: the masked softmax over the stored
// scores, with masks broadcast over batch and heads ([B,1,1,T] padding, [1,1,S,T]), causal,
// and S, T not multiples of anything.
TEST_F(RegionGpuTest, AttentionFallbackMasks) {
  CheckGraph("attention_padding_mask", Parse(R"(graph g(q: bf16[2,3,7,320], k: bf16[2,3,33,320], v: bf16[2,3,33,320], m: bf16[2,1,1,33]) {
      a: bf16[2,3,7,320] = attention(q, k, v, m) {causal = false, scale = 0.0}
      return a
    })"));
  CheckGraph("attention_causal_square_mask", Parse(R"(graph g(q: f16[1,2,9,320], k: f16[1,2,9,320], v: f16[1,2,9,320], m: f16[1,1,9,9]) {
      a: f16[1,2,9,320] = attention(q, k, v, m) {causal = true, scale = 0.125}
      return a
    })"));
}

TEST_F(RegionGpuTest, PointwiseSizesAndBroadcasts) {
  CheckGraph("bias_gelu_7x1001", Parse(R"(graph g(x: bf16[7,1001], b: bf16[1001]) {
      t: bf16[7,1001] = add(x, b)
      y: bf16[7,1001] = gelu_tanh(t)
      return y
    })"));
  CheckGraph("swiglu_3x13_f16", Parse(R"(graph g(a: f16[3,13], u: f16[3,13]) {
      s: f16[3,13] = silu(a)
      y: f16[3,13] = mul(s, u)
      return y
    })"));
  CheckGraph("scalar_f32", Parse(R"(graph g(x: f32[1]) {
      y: f32[1] = exp(x)
      return y
    })"));
  CheckGraph("broadcast_5x1x9", Parse(R"(graph g(x: f32[5,1,9], y: f32[4,9], z: f32[5,4,1]) {
      a: f32[5,4,9] = add(x, y)
      b: f32[5,4,9] = mul(a, z)
      c: bool[5,4,9] = gt(b, a)
      d: f32[5,4,9] = where(c, b, a)
      return d
    })"));
  CheckGraph("dropout_add_333x1001", Parse(R"(graph g(x: bf16[333,1001], r: bf16[333,1001]) {
      d: bf16[333,1001] = dropout(x) {offset = 3, p = 0.1, seed = 42}
      y: bf16[333,1001] = add(d, r)
      return y
    })"));
  CheckGraph("transpose_copy_33x65", Parse(R"(graph g(x: f32[33,65]) {
      t: f32[65,33] = transpose(x) {perm = [1, 0]}
      return t
    })"));
  CheckGraph("column_sum_64x33", Parse(R"(graph g(x: f32[64,33]) {
      s: f32[33] = reduce_sum(x) {axes = [0], keep_dims = false}
      return s
    })"));
}

// The tiled transpose kernel's cases (tests/codegen/layout_cases.h): 2-D to 6-D permutes,
// odd extents, one row, one column, f32/f16/bf16, several reads, under every candidate.
TEST_F(RegionGpuTest, TiledTransposes) {
  for (const auto& [name, text] : testing_codegen::TiledLayoutGraphs()) CheckEveryCandidate(name, text);
}

// The vectorised plain kernel's cases (tests/codegen/layout_cases.h): permutes that keep the
// innermost axis in every dtype, concats, rotary, patchify, slices, dropout, under every candidate.
TEST_F(RegionGpuTest, VectorisedLayouts) {
  for (const auto& [name, text] : testing_codegen::VectorLayoutGraphs()) CheckEveryCandidate(name, text);
}

// Rotary embeddings as ONNX exporters write them (Slice, Neg, Concat, Mul, Add): one kernel.
TEST_F(RegionGpuTest, RotaryEmbeddingIsOneKernel) {
  EXPECT_EQ(CheckGraph("rotary_bf16", Parse(testing_codegen::RotaryGraph("bf16", {2, 4}, 33, 64))), 1);
}

// After every test of the binary (this file's and op_table_gpu_test.cc's): the totals.
class SummaryEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("gpu-check: %d kernel outputs checked against the interpreter, %lld elements\n",
                testing_gpu::Totals().outputs, static_cast<long long>(testing_gpu::Totals().elements));
  }
};
const auto* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

}  // namespace
}  // namespace kiln
