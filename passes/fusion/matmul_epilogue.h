// The analysis of a matmul region: the matmul, the tensors cuBLASLt reads for its operands (a
// transpose of the last two axes folded into the operand op), and the epilogue: at most one
// bias add (a vector [N] or [1, .., 1, N] broadcast over every row: EPILOGUE_BIAS), one
// residual add (a tensor of the output's shape: C with beta = 1), and last an activation of the
// sum: a gelu_tanh (EPILOGUE_GELU / GELU_BIAS), found in its decomposed form (passes/decompose.cc's)
// too, or a relu (EPILOGUE_RELU / RELU_BIAS), found as relu or as maximum(x, 0); cuBLASLt
// applies either after the bias and C, in f32. Legality, the cost model and runtime/jit's
// lowering all read this one description.
#ifndef KILN_PASSES_FUSION_MATMUL_EPILOGUE_H_
#define KILN_PASSES_FUSION_MATMUL_EPILOGUE_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/fusion/region.h"
#include "passes/rewrite_util.h"  // SwapsLastTwoAxes

namespace kiln {

struct MatmulEpilogue {
  const Node* matmul = nullptr;
  const Node* a = nullptr;         // the tensor cuBLASLt reads as A (the transpose's input when folded)
  const Node* b = nullptr;
  bool trans_a = false, trans_b = false;
  const Node* bias = nullptr;      // [N] / [1, .., 1, N], or nullptr
  const Node* residual = nullptr;  // the output's shape, or nullptr
  bool gelu = false;               // gelu_tanh of matmul + bias + residual
  bool relu = false;               // max(matmul + bias + residual, 0); never with gelu
  const Node* output = nullptr;    // the one tensor the region writes
};

// The nodes of y = gelu_tanh(x), one op or decomposed:
// y = (x * 0.5) * (tanh((x + x * x * x * 0.044715) * sqrt(2 / pi)) + 1), the decomposed gelu_tanh
// (x * x * x as decompose.cc writes it, or pow(x, 3) as torch's ONNX exporter does) (operands of each mul and add in either order; each scalar constant
// within its dtype's rounding of the value), ending at y; x is the input.
struct GeluTanhMatch {
  const Node* x = nullptr;
  std::vector<const Node*> nodes;  // the ops and the scalar constants, y included
};
std::optional<GeluTanhMatch> MatchGeluTanh(const Node* y);

// The nodes of y = relu(x): the relu op, or maximum(x, 0) / maximum(0, x) with 0 a constant
// whose every element is zero (ONNX's Max, and Clip(x, 0) as frontends/onnx writes it), ending
// at y; x is the input. (Same shape of answer as MatchGeluTanh.)
std::optional<GeluTanhMatch> MatchRelu(const Node* y);

// A bias cuBLASLt's EPILOGUE_BIAS can add to a matmul output `out`: [N], or [1, .., 1, N],
// with N the output's last extent (broadcast over every row). A column vector [M, 1] is not one.
bool IsRowBias(const Shape& bias, const Shape& out);

// Analyses a region holding one matmul; the error says which rule the region breaks.
absl::StatusOr<MatmulEpilogue> AnalyzeMatmul(const Region& region);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_MATMUL_EPILOGUE_H_
