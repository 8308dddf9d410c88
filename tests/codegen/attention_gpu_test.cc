// The tiled attention template on the GPU against the reference interpreter (label gpu; part
// of codegen_region_gpu_test): outputs poisoned, compared element by element at the kernel
// tolerances of ir/compare.h, launched twice for bitwise determinism (region_check.h).
// Sweeps: S and T over {1, 7, 64, 127, 128, 1000, 2048, 4097} in pairs (S != T included),
// head dims 32-256 (48, 80, 96 too), causal or not, both 16-bit dtypes (f32 in a sweep of
// its own), batch x heads from 1 to 64; q, k, v sliced out of one projection and the heads
// merged after (layouts folded);
// additive masks [B,1,1,T], [1,1,S,T], [B,H,S,T] and boolean ones, rows fully masked;
// grouped-query heads 1, 2, 4, 8 by broadcast; decoding with the group's heads packed into a
// block and the keys split over blocks; scores scaled up so the softmax is peaked; and every
// tuning candidate at a few shapes.
#include <cstdio>
#include <limits>
#include <map>

#include "absl/strings/str_format.h"
#include "api/compiler.h"
#include "codegen/kernel_params.h"
#include "gtest/gtest.h"
#include "passes/fusion/attention_plan.h"
#include "tests/codegen/attention_cases.h"
#include "tests/codegen/region_check.h"

namespace kiln {
namespace {

using testing_gpu::CheckGraph;
using testing_gpu::CheckOptions;
using testing_gpu::Parse;

class AttentionGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing_gpu::HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  }
};

std::string Plain(const std::string& dtype, int64_t b, int64_t h, int64_t s, int64_t t, int64_t d, bool causal,
                  double scale) {
  return absl::StrFormat(R"(graph g(q: %1$s[%2$d,%3$d,%4$d,%6$d], k: %1$s[%2$d,%3$d,%5$d,%6$d], v: %1$s[%2$d,%3$d,%5$d,%6$d]) {
      y = attention(q, k, v) {causal = %7$s, scale = %8$g}
      return y
    })", dtype, b, h, s, t, d, causal ? "true" : "false", scale);
}

// Checks the graph's attention region, asserting there is one (a case the template does not
// take would silently test the fallback instead).
void CheckAttention(const std::string& label, const std::string& text, const CheckOptions& options = {}) {
  auto graph = Parse(text);
  ASSERT_NE(graph, nullptr);
  auto analysis = Analyze(Parse(text), AnalyzeOptions{});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  ASSERT_NE(testing_codegen::AttentionRegion(*analysis), nullptr) << label << " has no attention region";
  EXPECT_GE(CheckGraph(label, std::move(graph), options), 1);
}

TEST_F(AttentionGpuTest, ShapeSweep) {
  struct Case {
    int64_t s, t;
  };
  const Case lengths[] = {{1, 1},   {1, 4097}, {7, 64},      {64, 64},     {127, 1000},
                          {128, 128}, {1000, 127}, {2048, 2048}, {4097, 4097}, {64, 7}};
  const int64_t dims[] = {32, 48, 64, 80, 96, 128, 256};
  const int64_t heads[][2] = {{1, 1}, {1, 3}, {2, 4}, {4, 16}};
  int i = 0;
  for (const Case& c : lengths) {
    for (int variant = 0; variant < 2; ++variant, ++i) {
      const int64_t d = dims[i % 7];
      const bool causal = (i / 2) % 2 == 0;
      const char* dtype = i % 2 == 0 ? "bf16" : "f16";
      // Batch x heads shrink as S x T grows: the interpreter works in double on the CPU.
      const int64_t work = c.s * c.t * d;
      const int hb = work > (int64_t{1} << 28) ? 0 : work > (int64_t{1} << 24) ? 1 : work > (int64_t{1} << 20) ? 2 : 3;
      const double scale = variant == 0 ? 0.0 : 1.5;  // 1.5: peaked softmax rows
      CheckAttention(absl::StrFormat("attn_%s_S%d_T%d_D%d_%s_bh%d_scale%g", dtype, c.s, c.t, d,
                                     causal ? "causal" : "full", heads[hb][0] * heads[hb][1], scale),
                     Plain(dtype, heads[hb][0], heads[hb][1], c.s, c.t, d, causal, scale));
    }
  }
}

