// Every kernel kiln generates for the bundled examples (full size and examples/small) and for
// the small golden cases compiles with NVRTC for sm_90a, without a GPU. Prints, per kernel,
// the compile time, registers and spills (ptxas -v), so CI logs carry them.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codegen/kernel_params.h"
#include "gtest/gtest.h"
#include "passes/fusion/norm_matmul_plan.h"
#include "passes/fusion/reduce_placement.h"
#include "passes/fusion/region_kind.h"
#include "runtime/nvrtc_compile.h"
#include "tests/codegen/codegen_test_util.h"

namespace kiln {
namespace {

std::vector<std::string> JsonFiles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") out.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Compiles `ks` once per distinct name (equal kernels share one) and reports it; a kernel that
// spills more than `spill_limit` bytes fails (a negative limit: any).
void CompileAndReport(const std::string& what, const KernelSource& ks, std::set<std::string>* seen,
                      int64_t spill_limit = 0) {
  if (!seen->insert(ks.name).second) {
    std::printf("%-44s %s (same kernel as above)\n", what.c_str(), ks.name.c_str());
    return;
  }
  auto compiled = CompileCuda(ks.name, ks.source, "sm_90a");
  ASSERT_TRUE(compiled.ok()) << what << ":\n" << ks.source << "\n" << compiled.status();
  EXPECT_FALSE(compiled->cubin.empty());
  if (spill_limit >= 0) EXPECT_LE(compiled->spill_store_bytes, spill_limit) << what << " spills:\n" << compiled->log;
  if (ks.launch.cooperative) {
    // A cooperative launch needs at least one group of blocks (a split row's) resident at once
    // on a 132-SM sm_90 GPU (runtime/launch.h's PrepareKernel refuses it otherwise, and the
    // GPU test of that candidate fails): registers allocated per warp in units of 256, 64K per
    // SM; at most 2048 threads; shared memory with 1 KB reserved per block.
    const int64_t warps = (ks.launch.block + 31) / 32;
    const int64_t warp_registers = (compiled->registers * 32 + 255) / 256 * 256;
    const int64_t smem = compiled->static_smem_bytes + ks.launch.dynamic_smem_bytes + 1024;
    const int64_t per_sm = std::min({int64_t{2048} / ks.launch.block, int64_t{65536} / (warp_registers * warps),
                                     int64_t{233472} / smem});
    EXPECT_LE(ks.launch.blocks_per_item_group, 132 * per_sm)
        << what << ": a cooperative group of " << ks.launch.blocks_per_item_group << " blocks, " << per_sm
        << " resident per SM at " << compiled->registers << " registers";
  }
  std::string notes;
  for (const std::string& n : ks.notes) notes += " | " + n;
  std::printf("%-44s %s %-32s %7.1f ms %3d regs %3lld spill%s\n", what.c_str(), ks.name.c_str(),
              ks.params.ToString().c_str(), compiled->compile_ms, compiled->registers,
              static_cast<long long>(compiled->spill_store_bytes), notes.c_str());
}

TEST(ExamplesNvrtcTest, EveryExampleKernelCompilesForSm90a) {
  std::vector<std::string> files = JsonFiles(std::string(KILN_SOURCE_DIR) + "/examples");
  std::vector<std::string> small = JsonFiles(std::string(KILN_SOURCE_DIR) + "/examples/small");
  files.insert(files.end(), small.begin(), small.end());
  ASSERT_GE(files.size(), 2u);
  std::set<std::string> seen;
  int kernels = 0;
  for (const std::string& path : files) {
    Analysis a = testing_codegen::AnalyzeFile(path);
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      auto ks = EmitKernel(*r, DefaultParams(*r, a.plan.device));
      ASSERT_TRUE(ks.ok()) << path << " region " << r->id << ": " << ks.status();
      std::string what = path.substr(std::string(KILN_SOURCE_DIR).size() + 1) + " r" + std::to_string(r->id);
      CompileAndReport(what, *ks, &seen);
      ++kernels;
    }
  }
  EXPECT_GT(kernels, 10);
}

// The whole compile of every example, through the API as `kiln compile --arch sm_90a` runs
// it: every region the kind table lowers to a kernel gets exactly one.
TEST(ExamplesNvrtcTest, EveryExampleCompilesWhole) {
  std::vector<std::string> files = JsonFiles(std::string(KILN_SOURCE_DIR) + "/examples");
  std::vector<std::string> small = JsonFiles(std::string(KILN_SOURCE_DIR) + "/examples/small");
  files.insert(files.end(), small.begin(), small.end());
  KernelCache cache("");  // memory only, shared: each distinct kernel is compiled once
  for (const std::string& path : files) {
    auto graph = LoadGraph(path);
    ASSERT_TRUE(graph.ok()) << graph.status();
    CompileOptions options;
    options.arch = "sm_90a";
    options.cache = &cache;
    auto compiled = Compile(std::move(*graph), options);
    ASSERT_TRUE(compiled.ok()) << path << ": " << compiled.status();
    for (const LoweredRegion& r : compiled->lowered.regions) {
      const bool kernel = KindInfo(r.kind).lowering == Lowering::kKernel;
      EXPECT_EQ(r.kernels.size(), kernel ? 1u : 0u) << path << " region " << r.region;
    }
  }
}

// Rows kept in shared memory (row_reduce.cuh's kSharedCache): the launch rule takes it for
// long rows with row-shaped outputs, whole or split, with one or two cached inputs and rows
// that are not a multiple of the vector; every candidate of those regions compiles without
// spills and, bounded by the residency the cache allows, within its register share.
TEST(ExamplesNvrtcTest, SharedMemoryRowCacheCompiles) {
  const std::vector<std::string> graphs = {
      R"(graph g(x: bf16[1024,32000]) {
        y: bf16[1024,32000] = softmax(x) {axis = 1}
        return y
      })",
      R"(graph g(x: f32[32,262144], w: f32[262144], b: f32[262144]) {
        y: f32[32,262144] = layer_norm(x, w, b) {axis = 1, eps = 1e-05}
        return y
      })",
      R"(graph g(x: f16[512,50257], res: f16[512,50257], w: f16[50257]) {
        h: f16[512,50257] = add(x, res)
        y: f16[512,50257] = rms_norm(h, w) {axis = 1, eps = 1e-06}
        return y, h
      })",
  };
  std::set<std::string> seen;
  for (const std::string& text : graphs) {
    Analysis a = testing_codegen::AnalyzeText(text);
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      ASSERT_EQ(r->kind, RegionKind::kRowReduction);
      const KernelParams d = DefaultParams(*r, a.plan.device);
      EXPECT_TRUE(d.smem) << r->reduce->fit.reason;
      bool registers_variant = false;
      for (const KernelParams& p : CandidateParams(*r, a.plan.device)) {
        registers_variant |= !p.smem && p.chunk == 0;
        auto ks = EmitKernel(*r, p);
        ASSERT_TRUE(ks.ok()) << ks.status();
        if (p.smem) {
          EXPECT_GT(ks->launch.dynamic_smem_bytes, 0) << p.ToString();
          EXPECT_LE(ks->launch.dynamic_smem_bytes, kMaxSharedCacheBytes) << p.ToString();
        }
        // The default never spills. A tuning candidate may spill a few words where ptxas, given
        // every register a 512-thread block can have (128), still hoists one more shared load
        // (the row split over 9 blocks of layer_norm over 262144: 8 bytes): the tuner times it
        // like any other.
        CompileAndReport(absl::StrCat("shared cache r", r->id, " ", p.ToString()), *ks, &seen, p == d ? 0 : 16);
        if (p.smem && p.min_blocks > 0) {
          auto compiled = CompileCuda(ks->name, ks->source, "sm_90a");
          ASSERT_TRUE(compiled.ok());
          EXPECT_LE(compiled->registers * p.block_size * p.min_blocks, 65536) << p.ToString();
        }
      }
      EXPECT_TRUE(registers_variant) << "the tuner may also try the row in registers";
    }
  }
}

