// KernelParams as values (ToString, Hash, ==), the default heuristic on the examples, the
// refusal of kinds without a kernel, and the ptxas -v parser.
#include "codegen/kernel_params.h"

#include "passes/cost/cost_model.h"

#include "absl/strings/str_cat.h"
#include "codegen/emit_kernel.h"
#include "gtest/gtest.h"
#include "ir/parser.h"
#include "passes/cost/cost_model.h"
#include "passes/fusion/layout_access.h"
#include "passes/fusion/reduce_placement.h"
#include "passes/fusion/region_kind.h"
#include "runtime/nvrtc_compile.h"
#include "tests/codegen/codegen_test_util.h"

namespace kiln {
namespace {

TEST(KernelParamsTest, ValueSemantics) {
  KernelParams a{256, 8, 1, 0}, b{256, 8, 1, 0}, c{256, 4, 1, 0};
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_NE(a.Hash(), c.Hash());
  EXPECT_EQ(a.ToString(), "block=256 vec=8 rows=1 chunk=0");
  EXPECT_EQ(Fnv1a64(""), 1469598103934665603ull);  // stable across processes: it names kernels
  EXPECT_FALSE(ValidateParams(KernelParams{100, 8, 1, 0}).ok());
  EXPECT_FALSE(ValidateParams(KernelParams{256, 3, 1, 0}).ok());
  EXPECT_FALSE(ValidateParams(KernelParams{256, 8, 3, 0}).ok());
  EXPECT_TRUE(ValidateParams(KernelParams{256, 8, 8, 0}).ok());
}

TEST(KernelParamsTest, DefaultsAndCandidatesAreValidForEveryExampleRegion) {
  for (const char* name : {"softmax", "softmax_xent", "layernorm", "bias_gelu", "transformer_block"}) {
    Analysis a = testing_codegen::AnalyzeFile(std::string(KILN_SOURCE_DIR) + "/examples/" + name + ".json");
    for (const Region* r : testing_codegen::KernelRegions(a.plan)) {
      std::vector<KernelParams> candidates = CandidateParams(*r, a.plan.device);
      ASSERT_FALSE(candidates.empty());
      EXPECT_EQ(candidates[0], DefaultParams(*r, a.plan.device));
      for (const KernelParams& p : candidates) EXPECT_TRUE(ValidateParams(p).ok()) << name << " " << p.ToString();
    }
  }
  // The 128256-long cross-entropy row does not fit on chip: it is streamed.
  Analysis xent = testing_codegen::AnalyzeFile(std::string(KILN_SOURCE_DIR) + "/examples/softmax_xent.json");
  const Region* row = testing_codegen::KernelRegions(xent.plan).at(0);
  EXPECT_GT(DefaultParams(*row, xent.plan.device).chunk, 0);
}

// Persistent launches: a pointwise or unsplit row region whose default grid is larger than the
// blocks the SMs hold gets a candidate with max_grid (the blocks an SM's threads hold x SMs);
// the emitted launch rule caps the grid there and the kernel's blocks loop over the rest.
// A kernel whose blocks do not loop (a column tile) refuses it by name.
TEST(KernelParamsTest, PersistentCandidatesCapTheGrid) {
  Analysis a = testing_codegen::AnalyzeText(R"(graph g(x: bf16[8192,4096], w: bf16[4096]) {
    y: bf16[8192,4096] = rms_norm(x, w) {axis = -1, eps = 1e-5}
    z: bf16[8192,4096] = mul(y, y)
    return z
  })");
  const std::vector<const Region*> regions = testing_codegen::KernelRegions(a.plan);
  ASSERT_FALSE(regions.empty());
  const DeviceSpec& device = a.plan.device;
  ASSERT_GT(device.sm_count, 0);
  int persistent = 0;
  for (const Region* r : regions) {
    for (const KernelParams& p : CandidateParams(*r, device)) {
      if (p.max_grid == 0) continue;
      ++persistent;
      EXPECT_EQ(p.max_grid % device.sm_count, 0) << p.ToString();
      EXPECT_NE(p.ToString().find(" max_grid="), std::string::npos);
      absl::StatusOr<KernelSource> ks = EmitKernel(*r, p);
      ASSERT_TRUE(ks.ok()) << ks.status();
      EXPECT_LE(ks->launch.Grid(ks->count), p.max_grid) << p.ToString();
      KernelParams plain = p;
      plain.max_grid = 0;
      absl::StatusOr<KernelSource> full = EmitKernel(*r, plain);
      ASSERT_TRUE(full.ok()) << full.status();
      EXPECT_GT(full->launch.Grid(full->count), ks->launch.Grid(ks->count)) << p.ToString();
    }
  }
  EXPECT_GE(persistent, 1);