TEST_F(AttentionGpuTest, HeadDimsAndBatchHeads) {
  for (int64_t d : {32, 48, 64, 80, 96, 128, 256}) {
    CheckAttention(absl::StrFormat("attn_bf16_D%d_bh64", d), Plain("bf16", 4, 16, 97, 130, d, true, 0.0));
  }
  // E != D.
  CheckAttention("attn_f16_D64_E128", R"(graph g(q: f16[2,3,70,64], k: f16[2,3,90,64], v: f16[2,3,90,128]) {
      y = attention(q, k, v) {causal = true, scale = 0.2}
      return y })");
}

TEST_F(AttentionGpuTest, ProjectionLayoutsFoldIntoLoadsAndStore) {
  for (bool causal : {true, false}) {
    CheckAttention(absl::StrFormat("attn_qkv_bf16_%s", causal ? "causal" : "full"),
                   testing_codegen::QkvGraph("bf16", 2, 300, 4, 64, causal));
    CheckAttention(absl::StrFormat("attn_qkv_f16_D128_%s", causal ? "causal" : "full"),
                   testing_codegen::QkvGraph("f16", 1, 257, 3, 128, causal));
  }
}

TEST_F(AttentionGpuTest, Masks) {
  // Padding [B,1,1,T], with whole rows of keys masked for one batch.
  CheckAttention("attn_mask_padding", R"(graph g(q: bf16[2,4,100,64], k: bf16[2,4,300,64], v: bf16[2,4,300,64], m: bf16[2,1,1,300]) {
      y = attention(q, k, v, m) {causal = false, scale = 0.0}
      return y })");
  // [1,1,S,T] shared by batch and heads, causal on top; [B,H,S,T].
  CheckAttention("attn_mask_square_causal", R"(graph g(q: f16[2,2,77,96], k: f16[2,2,77,96], v: f16[2,2,77,96], m: f16[1,1,77,77]) {
      y = attention(q, k, v, m) {causal = true, scale = 0.0}
      return y })");
  CheckAttention("attn_mask_full", R"(graph g(q: bf16[2,3,65,32], k: bf16[2,3,129,32], v: bf16[2,3,129,32], m: bf16[2,3,65,129]) {
      y = attention(q, k, v, m) {causal = false, scale = 0.0}
      return y })");
  // A boolean keep mask, as exporters write it (match_attention turns where(m, s, -inf) into
  // an additive operand): the mask is -inf where false, and rows entirely false give 0.
  CheckAttention("attn_mask_bool", R"(graph g(q: bf16[1,2,40,64], k: bf16[1,2,50,64], v: bf16[1,2,50,64], m: bool[1,1,40,50]) {
      kt = transpose(k) {perm = [0, 1, 3, 2]}
      s = matmul(q, kt)
      c: bf16[] = constant() {data = [0.125]}
      ss = mul(s, c)
      ninf: bf16[] = constant() {data = [-inf]}
      w = where(m, ss, ninf)
      p = softmax(w) {axis = 3}
      y = matmul(p, v)
      return y })");
  // Fully masked rows through an additive -inf mask: rows of the mask that are all -inf.
  std::map<std::string, Tensor> inputs;
  Tensor m(DType::kBF16, Shape{1, 1, 33, 70});
  for (int64_t i = 0; i < 33; ++i) {
    for (int64_t j = 0; j < 70; ++j) {
      const bool masked = i % 5 == 0 || (j % 3 == 0 && i % 2 == 0);
      m.SetF64(i * 70 + j, masked ? -std::numeric_limits<double>::infinity() : 0.25 * ((i + j) % 4));
    }
  }
  inputs.emplace("m", m);
  CheckOptions options;
  options.inputs = &inputs;
  CheckAttention("attn_mask_fully_masked_rows", R"(graph g(q: bf16[1,3,33,64], k: bf16[1,3,70,64], v: bf16[1,3,70,64], m: bf16[1,1,33,70]) {
      y = attention(q, k, v, m) {causal = false, scale = 0.0}
      return y })", options);
}

