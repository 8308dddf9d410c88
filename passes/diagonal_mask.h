// Whether an attention mask computed from indices is the causal mask, without evaluating it.
//
// Exporters write the causal mask as ops on indices: torch's ONNX exporter lowers
// scaled_dot_product_attention(is_causal=True) to where(trilu(ones(S, T)) == 0, -inf, 0), and
// the ONNX importer turns Trilu into iotas, a subtraction, a comparison and a where. Constant
// folding evaluates such a subgraph only while it is tiny, so at a model's sequence length the
// mask reached match_attention as a run-time tensor of S x T elements: computed by one kernel,
// read by attention, and not known to be causal (every masked block computed, then discarded).
//
// This analysis decides it exactly at the cost of S + T - 1 point evaluations. It follows the
// mask's operands down to iotas and splat constants and gives each node an affine form
// a_i i + a_j j + c over the attention plane (i the query row, j the key column) where it has
// one. A node is diagonal when its value depends on (i, j) only through d = j - i: an affine
// form with a_i = -a_j, a comparison of two such forms, and any pointwise op, where, cast or
// broadcast over diagonal values. A diagonal mask is then evaluated at one (i, j) per d in
// [-(S - 1), T - 1], with the ops' dtype rounding, and compared with the causal rule j <= i.
// Anything else (a run-time input, a non-splat constant, an op outside the list, an axis that
// is neither the plane's nor of extent 1) answers "cannot tell", and the mask stays an operand.
#ifndef KILN_PASSES_DIAGONAL_MASK_H_
#define KILN_PASSES_DIAGONAL_MASK_H_

#include <cstdint>
#include <functional>
#include <string>

#include "ir/graph.h"

namespace kiln {

// Whether `mask`, broadcast over [..., s, t], is a function of indices and splat constants
// only and `keep(value)` holds exactly where j <= i, and in one sentence why (or why not: the
// first node the analysis could not follow, or the diagonal where the mask differs), for
// `kiln dump` and the ledger.
struct IndexMaskVerdict {
  bool causal = false;
  std::string why;
};
IndexMaskVerdict AnalyzeIndexMask(const Node* mask, int64_t s, int64_t t, const std::function<bool(double)>& keep);


}  // namespace kiln

#endif  // KILN_PASSES_DIAGONAL_MASK_H_
