// The graphs of the tiled transpose kernel's tests (templates/layout.cuh, codegen/emit_layout.cc):
// codegen_layout_nvrtc_test compiles every KernelParams candidate of each, the region GPU test
// runs every candidate against the interpreter. Cases: a transpose feeding an add in 2-D with
// odd extents (1, 7, 33, 1000, 4097), one row, one column and extents that allow 16-byte vectors,
// in f32, f16 and bf16; permutes of 3 to 6 axes (size-1 axes, axes that merge, a transposed
// reshape, one that keeps the innermost axis); and several reads: two staged through one
// permutation (mixed dtypes), two permutations, broadcasts along either tile axis, an output
// written through a transpose, two outputs, dropout after a transpose.
#ifndef KILN_TESTS_CODEGEN_LAYOUT_CASES_H_
#define KILN_TESTS_CODEGEN_LAYOUT_CASES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace kiln::testing_codegen {

// Rotary embeddings as ONNX exporters write them (Slice, Neg, Concat, Mul, Add): x of shape
// `lead` + [seq, head], rotated by halves of the head dim, with cos/sin tables [seq, head].
inline std::string RotaryGraph(const std::string& dtype, const std::vector<int64_t>& lead, int64_t seq, int64_t head) {
  auto dims = [&](int64_t last, int64_t fill = -1) {
    std::string out;
    for (int64_t d : lead) out += std::to_string(fill < 0 ? d : fill) + ", ";
    return out + std::to_string(fill < 0 ? seq : fill) + ", " + std::to_string(last);
  };
  const std::string full = dtype + "[" + dims(head) + "]", half = dtype + "[" + dims(head / 2) + "]";
  const std::string table = dtype + "[" + std::to_string(seq) + "," + std::to_string(head) + "]";
  const std::string ones = dims(1, 1), zeros = dims(0, 0), axis = std::to_string(lead.size() + 1);
  auto slice = [&](const std::string& name, int64_t start, int64_t end) {
    return "  " + name + ": " + half + " = slice(x) {ends = [" + dims(end) + "], starts = [" +
           zeros.substr(0, zeros.size() - 1) + std::to_string(start) + "], steps = [" + ones + "]}\n";
  };
  return "graph g(x: " + full + ", c: " + table + ", s: " + table + ") {\n" + slice("x1", 0, head / 2) +
         slice("x2", head / 2, head) + "  n: " + half + " = neg(x2)\n  r: " + full + " = concat(n, x1) {axis = " + axis +
         "}\n  a: " + full + " = mul(x, c)\n  b: " + full + " = mul(r, s)\n  y: " + full +
         " = add(a, b)\n  return y\n}\n";
}