// Column regions that read their inputs more than once (softmax and a norm over a non-innermost
// axis) get candidates that keep each tile's share in shared memory (column_reduce.cuh's
// kSharedCache): the kernel takes the share's bytes of dynamic shared memory, leaves two blocks
// room on an SM, and compiles without spilling. A one-pass column sum gets none.
TEST(ExamplesNvrtcTest, SharedMemoryColumnCacheCompiles) {
  const std::vector<std::pair<std::string, bool>> graphs = {
      {R"(graph g(x: f16[8,21,512,512]) {
        y: f16[8,21,512,512] = softmax(x) {axis = 1}
        return y
      })", true},
      {R"(graph g(x: f32[32,3000,96]) {
        y: f32[32,3000,96] = softmax(x) {axis = 1}
        return y
      })", true},
      {R"(graph g(x: f32[4096,1024]) {
        s: f32[1024] = reduce_sum(x) {axes = [0], keep_dims = false}
        return s
      })", false},
  };
  std::set<std::string> seen;
  for (const auto& [text, rereads] : graphs) {
    Analysis a = testing_codegen::AnalyzeText(text);
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      ASSERT_EQ(r->kind, RegionKind::kColumnReduction) << text;
      int shared = 0;
      for (const KernelParams& p : CandidateParams(*r, a.plan.device)) {
        if (!p.smem || p.chunk != 0) continue;
        ++shared;
        auto ks = EmitKernel(*r, p);
        ASSERT_TRUE(ks.ok()) << ks.status();
        EXPECT_NE(ks->source.find(", 1>>(body"), std::string::npos) << p.ToString() << ks->source;
        EXPECT_GT(ks->launch.dynamic_smem_bytes, 0) << p.ToString();
        EXPECT_LE(2 * (ks->launch.dynamic_smem_bytes + 1024), a.plan.device.smem_per_sm_bytes) << p.ToString();
        CompileAndReport(absl::StrCat("shared column r", r->id, " ", p.ToString()), *ks, &seen);
      }
      EXPECT_EQ(shared > 0, rereads) << text;
    }
  }
}

