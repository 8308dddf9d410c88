// Sibling fusion: after priority fusion, two elementwise regions (pointwise or layout) over the
// same space that read a common tensor and are not connected in the region graph become one
// kernel with both regions' outputs, when the cost model says one kernel is faster. Priority
// fusion merges only along producer -> consumer edges, so two consumers of one tensor that do
// not feed each other each read it: a SwiGLU backward's gradients of the gate and of the up
// projection both read the gate, the up projection and the incoming gradient, three
// [tokens, ffn] tensors read twice. Merged, each is read once. Each merge is a FusionRecord
// (mode "sibling") in the ledger, with the shared reads as its reason.
#ifndef KILN_PASSES_FUSION_SIBLING_FUSION_H_
#define KILN_PASSES_FUSION_SIBLING_FUSION_H_

#include <optional>

#include "passes/cost/device_spec.h"
#include "passes/fusion/fusion_state.h"
#include "passes/fusion/priority_fusion.h"

namespace kiln {

// A tensor read by more elementwise regions than this pairs none of them (the pairs grow with
// its square; the examples, zoo and fixtures have at most 4).
inline constexpr size_t kMaxSiblingReaders = 16;

// Takes the profitable sibling merges, largest saving first, on `state`; appends them to
// plan->records and counts them in plan->merges, stopping (with a "stop" record, and
// plan->fuel_exhausted) once plan->merges reaches `fuel` (KILN_FUSION_FUEL counts these merges too).
void FuseSiblings(FusionState& state, const DeviceSpec& device, std::optional<int> fuel, FusionPlan* plan);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_SIBLING_FUSION_H_