  KernelParams split{512, 8, 1, 0};
  split.split = 4;
  split.max_grid = 264;
  EXPECT_FALSE(ValidateParams(split).ok());
  Analysis col = testing_codegen::AnalyzeText(R"(graph g(x: f32[4096,1024]) {
    s: f32[1024] = reduce_sum(x) {axes = [0], keep_dims = false}
    return s
  })");
  const Region* column = testing_codegen::KernelRegions(col.plan).at(0);
  ASSERT_EQ(column->kind, RegionKind::kColumnReduction);
  KernelParams p = DefaultParams(*column, col.plan.device);
  p.split = 1;
  p.cluster = false;
  p.max_grid = 132;
  absl::StatusOr<KernelSource> refused = EmitKernel(*column, p);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("column_reduce.cuh"), std::string::npos) << refused.status();
}

// Blocks of one or two warps are column candidates only where the tiles fill the SMs several
// times over: softmax over the 21 classes of NCHW (8192 tiles) gets them, a max over the
// 32768 rows of 768 columns (24 tiles with a long K, where they measured up to 1300x slower)
// does not.
TEST(KernelParamsTest, SmallColumnBlocksOnlyForManyTiles) {
  auto smallest_block = [](const char* text) {
    Analysis a = testing_codegen::AnalyzeText(text);
    const Region* r = testing_codegen::KernelRegions(a.plan).at(0);
    EXPECT_EQ(r->kind, RegionKind::kColumnReduction);
    int smallest = 1 << 20;
    for (const KernelParams& p : CandidateParams(*r, a.plan.device)) smallest = std::min(smallest, p.block_size);
    return smallest;
  };
  EXPECT_LE(smallest_block(R"(graph g(x: f16[8,21,512,512]) {
    y: f16[8,21,512,512] = softmax(x) {axis = 1}
    return y
  })"), 64);
  EXPECT_GE(smallest_block(R"(graph g(x: f32[32768,768]) {
    m: f32[768] = reduce_max(x) {axes = [0], keep_dims = false}
    return m
  })"), 128);
}

// A column tile split over more than kMaxColumnClusterBlocks merges through global memory, and
// no candidate runs such a split as a cluster: softmax over axis 1 of [32, 3000, 96] f32 split
// over 8 blocks took 71.6 us as a cluster (35.9 once ClusterMerge read each word once; the
// model had priced it at 23.9), 33.2 through global memory and 33.9 as a cluster of 4 (H200,
// kiln tune: bench/results/2026-11-29-session33, runs 4 and 7).
TEST(KernelParamsTest, AColumnClusterHoldsAtMostFourBlocks) {
  Analysis a = testing_codegen::AnalyzeText(R"(graph g(x: f32[32,3000,96]) {
    y: f32[32,3000,96] = softmax(x) {axis = 1}
    return y
  })");
  const Region* r = testing_codegen::KernelRegions(a.plan).at(0);
  ASSERT_EQ(r->kind, RegionKind::kColumnReduction);
  ASSERT_TRUE(a.plan.device.clusters);
  const KernelParams d = DefaultParams(*r, a.plan.device);
  EXPECT_GT(d.split, kMaxColumnClusterBlocks) << d.ToString();
  EXPECT_FALSE(d.cluster) << d.ToString();
  bool small_cluster = false;
  for (const KernelParams& p : CandidateParams(*r, a.plan.device)) {
    EXPECT_FALSE(p.cluster && p.split > kMaxColumnClusterBlocks) << p.ToString();
    small_cluster |= p.cluster;
  }
  EXPECT_TRUE(small_cluster) << "a cluster of at most four blocks stays a candidate";
}

