// InterpretAsPlanned: the reference a compiled graph is checked against. The plan's regions
// are evaluated in order on the interpreter, each with 16-bit floats computed in f32
// (ir/promote.h) and its stored outputs rounded to their dtype, exactly where the GPU stores
// them (attention the template does not run was already rewritten by passes/lower_attention
// before fusion, so its fallback's regions are in the plan). What is left between this and the GPU is f32
// summation order (reductions, cuBLASLt's K loop), so it can be compared at tight
// tolerances, while the whole graph evaluated in f32 (PromoteTo32 of the graph) differs by
// the rounding at every region boundary, which for a bf16 block with outputs of magnitude
// 60 is a few tenths (see tests/runtime/executable_gpu_test.cc).
#ifndef KILN_API_REFERENCE_H_
#define KILN_API_REFERENCE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/priority_fusion.h"

namespace kiln {

// Outputs in graph output order.
absl::StatusOr<std::vector<Tensor>> InterpretAsPlanned(const Graph& graph, const FusionPlan& plan,
                                                       const std::map<std::string, Tensor>& inputs);

}  // namespace kiln

#endif  // KILN_API_REFERENCE_H_
