// Helpers shared by the codegen tests: graphs from IR text or example files, analysed on the
// h100 spec, and the small regions the golden and NVRTC tests use.
#ifndef KILN_TESTS_CODEGEN_CODEGEN_TEST_UTIL_H_
#define KILN_TESTS_CODEGEN_CODEGEN_TEST_UTIL_H_

#include <string>
#include <vector>

#include "api/compiler.h"
#include "codegen/emit_kernel.h"
#include "gtest/gtest.h"
#include "ir/parser.h"

namespace kiln::testing_codegen {

// `device`: a named spec ("h200"), or "" for AnalyzeOptions' default.
inline Analysis AnalyzeText(const std::string& text, const DebugOptions& debug = {}, const std::string& device = "") {
  auto graph = ParseGraph(text);
  EXPECT_TRUE(graph.ok()) << graph.status();
  AnalyzeOptions options;
  options.debug = debug;
  if (!device.empty()) options.device = device;
  auto analysis = Analyze(std::move(*graph), options);
  EXPECT_TRUE(analysis.ok()) << analysis.status();
  return std::move(*analysis);
}

inline Analysis AnalyzeFile(const std::string& path) {
  auto graph = LoadGraph(path);
  EXPECT_TRUE(graph.ok()) << graph.status();
  auto analysis = Analyze(std::move(*graph), AnalyzeOptions{});
  EXPECT_TRUE(analysis.ok()) << analysis.status();
  return std::move(*analysis);
}

// The regions that get a generated kernel.
inline std::vector<const Region*> KernelRegions(const FusionPlan& plan) {
  std::vector<const Region*> out;
  for (const Region& r : plan.regions) {
    if (HasKernel(r.kind)) out.push_back(&r);
  }
  return out;
}

// A small region per emitter path, as IR text: the golden tests print them and the NVRTC test
// compiles them (the examples alone do not reach layout, other reductions, dropout or gather).
struct SmallCase {
  std::string name;   // golden file tests/codegen/testdata/<name>.cu
  std::string text;   // IR text; the case's kernel is the last kernel region of its plan
  int64_t chunk = -1; // >= 0: override KernelParams::chunk (forces the streamed row path)
};

inline std::vector<SmallCase> SmallCases() {
  return {
      {"pointwise_bias_gelu",
       R"(graph bias_gelu(x: bf16[6,64], b: bf16[64]) {
            t = add(x, b)
            y = gelu_tanh(t)
            return y
          })"},
      {"pointwise_dropout_broadcast",
       R"(graph dropout_bcast(x: bf16[5,7], b: f32[7]) {
            d = dropout(x) {p = 0.25, seed = 7, offset = 3}
            f = cast(d) {dtype = "f32"}
            y = add(f, b)
            return y
          })"},
      {"layout_transpose",
       R"(graph transpose(x: f32[4,6,8]) {
            y = transpose(x) {perm = [2, 0, 1]}
            return y
          })"},
      {"pointwise_transpose_add",  // tiled: x staged, y read along a, 64 x 64 tiles of 4-float vectors
       R"(graph transpose_add(x: f32[96,64], y: f32[64,96]) {
            t = transpose(x) {perm = [1, 0]}
            z = add(t, y)
            return z
          })"},
      {"layout_permute_bshd",  // [B,S,H,D] -> [B,H,S,D] keeps the innermost axis: 16-byte vectors, divisions once per vector
       R"(graph permute_bshd(x: bf16[2,8,4,16]) {
            y = transpose(x) {perm = [0, 2, 1, 3]}
            return y
          })"},
      {"layout_permute_021",  // tiled: [B,M,N] -> [B,N,M], B a rest axis, odd extents: scalar tiles
       R"(graph permute_021(x: f16[3,40,33]) {
            y = transpose(x) {perm = [0, 2, 1]}
            return y
          })"},
      {"layout_permute_102",  // [M,N,K] -> [N,M,K] keeps the innermost axis: 16-byte vectors, divisions once per vector
       R"(graph permute_102(x: f32[5,6,32]) {
            y = transpose(x) {perm = [1, 0, 2]}
            return y
          })"},
      {"layout_concat_rows",  // concat along a non-innermost axis: the piece is the same for a vector
       R"(graph concat_rows(a: bf16[3,16], b: bf16[5,16]) {
            y = concat(a, b) {axis = 0}
            return y
          })"},
      {"pointwise_rotary",  // the halves of a head are multiples of the vector: one select per vector
       R"(graph rotary(x: bf16[2,3,16], c: bf16[3,16], s: bf16[3,16]) {
            x1 = slice(x) {starts = [0, 0, 0], ends = [2, 3, 8]}
            x2 = slice(x) {starts = [0, 0, 8], ends = [2, 3, 16]}
            n = neg(x2)
            r = concat(n, x1) {axis = 2}
            a = mul(x, c)
            b = mul(r, s)
            y = add(a, b)
            return y
          })"},
      {"layout_patchify",  // innermost axis of 3 channels: vectors of (pixel, channel), each lane gathered
       R"(graph patchify(x: f16[1,3,32,32]) {
            x6 = reshape(x) {shape = [1, 3, 2, 16, 2, 16]}
            t = transpose(x6) {perm = [0, 2, 4, 3, 5, 1]}
            y = reshape(t) {shape = [1, 4, 768]}
            return y
          })"},
      {"layout_concat",
       R"(graph concat(a: f16[3,4], b: f16[3,5]) {
            y = concat(a, b) {axis = 1}
            return y
          })"},
      {"pointwise_slice",
       R"(graph slice(c: f16[3,9]) {
            s = slice(c) {starts = [0, 1], ends = [3, 9], steps = [1, 2]}
            y = neg(s)
            return y
          })"},
      {"pointwise_gather",
       R"(graph gather(w: f32[10,8], i: i64[3]) {
            g = gather(w, i) {axis = 0}
            y = relu(g)
            return y
          })"},
      {"column_reduction",
       R"(graph colsum(x: bf16[33,48]) {
            e = exp(x)
            s = reduce_sum(e) {axes = [0], keep_dims = false}
            return s
          })"},
      {"column_softmax",
       R"(graph colsoftmax(x: f32[4,33,48]) {
            y = softmax(x) {axis = 1}
            return y
          })"},
      {"row_softmax_cached",
       R"(graph softmax(x: bf16[7,40]) {
            y = softmax(x) {axis = -1}
            return y
          })"},
      {"row_layernorm_cached",
       R"(graph layernorm(x: bf16[3,2048], w: bf16[2048], b: bf16[2048]) {
            y = layer_norm(x, w, b) {axis = -1, eps = 1e-05}
            return y
          })"},
      {"row_dropout_add_rmsnorm",
       R"(graph dropout_add_rmsnorm(x: bf16[3,64], res: bf16[3,64], w: bf16[64]) {
            xd = dropout(x) {p = 0.1, seed = 1234, offset = 0}
            h = add(xd, res)
            y = rms_norm(h, w) {axis = -1, eps = 1e-06}
            return h, y
          })"},
      {"row_xent_streamed",
       R"(graph xent(logits: bf16[7,1000], targets: i64[7]) {
            loss = cross_entropy(logits, targets) {reduction = "mean", ignore_index = -100}
            return loss
          })",
       /*chunk=*/512},
  };
}

// Emits the last kernel region of `c` with DefaultParams (and the case's chunk override).
inline absl::StatusOr<KernelSource> EmitSmallCase(const SmallCase& c, Analysis* keep) {
  *keep = AnalyzeText(c.text);
  std::vector<const Region*> regions = KernelRegions(keep->plan);
  if (regions.empty()) return absl::NotFoundError("no kernel region");
  const Region& region = *regions.back();
  KernelParams params = DefaultParams(region, keep->plan.device);
  if (c.chunk >= 0) {
    params.chunk = c.chunk;
    if (c.chunk > 0 && params.rows_per_block == 1) params.block_size = 32;  // 32 x 8 x 2 = 512
    if (c.chunk > 0 && params.rows_per_block != 1) params.chunk = 32 * params.vector_width * 2;
  }
  return EmitKernel(region, params);
}

}  // namespace kiln::testing_codegen

#endif  // KILN_TESTS_CODEGEN_CODEGEN_TEST_UTIL_H_
