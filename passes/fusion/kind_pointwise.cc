// The elementwise kinds: pointwise (templates/pointwise.cuh), layout (layout.cuh) and view
// (an alias, no kernel). One iteration space, the region's largest output; every node
// broadcasts into it.
#include "absl/strings/str_cat.h"
#include "passes/fusion/kinds.h"

namespace kiln::kinds {

// A producer of a smaller shape is recomputed per element of the space, so it must not also
// be written (it would be written from a broadcast loop).
FusionDecision ElementwiseLegal(const Region& p, const Region& c, const Region& merged) {
  for (const Node* n : merged.nodes) {
    if (!BroadcastsTo(n->shape(), merged.space) && n->num_elements() != NumElements(merged.space)) {
      return FusionDecision::Forbid("pointwise-space",
                                    absl::StrCat(n->name(), " ", ShapeToString(n->shape()),
                                                 " does not fit the iteration space ", ShapeToString(merged.space)));
    }
  }
  for (const Node* out : merged.outputs) {
    if (out->num_elements() != NumElements(merged.space) && out->num_elements() != 1) {
      return FusionDecision::Forbid(
          "broadcast-output", absl::StrCat(out->name(), " ", ShapeToString(out->shape()),
                                           " is smaller than the iteration space ", ShapeToString(merged.space),
                                           " and is read elsewhere: it would be written from a broadcast loop"));
    }
  }
  return FusionDecision::Allow("pointwise", "one elementwise loop");
}

// One sweep over the space, 256 threads x 8 elements per block (pointwise.cuh's default).
RunTimeEstimate PricePointwise(const Region& region, const DeviceSpec& device) {
  RunTimeEstimate e = TrafficAndWork(region);
  constexpr int64_t kElementsPerBlock = 256 * 8;
  e.blocks = (NumElements(region.space) + kElementsPerBlock - 1) / kElementsPerBlock;
  FinishEstimate(device, device.f32_flops_per_us, DrawnBandwidth(device, e.blocks, 256), 1, e);
  return e;
}

RunTimeEstimate PriceView(const Region& region, const DeviceSpec& device) { return RunTimeEstimate{}; }

}  // namespace kiln::kinds