// Softmax over the 21 classes of [8, 21, 512, 512] f16 on the H200 spec keeps its column tiles
// in shared memory by default (row_fit.cc's FitColumnOnChip). Its candidates still hold the
// model's choice without shared memory (the default it replaced: 59.3 against 55.5 us, session
// 34 runs 3 and 5), the same shape streamed, and the variations around that.
TEST(KernelParamsTest, ASharedColumnDefaultKeepsTheStreamedFamilyAsCandidates) {
  const Analysis analysis = testing_codegen::AnalyzeText(R"(graph g(x: f16[8,21,512,512]) {
    y: f16[8,21,512,512] = softmax(x) {axis = 1}
    return y
  })", {}, "h200");
  const Analysis* a = &analysis;
  const Region* r = testing_codegen::KernelRegions(a->plan).at(0);
  ASSERT_EQ(r->kind, RegionKind::kColumnReduction);
  const KernelParams d = DefaultParams(*r, a->plan.device);
  EXPECT_TRUE(d.smem && d.chunk == 0) << d.ToString();
  const RowFit::Unshared& u = r->reduce->fit.unshared;
  ASSERT_GT(u.lanes, 0);
  int streamed = 0, shared = 0, unshared = 0;
  for (const KernelParams& p : CandidateParams(*r, a->plan.device)) {
    streamed += !p.smem && p.chunk > 0;
    shared += p.smem && p.chunk == 0;
    unshared += !p.smem && p.tile_n == u.lanes && p.block_size == u.threads * u.lanes && p.split == u.split &&
                p.vector_width == u.vector && (p.chunk == 0) == u.on_chip;
    if (!p.smem && p.chunk > 0 && p.block_size == d.block_size && p.tile_n == d.tile_n && p.split == d.split) {
      auto ks = EmitKernel(*r, p);
      ASSERT_TRUE(ks.ok()) << ks.status();
      EXPECT_EQ(ks->launch.dynamic_smem_bytes, 0) << p.ToString();
    }
  }
  EXPECT_GE(streamed, 3);
  EXPECT_GE(shared, 2);
  EXPECT_GE(unshared, 1) << "the model's choice without shared memory is a candidate";
}

// A candidate's prediction (CandidatePriceUs, shown by `kiln tune` and `kiln dump
// --candidates`) prices the default as the region's own estimate does, for column regions
// streamed, held in registers, in shared memory, split and one-pass; a candidate of another
// shape gets its own price; a kind the model does not price per candidate says so (-1).
TEST(KernelParamsTest, ACandidatesPredictionPricesTheDefaultAsTheRegion) {
  const char* graphs[] = {
      "graph g(x: f16[8,21,512,512]) {\n y: f16[8,21,512,512] = softmax(x) {axis = 1}\n return y\n}",
      "graph g(x: f32[8,1024,512]) {\n y: f32[8,1024,512] = softmax(x) {axis = 1}\n return y\n}",
      "graph g(x: f32[32768,768]) {\n y: f32[768] = reduce_max(x) {axes = [0]}\n return y\n}",
      "graph g(x: bf16[16384,4095]) {\n y: bf16[4095] = reduce_sum(x) {axes = [0]}\n return y\n}",
      "graph g(x: f32[64,8192,16]) {\n y: f32[64,8192,16] = softmax(x) {axis = 1}\n return y\n}",
  };
  for (const char* text : graphs) {
    const Analysis analysis = testing_codegen::AnalyzeText(text, {}, "h200");
    const Analysis* a = &analysis;
    const Region* r = testing_codegen::KernelRegions(a->plan).at(0);
    ASSERT_EQ(r->kind, RegionKind::kColumnReduction) << text;
    const double region_us = EstimateRunTime(*r, a->plan.device).total_us;
    const std::vector<KernelParams> candidates = CandidateParams(*r, a->plan.device);
    EXPECT_NEAR(CandidatePriceUs(*r, candidates[0], a->plan.device), region_us, 1e-9 * region_us)
        << text << "\n" << candidates[0].ToString();
    int other = 0;
    for (const KernelParams& p : candidates) {
      const double us = CandidatePriceUs(*r, p, a->plan.device);
      EXPECT_GT(us, 0) << p.ToString();
      other += std::abs(us - region_us) > 1e-3 * region_us;
    }
    EXPECT_GE(other, 1) << text;
  }
  Analysis rows = testing_codegen::AnalyzeText(R"(graph g(x: f32[4096,4096]) {
      y: f32[4096,4096] = softmax(x) {axis = 1}
      return y
    })");
  const Region* row = testing_codegen::KernelRegions(rows.plan).at(0);
  EXPECT_EQ(CandidatePriceUs(*row, DefaultParams(*row, rows.plan.device), rows.plan.device), -1);
}