// Batch norm in training mode is one row kernel: x read through the transpose to [C, N, H, W]
// (a row per channel), the statistics and the normalisation in that space, the result stored
// through the inverse transpose. In runs of H x W that hold whole vectors (56 x 56) or not
// (7 x 7: element stores); every candidate compiles, and the default does not spill (96
// channels: 256 threads; 2048, the zoo's ResNet-50 stage: 128, RowFit's count of bytes).
TEST(ExamplesNvrtcTest, BatchNormStoresThroughItsTransposeUnderEveryCandidate) {
  std::set<std::string> seen;
  for (const char* shape : {"16,64,56,56", "32,96,7,7", "32,2048,7,7"}) {
    const std::string text = absl::StrFormat(R"(graph g(x: bf16[%1$s], w: bf16[%2$s], b: bf16[%2$s]) {
        m: bf16[%2$s] = reduce_mean(x) {axes = [0, 2, 3], keep_dims = true}
        d: bf16[%1$s] = sub(x, m)
        q: bf16[%1$s] = mul(d, d)
        v: bf16[%2$s] = reduce_mean(q) {axes = [0, 2, 3], keep_dims = true}
        e: bf16[%2$s] = add(v, v)
        s: bf16[%2$s] = rsqrt(e)
        n: bf16[%1$s] = mul(d, s)
        nw: bf16[%1$s] = mul(n, w)
        y: bf16[%1$s] = add(nw, b)
        return y
      })", shape, std::string(shape) == "16,64,56,56" ? "1,64,1,1" : std::string(shape) == "32,96,7,7" ? "1,96,1,1" : "1,2048,1,1");
    Analysis a = testing_codegen::AnalyzeText(text);
    const std::vector<const Region*> regions = testing_codegen::KernelRegions(a.plan);
    ASSERT_EQ(regions.size(), 1u) << shape;
    const Region& r = *regions[0];
    ASSERT_EQ(r.kind, RegionKind::kRowReduction) << shape;
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_NE(r.reduce->Of(r.outputs[0]).stored_through, nullptr) << shape;
    // A vector divides the runs of H x W: 8 in runs of 3136, one element in runs of 49.
    EXPECT_EQ(DefaultParams(r, a.plan.device).vector_width, std::string(shape) == "16,64,56,56" ? 8 : 1) << shape;
    // The defaults do not spill, but for ptxas's own choice at 2048 channels: 80 registers and
    // 12 bytes of spill stores for 128 threads of 13 elements (with __launch_bounds__(128, 1)
    // it takes 96 and spills none); that launch measured the fastest all the same
    // (11.4 us, 13.2 at 256 threads; bench/results/2026-11-29-session32, run 5).
    const int64_t default_spill = std::string(shape) == "32,2048,7,7" ? 16 : 0;
    for (const KernelParams& p : CandidateParams(r, a.plan.device)) {
      auto ks = EmitKernel(r, p);
      ASSERT_TRUE(ks.ok()) << ks.status();
      CompileAndReport(absl::StrCat("batch norm ", shape, " ", p.ToString()), *ks, &seen,
                       p == DefaultParams(r, a.plan.device) ? default_spill : -1);
    }
  }
}

