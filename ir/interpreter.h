// The reference interpreter: evaluates any graph on the CPU. It is the oracle for every
// numeric test (DESIGN.md §3). Arithmetic is done in double; reductions (and the reductions
// inside softmax, norms, cross_entropy, attention, matmul) accumulate in double; every node's
// result is rounded to the node's dtype when stored, exactly as the graph says.
// Dropout uses the same Philox4x32-10 keep rule as the GPU (ir/philox.h, docs/dropout.md).
#ifndef KILN_IR_INTERPRETER_H_
#define KILN_IR_INTERPRETER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

// Evaluates `graph` on `inputs` (one per graph input, matched by name; each must have the
// input's dtype and shape). Returns the outputs in graph.outputs() order.
// Errors (InvalidArgument): a missing or unknown input, or one with the wrong dtype or shape
// (naming the input); data the graph cannot evaluate (a gather index or cross_entropy target
// out of range, integer division by zero), naming the node. Nodes that reach no output are
// not evaluated. Semantics beyond ops.def that this oracle fixes:
//  * float -> int cast truncates toward zero, NaN/inf give 0, out-of-range values saturate;
//  * relu, maximum, minimum, reduce_max and reduce_min propagate NaN;
//  * integer arithmetic wraps modulo 2^64 before narrowing; reduce_mean of integers truncates;
//  * softmax and log_softmax of a row of all -inf are NaN (-inf - -inf), as in torch;
//  * layer_norm of a constant row gives the bias (or 0 without one): the mean of a row of
//    stored values is exact in double, so x - mean is exactly 0; with eps = 0 that is
//    0 / 0, NaN;
//  * cross_entropy "mean" with every row ignored is NaN (0 / 0, as in torch);
//  * attention rows whose scores are all -inf give 0 (FlashAttention's convention);
//  * dropout selects (a dropped NaN gives 0) and scales kept values in float (docs/dropout.md).
absl::StatusOr<std::vector<Tensor>> Interpret(const Graph& graph,
                                              const std::map<std::string, Tensor>& inputs);

// Random inputs for every graph input, deterministic in `seed`: floats uniform in (-1, 1)
// before rounding to the dtype and never 0 (the right operand of a matmul contracting K, also
// through cast and layout ops, in (-1, 1) / sqrt(K)), integer inputs uniform in [0, bound) where bound
// is the extent of the axis they index when the graph says (cross_entropy targets: the class
// count; gather indices: the gathered axis; looked for through cast and layout ops), else
// [0, 16); bool inputs fair coin flips; integer scalar seed/offset operands of dropout get
// values in [1, 1000).
std::map<std::string, Tensor> RandomInputs(const Graph& graph, uint64_t seed);

}  // namespace kiln

#endif  // KILN_IR_INTERPRETER_H_