// A region that stages a transposed read: the default is the tiled kernel's DefaultTile (the
// tile the cost model prices), the candidates are valid tiles of it plus the plain kernel, and
// the tile is part of the params' string and hash (it names kernels and keys caches).
TEST(KernelParamsTest, TiledTransposeParams) {
  Analysis a = testing_codegen::AnalyzeText(R"(graph g(x: bf16[1024,2048], y: bf16[2048,1024]) {
      t = transpose(x) {perm = [1, 0]}
      z = add(t, y)
      return z
    })");
  const Region* r = testing_codegen::KernelRegions(a.plan).at(0);
  ASSERT_TRUE(r->layout && r->layout->tiled());
  const KernelParams d = DefaultParams(*r, a.plan.device);
  EXPECT_EQ(d.ToString(), "block=256 vec=8 rows=1 chunk=0 tile=64x64");
  const std::vector<KernelParams> candidates = CandidateParams(*r, a.plan.device);
  ASSERT_GE(candidates.size(), 3u);
  EXPECT_EQ(candidates[0], d);
  bool plain = false;
  for (const KernelParams& p : candidates) {
    EXPECT_TRUE(ValidateParams(p).ok()) << p.ToString();
    if (p.tile_m == 0) {
      plain = true;
      continue;
    }
    EXPECT_TRUE(CheckTile(*r->layout, TileChoice{p.tile_m, p.tile_n, p.vector_width, p.block_size}).ok())
        << p.ToString();
    auto ks = EmitKernel(*r, p);
    ASSERT_TRUE(ks.ok()) << p.ToString() << ": " << ks.status();
    EXPECT_EQ(ks->count_meaning, "tiles");
    EXPECT_EQ(ks->count, r->layout->Tiles(p.tile_m, p.tile_n));
  }
  EXPECT_TRUE(plain) << "the plain kernel stays a candidate for the tuner";
  KernelParams other = d;
  other.tile_n = 32;
  EXPECT_NE(other.Hash(), d.Hash());
  // A tile the template would reject is an error naming the rule, not an NVRTC failure.
  KernelParams bad = d;
  bad.block_size = 1024;  // 512 vectors per phase cannot be spread evenly over 1024 threads
  auto ks = EmitKernel(*r, bad);
  ASSERT_FALSE(ks.ok());
  EXPECT_NE(std::string(ks.status().message()).find("same number of vectors"), std::string::npos) << ks.status();
}

TEST(EmitKernelTest, KindsWithoutAKernelAreRefusedByName) {
  Analysis a = testing_codegen::AnalyzeFile(std::string(KILN_SOURCE_DIR) + "/examples/small/transformer_block.json");
  int refused = 0;
  for (const Region& r : a.plan.regions) {
    if (HasKernel(r.kind)) continue;
    auto ks = EmitKernel(r, KernelParams{});
    ASSERT_FALSE(ks.ok());
    EXPECT_EQ(ks.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(std::string(ks.status().message()).find(RegionKindName(r.kind)), std::string::npos);
    ++refused;
  }
  EXPECT_GT(refused, 0);
}

TEST(EmitKernelTest, SameRegionGivesSameSourceAndBatchSizeDoesNotChangeIt) {
  auto emit = [](const std::string& rows) {
    Analysis a = testing_codegen::AnalyzeText("graph s(x: bf16[" + rows + ",256]) { y = softmax(x) {axis = -1}\n return y }");
    const Region* r = testing_codegen::KernelRegions(a.plan).at(0);
    auto ks = EmitKernel(*r, DefaultParams(*r, a.plan.device));
    EXPECT_TRUE(ks.ok()) << ks.status();
    return *ks;
  };
  KernelSource a = emit("64"), b = emit("64"), c = emit("4096");
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.name, c.name) << "the row count is a run-time argument";
  EXPECT_EQ(c.count, 4096);
  EXPECT_EQ(c.count_meaning, "rows");
}