// A store of a cast to bf16 narrows the cast's operand (FromCompute rounds it the same way), so a
// softmax that ends in a cast emits no RoundToBF16; where the cast's value also feeds other
// arithmetic (d below) that arithmetic still reads the rounded value. Both compile.
TEST(ExamplesNvrtcTest, StoresOfACastNarrowItsOperand) {
  struct Case {
    const char* text;
    bool rounds;
  };
  const Case cases[] = {
      {R"(graph g(x: bf16[256,4096]) {
        y: bf16[256,4096] = softmax(x) {axis = 1}
        return y
      })", false},
      {R"(graph g(x: f32[64,4096]) {
        c: bf16[64,4096] = cast(x) {dtype = "bf16"}
        w: f32[64,4096] = cast(c) {dtype = "f32"}
        d: f32[64,4096] = mul(w, w)
        return c, d
      })", true},
  };
  std::set<std::string> seen;
  for (const Case& c : cases) {
    Analysis a = testing_codegen::AnalyzeText(c.text);
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      auto ks = EmitKernel(*r, DefaultParams(*r, a.plan.device));
      ASSERT_TRUE(ks.ok()) << ks.status();
      EXPECT_EQ(ks->source.find("RoundToBF16") != std::string::npos, c.rounds) << ks->source;
      CompileAndReport(absl::StrCat("cast store r", r->id), *ks, &seen);
    }
  }
}

// Rows and column tiles split over blocks: the blocks wait for the merged partials (a
// cooperative launch) exactly where the body uses them after (another level, or outputs of the
// full space); otherwise the last block merges and stores. Every candidate compiles, in both
// forms, and the default parameters without spills (some tuning candidates, 1024 threads of 8
// f16 columns or a min_blocks bound, spill a few words: the tuner times them as they are).
TEST(ExamplesNvrtcTest, SplitReductionsCompileWithAndWithoutWaits) {
  const std::vector<std::pair<std::string, bool>> graphs = {
      {R"(graph g(x: f32[1048576,16]) {
        s: f32[16] = reduce_sum(x) {axes = [0], keep_dims = false}
        return s
      })", false},
      {R"(graph g(x: f16[32,56,56,256]) {
        s: f16[256] = reduce_sum(x) {axes = [0, 1, 2], keep_dims = false}
        return s
      })", false},
      {R"(graph g(x: bf16[16,3000,80]) {
        s: bf16[16,80] = reduce_max(x) {axes = [1], keep_dims = false}
        return s
      })", false},
      {R"(graph g(x: f32[1,1048576]) {
        s: f32[1] = reduce_sum(x) {axes = [1], keep_dims = false}
        return s
      })", false},
      {R"(graph g(x: f32[8,1024,512]) {
        y: f32[8,1024,512] = softmax(x) {axis = 1}
        return y
      })", true},
      {R"(graph g(x: f32[4,1000000]) {
        y: f32[4,1000000] = softmax(x) {axis = 1}
        return y
      })", true},
      // One row: a whole split is one cooperative group, which must be resident at once.
      {R"(graph g(x: bf16[1,1048576], w: bf16[1048576], b: bf16[1048576]) {
        y: bf16[1,1048576] = layer_norm(x, w, b) {axis = 1, eps = 1e-05}
        return y
      })", true},
  };
  std::set<std::string> seen;
  for (const auto& [text, waits] : graphs) {
    Analysis a = testing_codegen::AnalyzeText(text);
    int split = 0, clusters = 0;
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      ASSERT_TRUE(r->reduce) << text;
      EXPECT_EQ(r->reduce->fit.split_waits, waits) << text;
      for (const KernelParams& p : CandidateParams(*r, a.plan.device)) {
        auto ks = EmitKernel(*r, p);
        ASSERT_TRUE(ks.ok()) << ks.status();
        // A cluster's blocks merge through distributed shared memory: never cooperative.
        EXPECT_EQ(ks->launch.cooperative, p.split > 1 && waits && !p.cluster) << text << p.ToString();
        EXPECT_EQ(ks->launch.cluster_x, p.cluster ? p.split : 1) << text << p.ToString();
        EXPECT_EQ(ks->has_scratch, p.split > 1 && !p.cluster) << text << p.ToString();
        split += p.split > 1;
        clusters += p.cluster;
        CompileAndReport(absl::StrCat("split r", r->id, " ", p.ToString()), *ks, &seen,
                         p == DefaultParams(*r, a.plan.device) ? 0 : -1);
      }
    }
    EXPECT_GT(split, 0) << "no candidate splits:\n" << text;
    // Split rows and column tiles whose blocks wait are also tried as one cluster (sm_90); where
    // no block waits (the last to arrive merges), a cluster would only add a barrier.
    EXPECT_EQ(clusters > 0, waits) << "cluster candidates where blocks " << (waits ? "wait" : "do not wait") << ":\n"
                                   << text;
  }
}