TEST_F(AttentionGpuTest, GroupedQueryHeads) {
  for (int group : {1, 2, 4, 8}) {
    CheckAttention(absl::StrFormat("attn_gqa_group%d", group),
                   testing_codegen::GqaGraph("bf16", 2, 8, 8 / group, 50, 200, 64, true, 0.0));
  }
}

// Decoding: the query heads of a group packed into one block's rows (group 8, 4, 2), key tiles
// split over blocks and merged (flash-decoding), causal with S < T, a padding mask.
TEST_F(AttentionGpuTest, DecodingPacksGroupsAndSplitsKeys) {
  struct Case {
    int64_t b, hq, hkv, s, t;
    bool causal, mask;
  };
  for (const Case& c : {Case{4, 32, 4, 1, 4097, false, false}, Case{2, 16, 4, 5, 3000, true, false},
                        Case{3, 8, 4, 16, 1000, false, true}, Case{1, 8, 1, 1, 20000, false, false}}) {
    const std::string text = testing_codegen::GqaGraph("bf16", c.b, c.hq, c.hkv, c.s, c.t, 128, c.causal, 0.0, c.mask);
    auto analysis = Analyze(Parse(text), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << analysis.status();
    const Region* region = testing_codegen::AttentionRegion(*analysis);
    ASSERT_TRUE(region != nullptr && region->attention);
    EXPECT_EQ(region->attention->group, c.hq / c.hkv);
    const KernelParams d = DefaultParams(*region, analysis->plan.device);
    EXPECT_GT(d.split, 1) << "few K/V batches with long keys are split";
    CheckAttention(absl::StrFormat("attn_decode_b%d_hq%d_hkv%d_S%d_T%d%s%s", c.b, c.hq, c.hkv, c.s, c.t,
                                   c.causal ? "_causal" : "", c.mask ? "_mask" : ""),
                   text);
  }
}

// f32 runs as 3xTF32 products and is held to the f32 kernel tolerance (1e-5 + 1e-4 |ref|):
// lengths short and long, S != T, head dims 32-256, causal or not, peaked softmax rows, a
// padding mask, grouped heads decoding with split keys, and the projection layouts folded.
TEST_F(AttentionGpuTest, F32AtF32Tolerance) {
  struct Case {
    int64_t s, t, d;
    bool causal;
    double scale;
  };
  for (const Case& c : {Case{1, 1, 64, false, 0.0}, Case{7, 64, 32, true, 0.0}, Case{127, 1000, 64, false, 1.5},
                        Case{1000, 127, 80, true, 0.0}, Case{300, 333, 128, true, 1.5}, Case{200, 200, 256, false, 0.0},
                        Case{1, 4097, 128, false, 0.0}, Case{2048, 2048, 64, true, 0.0}}) {
    const int64_t heads = c.s * c.t > (1 << 20) ? 1 : 3;
    CheckAttention(absl::StrFormat("attn_f32_S%d_T%d_D%d_%s_scale%g", c.s, c.t, c.d, c.causal ? "causal" : "full",
                                   c.scale),
                   Plain("f32", 2, heads, c.s, c.t, c.d, c.causal, c.scale));
  }
  CheckAttention("attn_f32_mask_padding", R"(graph g(q: f32[2,4,100,64], k: f32[2,4,300,64], v: f32[2,4,300,64], m: f32[2,1,1,300]) {
      y = attention(q, k, v, m) {causal = false, scale = 0.0}
      return y })");
  CheckAttention("attn_f32_decode_gqa", testing_codegen::GqaGraph("f32", 2, 16, 4, 1, 3000, 64, false, 0.0));
  CheckAttention("attn_f32_qkv_causal", testing_codegen::QkvGraph("f32", 2, 130, 4, 64, true));
}

