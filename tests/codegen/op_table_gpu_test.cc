// Every op of the op table that lands in a generated kernel, on the GPU, against the
// interpreter (label gpu; skips without a device): each op alone (or, for ops that are views
// by themselves, feeding a pointwise op), in f32, f16 and bf16 and, where the op takes them,
// i32, i64 and bool, at [7, 33] (scalar code: 33 is odd) and [6, 40] (vector code). The test
// walks ir/ops.def: an op with no case here and no stated reason to have none fails it, so a
// new row of the table cannot go untested on the GPU.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "ir/op.h"
#include "tests/codegen/region_check.h"

namespace kiln {
namespace {

using testing_gpu::CheckGraph;
using testing_gpu::Parse;

const char* const kFloats[] = {"f32", "f16", "bf16"};
const char* const kInts[] = {"i32", "i64"};
const char* const kShapes[] = {"7,33", "6,40"};

// "graph g(INPUTS) {\n  BODY\n  return y\n}" with $S replaced by the shape and $T by the dtype.
std::string G(const std::string& inputs, const std::string& body, const std::string& shape, const std::string& type) {
  std::string text = absl::StrCat("graph g(", inputs, ") {\n  ", body, "\n  return y\n}\n");
  return absl::StrReplaceAll(text, {{"$S", shape}, {"$T", type}});
}

// The cases of one op: labelled graph texts.
using Case = std::pair<std::string, std::string>;
using Cases = std::vector<Case>;

Cases ForTypes(const std::string& op, const std::vector<std::string>& types, const std::string& inputs,
               const std::string& body) {
  Cases out;
  for (const char* shape : kShapes) {
    for (const std::string& type : types) {
      out.push_back({absl::StrCat(op, "_", type, "_", absl::StrReplaceAll(shape, {{",", "x"}})),
                     G(inputs, body, shape, type)});
    }
  }
  return out;
}

std::vector<std::string> Floats() { return {kFloats[0], kFloats[1], kFloats[2]}; }
std::vector<std::string> FloatsAndInts() { return {"f32", "f16", "bf16", "i32", "i64"}; }

Cases CasesFor(const OpInfo& op) {
  const std::string name = op.name;
  const std::string unary = absl::StrCat("y: $T[$S] = ", name, "(x)");
  const std::string binary = absl::StrCat("y = ", name, "(a, b)");
  switch (op.kind) {
    case OpKind::kNeg: case OpKind::kAbs: case OpKind::kRelu:
      return ForTypes(name, FloatsAndInts(), "x: $T[$S]", unary);
    case OpKind::kExp: case OpKind::kLog: case OpKind::kSqrt: case OpKind::kRsqrt: case OpKind::kReciprocal:
    case OpKind::kTanh: case OpKind::kSigmoid: case OpKind::kErf: case OpKind::kGelu: case OpKind::kGeluTanh:
    case OpKind::kSilu:
      return ForTypes(name, Floats(), "x: $T[$S]", unary);
    case OpKind::kCast: {
      Cases out;
      const std::vector<std::string> all = {"f32", "f16", "bf16", "i32", "i64", "bool"};
      for (const std::string& from : all) {
        for (const std::string& to : all) {
          if (from == to) continue;
          // Floats are scaled by 300 first, so that integer casts see values beyond +-1 and
          // f16/bf16 casts round.
          const bool scale = from == "f32" || from == "f16" || from == "bf16";
          std::string body = scale ? absl::StrCat("c: ", from, "[] = constant() {data = [300.5]}\n  s = mul(x, c)\n  ",
                                                  "y: ", to, "[$S] = cast(s) {dtype = \"", to, "\"}")
                                   : absl::StrCat("y: ", to, "[$S] = cast(x) {dtype = \"", to, "\"}");
          for (Case c : ForTypes(absl::StrCat("cast_to_", to), {from}, "x: $T[$S]", body)) out.push_back(c);
        }
      }
      return out;
    }
    case OpKind::kLogicalNot: return ForTypes(name, {"bool"}, "x: $T[$S]", unary);
    case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv: case OpKind::kMaximum:
    case OpKind::kMinimum: case OpKind::kEq: case OpKind::kNe: case OpKind::kLt: case OpKind::kLe:
    case OpKind::kGt: case OpKind::kGe: {
      Cases out = ForTypes(name, op.kind == OpKind::kDiv ? Floats() : FloatsAndInts(), "a: $T[$S], b: $T[$S]", binary);
      if (op.kind == OpKind::kDiv) {  // the interpreter refuses an integer zero divisor: make it |b| + 1
        for (Case c : ForTypes("div_int", {"i32", "i64"}, "a: $T[$S], b: $T[$S]",
                               "one: $T[] = constant() {data = [1]}\n  m = abs(b)\n  d = add(m, one)\n  y = div(a, d)"))
          out.push_back(c);
      }
      // A broadcast operand: a row vector.
      for (Case c : ForTypes(absl::StrCat(name, "_bcast"), {"f32", "bf16"}, "a: $T[$S], b: $T[1,$S]",
                             absl::StrCat("b2 = reshape(b) {shape = [$S]}\n  y = ", name, "(a, b2)")))
        out.push_back(c);
      return out;
    }
    case OpKind::kPow: return ForTypes(name, Floats(), "a: $T[$S], b: $T[$S]", binary);
    case OpKind::kLogicalAnd: case OpKind::kLogicalOr:
      return ForTypes(name, {"bool"}, "a: $T[$S], b: $T[$S]", binary);
    case OpKind::kWhere:
      return ForTypes(name, FloatsAndInts(), "c: bool[$S], a: $T[$S], b: $T[$S]", "y = where(c, a, b)");
    case OpKind::kIota: {
      Cases out;
      for (const char* type : kInts) {
        for (int axis : {0, 1}) {
          out.push_back({absl::StrFormat("iota_%s_axis%d", type, axis),
                         G("x: $T[$S]", absl::StrFormat("i: $T[$S] = iota() {axis = %d, dtype = \"$T\", shape = [$S]}\n"
                                                        "  y = add(x, i)", axis),
                           "7,33", type)});
        }
      }
      return out;
    }
    case OpKind::kReduceSum: case OpKind::kReduceMean: case OpKind::kReduceMax: case OpKind::kReduceMin: {
      Cases out;
      for (const char* axes : {"[1]", "[0]", "[]"}) {
        for (const char* keep : {"false", "true"}) {
          // Integer sums, maxima and minima are exact; an integer mean is not in the table's contract.
          const std::vector<std::string> types = op.kind == OpKind::kReduceMean ? Floats() : FloatsAndInts();
          for (Case c : ForTypes(absl::StrCat(name, "_axes", axes, keep[0] == 't' ? "_keep" : ""), types, "x: $T[$S]",
                                 absl::StrCat("y = ", name, "(x) {axes = ", axes, ", keep_dims = ", keep, "}")))
            out.push_back(c);
        }
      }
      return out;
    }
    case OpKind::kSoftmax: case OpKind::kLogSoftmax: {
      Cases out = ForTypes(name, Floats(), "x: $T[$S]", absl::StrCat("y = ", name, "(x) {axis = 1}"));
      for (Case c : ForTypes(absl::StrCat(name, "_axis0"), {"f32"}, "x: $T[$S]", absl::StrCat("y = ", name, "(x) {axis = 0}")))
        out.push_back(c);
      return out;
    }
    case OpKind::kLayerNorm: {
      Cases out = ForTypes(name, Floats(), "x: $T[$S]", "y = layer_norm(x) {axis = 1, eps = 1e-05}");
      Cases affine;
      for (const std::string& type : Floats()) {
        affine.push_back({absl::StrCat("layer_norm_affine_", type),
                          G("x: $T[6,40], w: $T[40], b: $T[40]", "y = layer_norm(x, w, b) {axis = 1, eps = 1e-05}", "", type)});
      }
      out.insert(out.end(), affine.begin(), affine.end());
      return out;
    }
    case OpKind::kRmsNorm: {
      Cases out = ForTypes(name, Floats(), "x: $T[$S]", "y = rms_norm(x) {axis = 1, eps = 1e-06}");
      for (const std::string& type : Floats()) {
        out.push_back({absl::StrCat("rms_norm_weighted_", type),
                       G("x: $T[6,40], w: $T[40]", "y = rms_norm(x, w) {axis = 1, eps = 1e-06}", "", type)});
      }
      return out;
    }
    case OpKind::kCrossEntropy: {
      Cases out;
      for (const std::string& type : Floats()) {
        for (const char* reduction : {"none", "mean", "sum"}) {
          out.push_back({absl::StrCat("cross_entropy_", reduction, "_", type),
                         G("x: $T[7,33], t: i64[7]",
                           absl::StrCat("y = cross_entropy(x, t) {ignore_index = -100, reduction = \"", reduction, "\"}"),
                           "", type)});
        }
      }
      return out;
    }
    case OpKind::kDropout: case OpKind::kDropoutGrad: {
      Cases out = ForTypes(name, Floats(), "x: $T[$S]", absl::StrCat("y = ", name, "(x) {offset = 5, p = 0.25, seed = 9}"));
      for (Case c : ForTypes(absl::StrCat(name, "_runtime_seed"), {"f32"}, "x: $T[$S], s: i64[], o: i64[]",
                             absl::StrCat("y = ", name, "(x, s, o) {p = 0.5}")))
        out.push_back(c);
      return out;
    }
    case OpKind::kReshape:  // a view by itself: read through a pointwise op
      return ForTypes(name, Floats(), "x: $T[$S]", "r = reshape(x) {shape = [-1]}\n  y = neg(r)");
    case OpKind::kTranspose:
      return ForTypes(name, FloatsAndInts(), "x: $T[$S]", "y = transpose(x) {perm = [1, 0]}");
    case OpKind::kSlice:
      return ForTypes(name, FloatsAndInts(), "x: $T[$S]",
                      "y = slice(x) {ends = [5, 31], starts = [1, 2], steps = [2, 3]}");
    case OpKind::kConcat:
      return ForTypes(name, FloatsAndInts(), "a: $T[$S], b: $T[$S]", "y = concat(a, b) {axis = 1}");
    case OpKind::kGather: {
      Cases out = ForTypes(name, FloatsAndInts(), "x: $T[$S], i: i64[4,3]", "y = gather(x, i) {axis = 0}");
      for (Case c : ForTypes(absl::StrCat(name, "_axis1"), {"f32", "bf16"}, "x: $T[$S], i: i32[5]", "y = gather(x, i) {axis = 1}"))
        out.push_back(c);
      return out;
    }
    case OpKind::kBroadcastTo:
      return ForTypes(name, FloatsAndInts(), "x: $T[1,$S]", "y = broadcast_to(x) {shape = [3,$S]}");
    case OpKind::kAttentionLse:  // alone (no twin attention): lowered, its row kernel over f32 scores
      return ForTypes(name, Floats(), "q: $T[2,$S], k: $T[2,$S]", "y = attention_lse(q, k) {causal = true, scale = 0.25}");
    default:
      return {};
  }
}

// Ops with no kernel of their own, and why.
const std::set<OpKind> kNoKernel = {
    OpKind::kInput, OpKind::kConstant,  // leaves: buffers, or literals inside kernels
    OpKind::kMatmul,                    // cuBLASLt (tests/runtime/matmul_gpu_test.cc)
    OpKind::kAttention,                 // the tiled kernel (attention_gpu_test.cc; attention_lse beside it there too)
};

class OpTableGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing_gpu::HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  }
};

TEST_F(OpTableGpuTest, EveryOpThatLandsInAKernel) {
  for (const OpInfo& op : AllOps()) {
    if (kNoKernel.count(op.kind)) continue;
    const Cases cases = CasesFor(op);
    EXPECT_FALSE(cases.empty()) << op.name << " has no GPU case in this test and is not in kNoKernel";
    int kernels = 0;
    for (const auto& [label, text] : cases) kernels += CheckGraph(label, Parse(text));
    EXPECT_GT(kernels, 0) << op.name << ": no case produced a kernel";
  }
}

}  // namespace
}  // namespace kiln
