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
absl::StatusOr<std::vector<Tensor>> Interpret(const Graph& graph,
                                              const std::map<std::string, Tensor>& inputs);

// Random inputs for every graph input, deterministic in `seed`: floats uniform in [-1, 1)
// (never all zeros), integer inputs uniform in [0, bound) where bound is the extent of the
// axis they index when the graph says (cross_entropy targets: the class count; gather
// indices: the gathered axis), else [0, 16); bool inputs fair coin flips; integer scalar
// seed/offset operands of dropout get small positive values.
std::map<std::string, Tensor> RandomInputs(const Graph& graph, uint64_t seed);

}  // namespace kiln

#endif  // KILN_IR_INTERPRETER_H_