// attention_lse beside its attention: the kernel writes the rows' log-sum-exp (f32, held to
// the f32 tolerance against the interpreter's double), on the sm_90a wgmma kernel (bf16, large
// enough not to split), the mma.sync kernel (f16 with a mask whose rows are partly fully
// masked: +inf there), f32, and split decoding (the merge writes it).
TEST_F(AttentionGpuTest, LogSumExpBesideTheOutput) {
  auto with_lse = [](const std::string& dtype, const std::string& shape_q, const std::string& shape_kv,
                     const std::string& mask_decl, bool causal) {
    const std::string c = causal ? "true" : "false";
    return "graph g(q: " + dtype + shape_q + ", k: " + dtype + shape_kv + ", v: " + dtype + shape_kv + mask_decl +
           ") {\n  y = attention(q, k, v" + (mask_decl.empty() ? "" : ", m") + ") {causal = " + c +
           ", scale = 0.0}\n  l = attention_lse(q, k" + (mask_decl.empty() ? "" : ", m") + ") {causal = " + c +
           ", scale = 0.0}\n  return y, l\n}\n";
  };
  CheckAttention("attn_lse_bf16_wgmma_causal", with_lse("bf16", "[1,64,512,128]", "[1,64,512,128]", "", true));
  CheckAttention("attn_lse_bf16_D64", with_lse("bf16", "[2,3,300,64]", "[2,3,333,64]", "", false));
  std::map<std::string, Tensor> inputs;
  Tensor m(DType::kF16, Shape{1, 1, 33, 70});
  for (int64_t i = 0; i < 33; ++i) {
    for (int64_t j = 0; j < 70; ++j) {
      m.SetF64(i * 70 + j, i % 5 == 0 ? -std::numeric_limits<double>::infinity() : 0.25 * ((i + j) % 4));
    }
  }
  inputs.emplace("m", m);
  CheckOptions options;
  options.inputs = &inputs;
  CheckAttention("attn_lse_f16_mask_fully_masked_rows",
                 with_lse("f16", "[1,3,33,64]", "[1,3,70,64]", ", m: f16[1,1,33,70]", false), options);
  CheckAttention("attn_lse_f32_causal", with_lse("f32", "[2,2,200,64]", "[2,2,200,64]", "", true));
  CheckAttention("attn_lse_f32_decode_split", with_lse("f32", "[2,4,1,64]", "[2,4,5000,64]", "", false));
}

// Long keys make L2 sections of a few K/V batches (BlockRows): 5 batches of 64k keys at D 32
// are sections of 4 and 1, so a block whose batch or query block is misplaced leaves rows
// unwritten (poisoned) or writes another's. The default (mma.sync with the keys split over
// blocks, whose partials are indexed by the query block) and, on sm_90, a wgmma candidate.
TEST_F(AttentionGpuTest, BlocksRunInL2SectionsOfBatches) {
  const std::string text = Plain("bf16", 1, 5, 130, 65536, 32, false, 0.0);
  auto analysis = Analyze(Parse(text), AnalyzeOptions{});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  const Region* region = testing_codegen::AttentionRegion(*analysis);
  ASSERT_TRUE(region != nullptr && region->attention);
  ASSERT_EQ(AttentionL2Section(*region->attention), 4);
  std::vector<KernelParams> runs = {DefaultParams(*region, analysis->plan.device)};
  EXPECT_GT(runs[0].split, 1);
  for (const KernelParams& p : CandidateParams(*region, analysis->plan.device)) {
    if (p.wgmma) {
      runs.push_back(p);
      break;
    }
  }
  EXPECT_EQ(runs.size(), analysis->plan.device.wgmma ? 2u : 1u);
  for (const KernelParams& p : runs) {
    CheckOptions options;
    options.params = p;
    testing_gpu::CheckRegion(absl::StrFormat("attn_l2_sections_4_1_%s", p.ToString()), *analysis->graph, *region,
                             options);
  }
}

