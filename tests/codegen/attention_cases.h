// Attention graphs shared by the attention tests (CPU, NVRTC, GPU).
#ifndef KILN_TESTS_CODEGEN_ATTENTION_CASES_H_
#define KILN_TESTS_CODEGEN_ATTENTION_CASES_H_

#include <string>

#include "absl/strings/str_replace.h"
#include "api/compiler.h"

namespace kiln::testing_codegen {

inline const Region* AttentionRegion(const Analysis& a) {
  for (const Region& r : a.plan.regions) {
    if (r.kind == RegionKind::kAttention) return &r;
  }
  return nullptr;
}

// A GPT-style block's attention: q, k, v sliced out of one [tokens, 3 x hidden] projection,
// heads split and merged around it.
inline std::string QkvGraph(const std::string& dtype, int B, int S, int H, int D, bool causal) {
  const int hidden = H * D;
  return absl::StrReplaceAll(
      R"(graph g(qkv: DT[BS,H3]) {
        q2 = slice(qkv) {starts = [0, 0], ends = [BS, HD], steps = [1, 1]}
        k2 = slice(qkv) {starts = [0, HD], ends = [BS, HD2], steps = [1, 1]}
        v2 = slice(qkv) {starts = [0, HD2], ends = [BS, H3], steps = [1, 1]}
        q4 = reshape(q2) {shape = [B, S, H, D]}
        k4 = reshape(k2) {shape = [B, S, H, D]}
        v4 = reshape(v2) {shape = [B, S, H, D]}
        q = transpose(q4) {perm = [0, 2, 1, 3]}
        k = transpose(k4) {perm = [0, 2, 1, 3]}
        v = transpose(v4) {perm = [0, 2, 1, 3]}
        a = attention(q, k, v) {causal = CAUSAL, scale = 0.0}
        t = transpose(a) {perm = [0, 2, 1, 3]}
        y = reshape(t) {shape = [BS, HD]}
        return y
      })",
      {{"DT", dtype}, {"BS", std::to_string(B * S)}, {"H3", std::to_string(3 * hidden)},
       {"HD2", std::to_string(2 * hidden)}, {"HD", std::to_string(hidden)}, {"B", std::to_string(B)},
       {"S", std::to_string(S)}, {"H", std::to_string(H)}, {"D", std::to_string(D)},
       {"CAUSAL", causal ? "true" : "false"}});
}

// Grouped-query attention as exporters write it: K/V with `hkv` heads unsqueezed, broadcast to
// `hq / hkv` copies and merged into `hq` heads; an optional [B,1,1,T] additive mask.
inline std::string GqaGraph(const std::string& dtype, int64_t b, int64_t hq, int64_t hkv, int64_t s, int64_t t,
                            int64_t d, bool causal, double scale, bool mask = false) {
  const int64_t g = hq / hkv;
  auto shape = [](std::initializer_list<int64_t> dims) {
    std::string out;
    for (int64_t x : dims) out += (out.empty() ? "" : ", ") + std::to_string(x);
    return out;
  };
  std::string text = "graph g(q: " + dtype + "[" + shape({b, hq, s, d}) + "], k: " + dtype + "[" +
                     shape({b, hkv, t, d}) + "], v: " + dtype + "[" + shape({b, hkv, t, d}) + "]" +
                     (mask ? ", m: " + dtype + "[" + shape({b, 1, 1, t}) + "]" : "") + ") {\n";
  for (const char* x : {"k", "v"}) {
    const std::string n(x);
    text += "  " + n + "5 = reshape(" + n + ") {shape = [" + shape({b, hkv, 1, t, d}) + "]}\n";
    text += "  " + n + "e = broadcast_to(" + n + "5) {shape = [" + shape({b, hkv, g, t, d}) + "]}\n";
    text += "  " + n + n + " = reshape(" + n + "e) {shape = [" + shape({b, hq, t, d}) + "]}\n";
  }
  text += std::string("  y = attention(q, kk, vv") + (mask ? ", m" : "") + ") {causal = " +
          (causal ? "true" : "false") + ", scale = " + std::to_string(scale) + "}\n  return y\n}\n";
  return text;
}

}  // namespace kiln::testing_codegen

#endif  // KILN_TESTS_CODEGEN_ATTENTION_CASES_H_