// KernelSource::in_place: a pointwise kernel's one output may be written over an input of its
// shape and element size (bias + GELU over the matmul output), never over a broadcast operand,
// a wider or narrower input, or when a second output's loads could follow the first's store;
// the two pointers lose __restrict__, the others keep it.
TEST(EmitKernelTest, APointwiseOutputMayBeWrittenOverAFullSizeInputOfItsElementSize) {
  auto emit = [](const std::string& text) {
    Analysis a = testing_codegen::AnalyzeText(text);
    const Region* r = testing_codegen::KernelRegions(a.plan).at(0);
    auto ks = EmitKernel(*r, DefaultParams(*r, a.plan.device));
    EXPECT_TRUE(ks.ok()) << ks.status();
    return *ks;
  };
  KernelSource gelu = emit(R"(graph g(x: bf16[64,256], b: bf16[256]) {
      t = add(x, b)
      y = gelu_tanh(t)
      return y })");
  ASSERT_EQ(gelu.in_place.size(), 1u);
  const auto [in, out] = gelu.in_place[0];
  EXPECT_EQ(gelu.args[in].tensor, "x");
  EXPECT_EQ(gelu.args[out].tensor, "y");
  EXPECT_NE(gelu.Signature().find("(may be written over x)"), std::string::npos) << gelu.Signature();
  const std::string x_param = absl::StrCat("in", in), b_param = absl::StrCat("in", 1 - in);
  EXPECT_NE(gelu.source.find("__nv_bfloat16* " + x_param), std::string::npos) << gelu.source;
  EXPECT_NE(gelu.source.find("__nv_bfloat16* out0"), std::string::npos) << gelu.source;
  EXPECT_NE(gelu.source.find("__nv_bfloat16* __restrict__ " + b_param), std::string::npos) << gelu.source;

  for (const char* text : {
           "graph c(x: f32[64,256]) { y = cast(x) {dtype = \"bf16\"}\n return y }",
           "graph two(x: bf16[64,256]) { y = neg(x)\n z = exp(x)\n return y, z }",
           "graph bc(b: bf16[256], s: bf16[64,1]) { y = mul(b, s)\n return y }",
       }) {
    KernelSource ks = emit(text);
    EXPECT_TRUE(ks.in_place.empty()) << text << "\n" << ks.Signature();
    EXPECT_NE(ks.source.find("__restrict__ in0"), std::string::npos) << ks.source;
  }
}