// Columns of an inner extent that no wide vector divides keep the widest vector (ragged):
// loads shifted into place from aligned chunks, a lane past the extent reads the last column
// and stores nothing. Every candidate compiles; the GPU test (region_gpu_test.cc's
// ColumnKernels) checks their values.
TEST(ExamplesNvrtcTest, RaggedColumnsCompileUnderEveryCandidate) {
  const std::vector<std::string> graphs = {
      R"(graph g(x: bf16[512,50257]) {
        s: bf16[50257] = reduce_sum(x) {axes = [0], keep_dims = false}
        return s
      })",
      R"(graph g(x: f16[4,300,37], w: f16[37]) {
        m: f16[4,1,37] = reduce_mean(x) {axes = [1], keep_dims = true}
        d: f16[4,300,37] = sub(x, m)
        q: f16[4,300,37] = mul(d, d)
        v: f16[4,1,37] = reduce_mean(q) {axes = [1], keep_dims = true}
        y: f16[4,1,37] = mul(v, w)
        return y, m
      })",
      R"(graph g(x: f32[16,3000,81]) {
        s: f32[16,81] = reduce_max(x) {axes = [1], keep_dims = false}
        return s
      })",
  };
  std::set<std::string> seen;
  for (const std::string& text : graphs) {
    Analysis a = testing_codegen::AnalyzeText(text);
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      ASSERT_EQ(r->kind, RegionKind::kColumnReduction) << text;
      // The model may price either vector lower; the tuner gets both.
      int ragged = 0, dividing = 0;
      for (const KernelParams& p : CandidateParams(*r, a.plan.device)) {
        auto ks = EmitKernel(*r, p);
        ASSERT_TRUE(ks.ok()) << ks.status();
        ++(r->reduce->space.inner % p.vector_width != 0 ? ragged : dividing);
        if (r->reduce->space.inner % p.vector_width != 0) {
          EXPECT_NE(ks->source.find("kRagged = true"), std::string::npos) << p.ToString() << ks->source;
          EXPECT_NE(ks->source.find("kiln::LoadVecAt<"), std::string::npos) << p.ToString() << ks->source;
          // Every per-column output is stored under the lane's guard.
          EXPECT_NE(ks->source.find(absl::StrCat("i0 + 1 < ", r->reduce->space.inner, "LL")), std::string::npos)
              << p.ToString() << ks->source;
        }
        CompileAndReport(absl::StrCat("ragged r", r->id, " ", p.ToString()), *ks, &seen,
                         p == DefaultParams(*r, a.plan.device) ? 0 : -1);
      }
      EXPECT_GT(ragged, 0) << text;
      EXPECT_GT(dividing, 0) << text;
    }
  }
}

// An input that is not a whole number of 16-byte chunks keeps the vector that divides the
// inner extent (LoadVecAt would read past its end), and so does a region with outputs of the
// full space (they would be stored element by element).
TEST(ExamplesNvrtcTest, RaggedColumnsNeedWholeChunksAndNoFullSpaceOutputs) {
  for (const char* text : {R"(graph g(x: f16[3,300,37]) {
        m: f16[3,37] = reduce_mean(x) {axes = [1], keep_dims = false}
        return m
      })",
                           R"(graph g(x: f16[8,77,1001]) {
        y: f16[8,77,1001] = softmax(x) {axis = 1}
        return y
      })"}) {
    Analysis a = testing_codegen::AnalyzeText(text);
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      EXPECT_EQ(r->reduce->fit.vector, 1) << text;
      for (const KernelParams& p : CandidateParams(*r, a.plan.device)) EXPECT_EQ(p.vector_width, 1) << text;
    }
  }
}

