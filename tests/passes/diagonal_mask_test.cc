// diagonal_mask: a causal mask written as ops on indices (torch's ONNX export of
// is_causal=True, a Trilu through the importer) is recognised at any sequence length without
// evaluating it; masks that differ from j <= i anywhere, or that read a run-time input, are not.
#include "passes/diagonal_mask.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "passes/match_attention.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/filecheck.h"

namespace kiln {
namespace {

using testing::Parse;
using testing::RunPass;

// The exporter's causal mask over an S x T plane, as the ONNX importer writes Trilu:
//   ones = broadcast(1.0); tril = where(j - i <= K, ones, 0); mask = where(tril == 0, -inf, 0)
// with `K` the Trilu diagonal and `CMP` its comparison (le: lower, ge: upper).
std::string ExportedMask(int64_t s, int64_t t, int64_t k, const std::string& cmp) {
  return absl::StrReplaceAll(R"(
    one: f32[] = constant() {data = [1]}
    ones: f32[S,T] = broadcast_to(one) {shape = [S, T]}
    i: i64[S,T] = iota() {axis = 0, dtype = "i64", shape = [S, T]}
    j: i64[S,T] = iota() {axis = 1, dtype = "i64", shape = [S, T]}
    d: i64[S,T] = sub(j, i)
    kc: i64[] = constant() {data = [K]}
    keep: bool[S,T] = CMP(d, kc)
    zero: f32[] = constant() {data = [0]}
    tril: f32[S,T] = where(keep, ones, zero)
    masked: bool[S,T] = eq(tril, zero)
    ninf: f32[] = constant() {data = [-inf]}
    mask: f32[S,T] = where(masked, ninf, zero)
)",
                             {{"S", absl::StrCat(s)}, {"T", absl::StrCat(t)}, {"K", absl::StrCat(k)}, {"CMP", cmp}});
}

std::unique_ptr<Graph> MaskGraph(int64_t s, int64_t t, int64_t k, const std::string& cmp) {
  return Parse(absl::StrCat("graph g() {", ExportedMask(s, t, k, cmp), "    return mask\n  }"));
}

IndexMaskVerdict Additive(const Graph& g, int64_t s, int64_t t) {
  return AnalyzeIndexMask(g.outputs()[0].node, s, t, [](double x) { return x == 0; });
}
bool AdditiveCausal(const Graph& g, int64_t s, int64_t t) { return Additive(g, s, t).causal; }

TEST(DiagonalMaskTest, TheExportersCausalMaskIsCausalAtAnyLength) {
  for (int64_t n : {1, 7, 1024, 4096}) {
    auto g = MaskGraph(n, n, 0, "le");
    EXPECT_TRUE(AdditiveCausal(*g, n, n)) << n;
  }
  // A plane that differs anywhere is not: the upper triangle, a shifted diagonal.
  EXPECT_FALSE(AdditiveCausal(*MaskGraph(1024, 1024, 0, "ge"), 1024, 1024));
  EXPECT_FALSE(AdditiveCausal(*MaskGraph(1024, 1024, -1, "le"), 1024, 1024));
  EXPECT_FALSE(AdditiveCausal(*MaskGraph(1024, 1024, 1, "le"), 1024, 1024));
  // j <= i on a 3 x 5 plane keeps the same elements as j - i <= 0 there.
  EXPECT_TRUE(AdditiveCausal(*MaskGraph(3, 5, 0, "le"), 3, 5));
  // One query row (decoding): i = 0, so j <= i keeps key 0 alone; the mask is a function of j.
  EXPECT_TRUE(AdditiveCausal(*MaskGraph(1, 300, 0, "le"), 1, 300));
  EXPECT_FALSE(AdditiveCausal(*MaskGraph(1, 300, 1, "le"), 1, 300));
  // A plane of another size than the attention's is not taken for it.
  EXPECT_FALSE(AdditiveCausal(*MaskGraph(8, 8, 0, "le"), 16, 16));
  // The reasons name what was proven, or where the mask differs.
  EXPECT_EQ(Additive(*MaskGraph(1024, 1024, 0, "le"), 1024, 1024).why,
            "a function of j - i (12 nodes of iotas, constants and pointwise ops), j <= i on all 2047 diagonals");
  EXPECT_EQ(Additive(*MaskGraph(1024, 1024, -1, "le"), 1024, 1024).why,
            "a function of j - i (12 nodes) that masks the diagonal j - i = 0, which causal keeps");
  EXPECT_THAT(Additive(*MaskGraph(8, 8, 0, "le"), 16, 16).why, ::testing::HasSubstr("does not lie on the 16 x 16 plane"));
}

// A comparison of i with a scaled j depends on more than j - i: not provable, so not causal.
TEST(DiagonalMaskTest, IndexFunctionsOfMoreThanTheDiagonalAreRefused) {
  auto g = Parse(R"(graph g() {
    i: i64[64,64] = iota() {axis = 0, dtype = "i64", shape = [64, 64]}
    j: i64[64,64] = iota() {axis = 1, dtype = "i64", shape = [64, 64]}
    two: i64[] = constant() {data = [2]}
    j2: i64[64,64] = mul(j, two)
    keep: bool[64,64] = le(j2, i)
    return keep
  })");
  const IndexMaskVerdict v = AnalyzeIndexMask(g->outputs()[0].node, 64, 64, [](double x) { return x != 0; });
  EXPECT_FALSE(v.causal);
  EXPECT_EQ(v.why, "keep (le): compares values that depend on i and j, not on j - i alone");
}