// A row's cached vectors hold what the passes read after the region's prologue, computed once
// in Load, when that takes fewer arrays or saves drawing random numbers again.
TEST(EmitKernelTest, ARowCacheHoldsTheProloguesFrontier) {
  auto emit = [](const std::string& text, bool smem = false) {
    Analysis a = testing_codegen::AnalyzeText(text);
    const Region* r = testing_codegen::KernelRegions(a.plan).at(0);
    KernelParams p = DefaultParams(*r, a.plan.device);
    if (smem) p = KernelParams{128, 8, 1, 0}, p.smem = true;  // one block a row, as the cache needs
    auto ks = EmitKernel(*r, p);
    EXPECT_TRUE(ks.ok()) << ks.status();
    return ks->source;
  };
  auto count = [](const std::string& s, const std::string& what) {
    int n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  // Residual add + RMSNorm: one array (h, which the square and the store read) for two inputs.
  const std::string rms = emit(R"(graph g(x: bf16[1024,1024], r: bf16[1024,1024], w: bf16[1024]) {
      h = add(x, r)
      y = rms_norm(h, w) {axis = 1, eps = 1e-06}
      return y, h })");
  EXPECT_NE(rms.find("struct Vec {\n    float f0[8];  // h\n  };"), std::string::npos) << rms;
  EXPECT_EQ(count(rms, "x.f0[0] = "), 1) << rms;  // computed in Load only
  EXPECT_EQ(count(rms, "LoadVec<__nv_bfloat16, 8>(in0 + (r * 1024LL + c0)"), 1) << rms;
  // Dropout + add + LayerNorm: the Philox words are drawn in Load, not in every level's pass.
  const std::string ln = emit(R"(graph g(x: bf16[1024,1024], r: bf16[1024,1024], w: bf16[1024], b: bf16[1024]) {
      xd = dropout(x) {p = 0.1, seed = 7, offset = 0}
      h = add(xd, r)
      y = layer_norm(h, w, b) {axis = 1, eps = 1e-05}
      return y, h })");
  EXPECT_NE(ln.find("float f0[8];  // h"), std::string::npos) << ln;
  EXPECT_EQ(count(ln, "kiln::DropoutWords("), 2) << ln;  // lanes 0..3 and 4..7, once
  // One input: nothing to gain, the input stays cached.
  const std::string softmax = emit("graph s(x: bf16[64,1024]) { y = softmax(x) {axis = 1}\n return y }");
  EXPECT_NE(softmax.find("float x0[8];  // x"), std::string::npos) << softmax;
  EXPECT_EQ(softmax.find("float f0["), std::string::npos) << softmax;
  // An odd width (a head and a tail of single elements) keeps the inputs: measured slower.
  const std::string odd = emit(R"(graph g(x: bf16[64,1023], r: bf16[64,1023], w: bf16[1023]) {
      h = add(x, r)
      y = rms_norm(h, w) {axis = 1, eps = 1e-06}
      return y, h })");
  EXPECT_EQ(odd.find("float f0["), std::string::npos) << odd;
  // A shared-memory cache keeps the raw input bytes that cp.async copies.
  const std::string shared = emit(R"(graph g(x: bf16[64,1024], r: bf16[64,1024], w: bf16[1024]) {
      h = add(x, r)
      y = rms_norm(h, w) {axis = 1, eps = 1e-06}
      return y })", /*smem=*/true);
  EXPECT_NE(shared.find("LoadShared"), std::string::npos) << shared;
  EXPECT_EQ(shared.find("float f0["), std::string::npos) << shared;
}

TEST(NvrtcLogTest, ParsesPtxasInfo) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
      "ptxas info    : Used 99 registers\n"
      "ptxas info    : Compiling entry function 'mine' for 'sm_90a'\n"
      "ptxas info    : Function properties for mine\n"
      "ptxas         .     16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 260 bytes smem, 400 bytes cmem[0]\n";
  PtxasInfo info = ParsePtxasInfo(log, "mine");
  EXPECT_EQ(info.registers, 40);
  EXPECT_EQ(info.spill_store_bytes, 12);
  EXPECT_EQ(info.spill_load_bytes, 8);
  EXPECT_EQ(info.stack_frame_bytes, 16);
  EXPECT_EQ(info.static_smem_bytes, 260);
  EXPECT_FALSE(info.wgmma_serialized);
  const std::string serialized =
      "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non "
      "wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in "
      "the function 'mine'\n" + log;
  EXPECT_TRUE(ParsePtxasInfo(serialized, "mine").wgmma_serialized);
  EXPECT_FALSE(ParsePtxasInfo(serialized, "other").wgmma_serialized);
  const std::string divergent =
      "ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program "
      "dependence on compiler-inserted WG.DP in divergent path in the function 'mine'\n" + log;
  EXPECT_TRUE(ParsePtxasInfo(divergent, "mine").wgmma_serialized);
  EXPECT_FALSE(ParsePtxasInfo(divergent, "other").wgmma_serialized);
}

}  // namespace
}  // namespace kiln