// The emitter takes a ragged vector wherever the parameters ask for one, also with outputs of
// the full space (no fit or candidate does: element-by-element stores measured slower), and
// stores them through StoreVecAt, a lane past the inner extent storing nothing.
TEST(ExamplesNvrtcTest, RaggedColumnsWithFullSpaceOutputsCompileWhenAsked) {
  Analysis a = testing_codegen::AnalyzeText(R"(graph g(x: f16[8,77,1001]) {
    y: f16[8,77,1001] = softmax(x) {axis = 1}
    return y
  })");
  std::set<std::string> seen;
  for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
    KernelParams p = DefaultParams(*r, a.plan.device);
    p.vector_width = 8;
    auto ks = EmitKernel(*r, p);
    ASSERT_TRUE(ks.ok()) << ks.status();
    EXPECT_NE(ks->source.find("kiln::StoreVecAt<__half, 8>(out0, "), std::string::npos) << ks->source;
    EXPECT_NE(ks->source.find("1001LL - i0"), std::string::npos) << ks->source;
    CompileAndReport(absl::StrCat("ragged full-space r", r->id, " ", p.ToString()), *ks, &seen, -1);
  }
}

// A norm folded into its Linear (norm_matmul.cuh; forced, as KILN_FORCE_FUSE=norm-matmul does,
// where the cost model declines it): rms_norm, and layer_norm with x centred and its bias a
// virtual token row, one decoding row of 4096 x 4096 and 24 rows of 1000 -> 1032 (a K that is
// not a multiple of 32, a partial feature tile): every tuning candidate compiles, the default
// without spills.
TEST(ExamplesNvrtcTest, NormMatmulCandidatesCompile) {
  const std::vector<std::string> graphs = {
      R"(graph g(x: bf16[1,4096], w: bf16[4096], W: bf16[4096,4096]) {
        y: bf16[1,4096] = rms_norm(x, w) {axis = -1, eps = 1e-06}
        z: bf16[1,4096] = matmul(y, W)
        return z
      })",
      R"(graph g(x: bf16[1,4096], w: bf16[4096], b: bf16[4096], W: bf16[4096,4096]) {
        y: bf16[1,4096] = layer_norm(x, w, b) {axis = -1, eps = 1e-05}
        z: bf16[1,4096] = matmul(y, W)
        return z
      })",
      R"(graph g(x: bf16[24,1000], w: bf16[1000], b: bf16[1000], W: bf16[1032,1000], c: bf16[1032]) {
        y: bf16[24,1000] = layer_norm(x, w, b) {axis = -1, eps = 1e-05}
        t: bf16[1000,1032] = transpose(W) {perm = [1, 0]}
        z: bf16[24,1032] = matmul(y, t)
        o: bf16[24,1032] = add(z, c)
        return o
      })",
  };
  std::set<std::string> seen;
  int layer_norms = 0;
  DebugOptions forced;
  forced.forced_rules = {"norm-matmul"};
  for (const std::string& text : graphs) {
    Analysis a = testing_codegen::AnalyzeText(text, forced);
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      ASSERT_EQ(r->kind, RegionKind::kNormMatmul) << text;
      ASSERT_NE(r->norm_matmul, nullptr);
      layer_norms += r->norm_matmul->centred != nullptr;
      const KernelParams d = DefaultParams(*r, a.plan.device);
      for (const KernelParams& p : CandidateParams(*r, a.plan.device)) {
        auto ks = EmitKernel(*r, p);
        ASSERT_TRUE(ks.ok()) << ks.status();
        // The default never spills; a tuning candidate may spill a few words (the tuner times it).
        CompileAndReport(absl::StrCat("norm_matmul r", r->id, " ", p.ToString()), *ks, &seen, p == d ? 0 : 32);
      }
    }
  }
  EXPECT_EQ(layer_norms, 2);
}

TEST(ExamplesNvrtcTest, EveryGoldenCaseCompilesForSm90a) {
  std::set<std::string> seen;
  for (const testing_codegen::SmallCase& c : testing_codegen::SmallCases()) {
    Analysis keep;
    auto ks = testing_codegen::EmitSmallCase(c, &keep);
    ASSERT_TRUE(ks.ok()) << c.name << ": " << ks.status();
    CompileAndReport(c.name, *ks, &seen);
  }
}

}  // namespace
}  // namespace kiln