// A mask that reads a run-time input is data, not indices.
TEST(DiagonalMaskTest, AMaskOfAnInputIsNotAnalysed) {
  auto g = Parse(R"(graph g(m: f32[64,64]) {
    i: i64[64,64] = iota() {axis = 0, dtype = "i64", shape = [64, 64]}
    j: i64[64,64] = iota() {axis = 1, dtype = "i64", shape = [64, 64]}
    keep: bool[64,64] = le(j, i)
    ninf: f32[] = constant() {data = [-inf]}
    y: f32[64,64] = where(keep, m, ninf)
    return y
  })");
  const IndexMaskVerdict v = AnalyzeIndexMask(g->outputs()[0].node, 64, 64, [](double x) { return x == 0; });
  EXPECT_FALSE(v.causal);
  EXPECT_EQ(v.why, "m (input): a graph input: the mask is data");
}

// The whole pattern at 1024 tokens: attention becomes causal and reads no mask.
TEST(DiagonalMaskTest, MatchAttentionTakesTheExportedMaskAsCausal) {
  auto g = Parse(absl::StrCat(R"(graph g(q: bf16[2,4,1024,64], k: bf16[2,4,1024,64], v: bf16[2,4,1024,64]) {)",
                              absl::StrReplaceAll(ExportedMask(1024, 1024, 0, "le"), {{"f32[", "bf16["}}), R"(
    kt: bf16[2,4,64,1024] = transpose(k) {perm = [0, 1, 3, 2]}
    s: bf16[2,4,1024,1024] = matmul(q, kt)
    sm: bf16[2,4,1024,1024] = add(s, mask)
    p: bf16[2,4,1024,1024] = softmax(sm) {axis = 3}
    y: bf16[2,4,1024,64] = matmul(p, v)
    return y
  })"));
  MatchAttention pass;
  EXPECT_TRUE(RunPass(pass, *g));
  // The match is a decision with its reason, for `kiln dump` and the ledger.
  const std::vector<PassDecision> decisions = pass.TakeDecisions();
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_TRUE(decisions[0].decision);
  EXPECT_EQ(decisions[0].decision.reason(),
            "mask mask is causal: a function of j - i (12 nodes of iotas, constants and pointwise ops), j <= i on all 2047 diagonals; "
            "attention skips the masked key tiles and never reads a mask");
  const std::string out = PrintGraph(*g);
  EXPECT_TRUE(FileCheck(out, "CHECK: attention(q, k, v) {causal = true, dropout = 0.0, offset = 0, scale = 1.0, seed = 0}"))
      << out;
  EXPECT_EQ(out.find("iota"), std::string::npos) << "the mask's nodes are dead and gone:\n" << out;
}

}  // namespace
}  // namespace kiln