inline std::vector<std::pair<std::string, std::string>> TiledLayoutGraphs() {
  std::vector<std::pair<std::string, std::string>> graphs;
  const char* kTransposeAdd = R"(graph g(x: %s[%d,%d], y: %s[%d,%d]) {
      t: %s[%d,%d] = transpose(x) {perm = [1, 0]}
      z: %s[%d,%d] = add(t, y)
      return z
    })";
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    for (auto [m, n] : {std::pair<int, int>{1, 7}, {7, 1}, {33, 1000}, {1000, 33}, {4097, 7}, {64, 4097}, {256, 512},
                        {1024, 1000}}) {
      graphs.push_back({absl::StrFormat("transpose_add_%s_%dx%d", dtype, m, n),
                        absl::StrFormat(kTransposeAdd, dtype, m, n, dtype, n, m, dtype, n, m, dtype, n, m)});
    }
  }
  const std::vector<std::pair<std::string, std::string>> others = {
      {"permute021_f32_5x33x1000", R"(graph g(x: f32[5,33,1000]) {
          y: f32[5,1000,33] = transpose(x) {perm = [0, 2, 1]}
          return y
        })"},
      {"permute021_bf16_2x64x128", R"(graph g(x: bf16[2,64,128]) {
          y: bf16[2,128,64] = transpose(x) {perm = [0, 2, 1]}
          return y
        })"},
      {"permute210_f16_7x9x40", R"(graph g(x: f16[7,9,40]) {
          y: f16[40,9,7] = transpose(x) {perm = [2, 1, 0]}
          return y
        })"},
      {"nchw_to_nhwc_f16_2x33x7x64", R"(graph g(x: f16[2,33,7,64]) {
          y: f16[2,7,64,33] = transpose(x) {perm = [0, 2, 3, 1]}
          return y
        })"},
      {"nhwc_to_nchw_bf16_2x16x17x64", R"(graph g(x: bf16[2,16,17,64]) {
          y: bf16[2,64,16,17] = transpose(x) {perm = [0, 3, 1, 2]}
          z: bf16[2,64,16,17] = neg(y)
          return z
        })"},
      {"permute3210_f32_3x5x7x9", R"(graph g(x: f32[3,5,7,9]) {
          y: f32[9,7,5,3] = transpose(x) {perm = [3, 2, 1, 0]}
          return y
        })"},
      {"permute5d_bf16", R"(graph g(x: bf16[3,5,7,33,64]) {
          t: bf16[5,64,3,33,7] = transpose(x) {perm = [1, 4, 0, 3, 2]}
          e: bf16[5,64,3,33,7] = exp(t)
          return e
        })"},
      {"permute6d_f32", R"(graph g(x: f32[2,3,4,5,6,7]) {
          y: f32[7,6,5,4,3,2] = transpose(x) {perm = [5, 4, 3, 2, 1, 0]}
          return y
        })"},
      {"permute6d_unit_axes_f16", R"(graph g(x: f16[2,1,3,1,32,64]) {
          y: f16[2,1,3,1,64,32] = transpose(x) {perm = [0, 1, 2, 3, 5, 4]}
          return y
        })"},
      {"transposed_reshape_f32", R"(graph g(x: f32[64,8,16]) {
          r: f32[64,128] = reshape(x) {shape = [64, 128]}
          y: f32[128,64] = transpose(r) {perm = [1, 0]}
          return y
        })"},
      {"bshd_to_bhsd_bf16_plain", R"(graph g(x: bf16[2,33,4,64]) {
          y: bf16[2,4,33,64] = transpose(x) {perm = [0, 2, 1, 3]}
          return y
        })"},
      {"two_staged_mixed_dtypes", R"(graph g(x: f32[256,320], w: bf16[256,320]) {
          tx: f32[320,256] = transpose(x) {perm = [1, 0]}
          tw: bf16[320,256] = transpose(w) {perm = [1, 0]}
          cw: f32[320,256] = cast(tw) {dtype = "f32"}
          s: f32[320,256] = mul(tx, cw)
          y: bf16[320,256] = cast(s) {dtype = "bf16"}
          return y
        })"},
      {"two_permutations", R"(graph g(x: f32[8,16,40], w: f32[40,8,16]) {
          tx: f32[40,16,8] = transpose(x) {perm = [2, 1, 0]}
          tw: f32[40,16,8] = transpose(w) {perm = [0, 2, 1]}
          y: f32[40,16,8] = sub(tx, tw)
          return y
        })"},
      {"broadcasts", R"(graph g(x: f16[96,200], c: f16[200,1], r: f16[96]) {
          t: f16[200,96] = transpose(x) {perm = [1, 0]}
          u: f16[200,96] = mul(t, c)
          y: f16[200,96] = add(u, r)
          return y
        })"},
      {"output_through_transpose", R"(graph g(a: bf16[130,72], b: bf16[130,72]) {
          s: bf16[130,72] = add(a, b)
          y: bf16[72,130] = transpose(s) {perm = [1, 0]}
          return y
        })"},
      {"two_outputs", R"(graph g(x: f32[100,64], y: f32[64,100]) {
          t: f32[64,100] = transpose(x) {perm = [1, 0]}
          z: f32[64,100] = add(t, y)
          e: f32[64,100] = exp(t)
          return z, e
        })"},
      {"dropout_after_transpose", R"(graph g(x: bf16[128,96]) {
          t: bf16[96,128] = transpose(x) {perm = [1, 0]}
          d: bf16[96,128] = dropout(t) {offset = 5, p = 0.25, seed = 11}
          return d
        })"},
  };
  graphs.insert(graphs.end(), others.begin(), others.end());
  return graphs;
}

