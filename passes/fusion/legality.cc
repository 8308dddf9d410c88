#include "passes/fusion/legality.h"

#include "absl/strings/str_format.h"
#include "passes/fusion/region_kind.h"

namespace kiln {

FusionDecision CanMerge(const Region& p, const Region& c, const Region& merged) {
  if (merged.nodes.size() > static_cast<size_t>(kMaxRegionOps)) {
    return FusionDecision::Forbid(
        "region-size", absl::StrFormat("the merged region would hold %d ops; a region holds at most %d (its "
                                       "kernel's code and NVRTC time grow with every op)",
                                       merged.nodes.size(), kMaxRegionOps));
  }
  return KindInfo(merged.kind).legal(p, c, merged);
}

}  // namespace kiln