// Dropout on the probabilities (docs/dropout.md), regenerated per tile. With V the identity
// (E = T) the output is the dropped probabilities themselves, y[b, i, j] = keep_ij p_ij / (1 - p),
// and with scale 0.01 every p_ij is near 1 / T, far above the tolerance: an element whose keep
// bit differs from the interpreter's (DropoutKeep of index (b S + i) T + j) fails the check.
// The mma.sync kernel (S 37), the wgmma kernel's 3-stage (D 64, causal) and 2-stage (D 128)
// loops, f32, seed and offset as run-time inputs, every tuning candidate of one shape; then
// plain values at odd T (a lane's two keys straddle two Philox groups), a mask, and grouped
// heads decoding with split keys.
TEST_F(AttentionGpuTest, DropoutRegeneratesTheDropoutOpsMask) {
  struct Case {
    const char* dtype;
    int64_t h, s, t, d;
    bool causal, runtime_seed;
    double p;
  };
  const Case cases[] = {{"bf16", 3, 37, 72, 64, false, false, 0.2}, {"bf16", 2, 100, 128, 64, true, true, 0.5},
                        {"f16", 2, 130, 128, 128, false, true, 0.1}, {"f32", 2, 33, 40, 32, true, false, 0.3}};
  for (const Case& c : cases) {
    const std::string seeds = c.runtime_seed ? ", seed: i64[], off: i64[]" : "";
    const std::string text = absl::StrFormat(
        R"(graph g(q: %1$s[1,%2$d,%3$d,%5$d], k: %1$s[1,%2$d,%4$d,%5$d], v: %1$s[1,%2$d,%4$d,%4$d]%6$s) {
      y = attention(q, k, v%7$s) {causal = %8$s, scale = 0.01, dropout = %9$g, seed = 77, offset = 5}
      return y })",
        c.dtype, c.h, c.s, c.t, c.d, seeds, c.runtime_seed ? ", seed, off" : "", c.causal ? "true" : "false", c.p);
    std::map<std::string, Tensor> inputs;
    Tensor v(ParseDType(c.dtype).value(), Shape{1, c.h, c.t, c.t});
    for (int64_t e = 0; e < v.num_elements(); ++e) v.SetF64(e, (e / c.t) % c.t == e % c.t ? 1.0 : 0.0);
    inputs.emplace("v", v);
    CheckOptions options;
    options.inputs = &inputs;
    const std::string label = absl::StrFormat("attn_dropout_%s_S%d_T%d_D%d_p%g", c.dtype, c.s, c.t, c.d, c.p);
    CheckAttention(label, text, options);
    if (&c != &cases[1]) continue;
    auto analysis = Analyze(Parse(text), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << analysis.status();
    const Region* region = testing_codegen::AttentionRegion(*analysis);
    ASSERT_NE(region, nullptr);
    for (const KernelParams& p : CandidateParams(*region, analysis->plan.device)) {
      options.params = p;
      testing_gpu::CheckRegion(absl::StrFormat("%s_%s", label, p.ToString()), *analysis->graph, *region, options);
    }
  }
  CheckAttention("attn_dropout_odd_T_mask", R"(graph g(q: bf16[2,3,50,64], k: bf16[2,3,77,64], v: bf16[2,3,77,64], m: bf16[2,1,1,77]) {
      y = attention(q, k, v, m) {causal = false, scale = 0.0, dropout = 0.25, seed = 3}
      return y })");
  std::string decode = testing_codegen::GqaGraph("bf16", 2, 16, 2, 1, 3001, 128, false, 0.0);
  const std::string plain = "{causal = false, scale = 0.000000}";
  ASSERT_NE(decode.find(plain), std::string::npos) << decode;
  decode.replace(decode.find(plain), plain.size(), "{causal = false, scale = 0.0, dropout = 0.1, seed = 11}");
  CheckAttention("attn_dropout_decode_gqa_split", decode);
}

TEST_F(AttentionGpuTest, EveryTuningCandidate) {
  const std::string graphs[] = {Plain("bf16", 2, 3, 300, 333, 64, true, 0.0), Plain("f16", 1, 4, 129, 257, 128, false, 0.0),
                                Plain("bf16", 1, 2, 100, 100, 256, true, 0.0), Plain("f16", 8, 4, 1, 2000, 128, false, 0.0),
                                Plain("bf16", 1, 2, 700, 3000, 64, true, 0.0), Plain("f32", 2, 3, 300, 333, 64, true, 0.0)};
  for (const std::string& text : graphs) {
    auto analysis = Analyze(Parse(text), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << analysis.status();
    const Region* region = testing_codegen::AttentionRegion(*analysis);
    ASSERT_NE(region, nullptr);
    for (const KernelParams& p : CandidateParams(*region, analysis->plan.device)) {
      CheckOptions options;
      options.params = p;
      testing_gpu::CheckRegion(absl::StrFormat("attn_candidate_%s", p.ToString()), *analysis->graph, *region, options);
    }
  }
}

}  // namespace
}  // namespace kiln