// The vectorised plain kernel's graphs (passes/fusion/plain_vector.h, codegen/emit_vector.cc):
// codegen_layout_nvrtc_test compiles every candidate of each (and checks that the default runs
// vectorised where the name ends in "_vec"), the region GPU test (VectorisedLayouts) runs every
// candidate against the interpreter. Permutes that keep the innermost axis in every dtype with odd
// outer extents; concats along an outer axis and along the innermost one (pieces multiples of the
// vector, or of a narrower one); rotary embeddings in f32, f16 and bf16; patchify (an innermost
// axis of 3 channels: gathered lanes); slices that keep the innermost axis and one of step 2;
// dropout after a permute (the per-lane element index); two outputs; an output through a
// reshape; reads uniform across a vector; and an odd innermost axis (the scalar kernel).
inline std::vector<std::pair<std::string, std::string>> VectorLayoutGraphs() {
  std::vector<std::pair<std::string, std::string>> graphs;
  for (const char* dtype : {"f32", "f16", "bf16", "i32", "i64", "bool"}) {
    graphs.push_back({absl::StrFormat("permute0213_%s_3x17x5x24_vec", dtype),
                      absl::StrFormat(R"(graph g(x: %s[3,17,5,24]) {
          y: %s[3,5,17,24] = transpose(x) {perm = [0, 2, 1, 3]}
          return y
        })", dtype, dtype)});
  }
  const std::vector<std::pair<std::string, std::string>> others = {
      {"permute102_f16_odd_innermost_scalar", R"(graph g(x: f16[5,3,7]) {
          y: f16[3,5,7] = transpose(x) {perm = [1, 0, 2]}
          return y
        })"},
      {"concat_outer_axis_f16_vec", R"(graph g(a: f16[3,7,16], b: f16[3,5,16]) {
          y: f16[3,12,16] = concat(a, b) {axis = 1}
          return y
        })"},
      {"concat_innermost_bf16_vec", R"(graph g(a: bf16[5,24], b: bf16[5,8]) {
          y: bf16[5,32] = concat(a, b) {axis = 1}
          e: bf16[5,32] = exp(y)
          return e
        })"},
      {"concat_innermost_narrow_f32_vec", R"(graph g(a: f32[5,6], b: f32[5,10]) {
          y: f32[5,16] = concat(a, b) {axis = 1}
          return y
        })"},
      // the q/k/v gradients of an attention backward, concatenated into one [tokens, 3 x hidden]
      // tensor for the fused projection's backward: equal pieces over heads x head_dim, each
      // piece's coordinate affine within it (the space axis split at the piece boundaries)
      {"concat_head_gradients_f32_vec", R"(graph g(q: f32[2,5,4,8], k: f32[2,5,4,8], v: f32[2,5,4,8]) {
          rq: f32[2,5,32] = reshape(q) {shape = [2, 5, 32]}
          rk: f32[2,5,32] = reshape(k) {shape = [2, 5, 32]}
          rv: f32[2,5,32] = reshape(v) {shape = [2, 5, 32]}
          c: f32[2,5,96] = concat(rq, rk, rv) {axis = 2}
          y: f32[10,96] = reshape(c) {shape = [10, 96]}
          return y
        })"},
      {"concat_head_gradients_transposed_bf16_vec", R"(graph g(q: bf16[2,4,5,8], k: bf16[2,4,5,8]) {
          tq: bf16[2,5,4,8] = transpose(q) {perm = [0, 2, 1, 3]}
          tk: bf16[2,5,4,8] = transpose(k) {perm = [0, 2, 1, 3]}
          rq: bf16[2,5,32] = reshape(tq) {shape = [2, 5, 32]}
          rk: bf16[2,5,32] = reshape(tk) {shape = [2, 5, 32]}
          c: bf16[2,5,64] = concat(rq, rk) {axis = 2}
          y: bf16[10,64] = reshape(c) {shape = [10, 64]}
          return y
        })"},
      // two concats of one coordinate split at different places, in one region (siblings): each
      // piece's loads are guarded by its own bounds
      {"two_concats_split_differently_f32_vec", R"(graph g(a: f32[6,32], b: f32[6,64]) {
          y1: f32[6,96] = concat(a, b) {axis = 1}
          y2: f32[6,96] = concat(b, a) {axis = 1}
          return y1, y2
        })"},
      // grouped-query heads: unequal pieces keep the one-element-per-thread kernel
      {"concat_unequal_head_gradients_f16_scalar", R"(graph g(q: f16[2,5,4,8], k: f16[2,5,2,8]) {
          rq: f16[2,5,32] = reshape(q) {shape = [2, 5, 32]}
          rk: f16[2,5,16] = reshape(k) {shape = [2, 5, 16]}
          c: f16[2,5,48] = concat(rq, rk) {axis = 2}
          y: f16[10,48] = reshape(c) {shape = [10, 48]}
          return y
        })"},
      {"rotary_bf16_vec", RotaryGraph("bf16", {2, 3}, 33, 64)},
      {"rotary_f16_head128_vec", RotaryGraph("f16", {1, 4}, 7, 128)},
      {"rotary_f32_vec", RotaryGraph("f32", {3}, 5, 64)},
      {"patchify_f16_vec", R"(graph g(x: f16[2,3,32,32]) {
          x6: f16[2,3,2,16,2,16] = reshape(x) {shape = [2, 3, 2, 16, 2, 16]}
          t: f16[2,2,2,16,16,3] = transpose(x6) {perm = [0, 2, 4, 3, 5, 1]}
          y: f16[2,4,768] = reshape(t) {shape = [2, 4, 768]}
          return y
        })"},
      {"patchify_bf16_3x3_patches_vec", R"(graph g(x: bf16[1,3,48,48]) {
          x6: bf16[1,3,3,16,3,16] = reshape(x) {shape = [1, 3, 3, 16, 3, 16]}
          t: bf16[1,3,3,16,16,3] = transpose(x6) {perm = [0, 2, 4, 3, 5, 1]}
          y: bf16[1,9,768] = reshape(t) {shape = [1, 9, 768]}
          return y
        })"},
      {"slice_rows_f32_vec", R"(graph g(x: f32[9,24]) {
          s: f32[5,24] = slice(x) {ends = [7, 24], starts = [2, 0], steps = [1, 1]}
          e: f32[5,24] = exp(s)
          return e
        })"},
      {"slice_step2_innermost_f16_vec", R"(graph g(x: f16[5,32]) {
          s: f16[5,16] = slice(x) {ends = [5, 32], starts = [0, 1], steps = [1, 2]}
          y: f16[5,16] = neg(s)
          return y
        })"},
      {"dropout_after_permute_bf16_vec", R"(graph g(x: bf16[2,9,3,32]) {
          t: bf16[2,3,9,32] = transpose(x) {perm = [0, 2, 1, 3]}
          d: bf16[2,3,9,32] = dropout(t) {offset = 7, p = 0.3, seed = 5}
          return d
        })"},
      {"two_outputs_f32_vec", R"(graph g(x: f32[3,5,2,8]) {
          t: f32[3,2,5,8] = transpose(x) {perm = [0, 2, 1, 3]}
          n: f32[3,2,5,8] = neg(t)
          e: f32[3,2,5,8] = exp(t)
          return n, e
        })"},
      {"output_through_reshape_f16_vec", R"(graph g(x: f16[4,6,2,8]) {
          t: f16[4,2,6,8] = transpose(x) {perm = [0, 2, 1, 3]}
          y: f16[4,2,48] = reshape(t) {shape = [4, 2, 48]}
          return y
        })"},
      {"uniform_reads_f32_vec", R"(graph g(x: f32[2,6,4,16], s: f32[2,4,1,1], b: f32[16]) {
          t: f32[2,4,6,16] = transpose(x) {perm = [0, 2, 1, 3]}
          m: f32[2,4,6,16] = mul(t, s)
          y: f32[2,4,6,16] = add(m, b)
          return y
        })"},
  };
  graphs.insert(graphs.end(), others.begin(), others.end());
  return graphs;
}

}  // namespace kiln::testing_codegen

#endif  // KILN_TESTS_CODEGEN_LAYOUT_CASES_H_
