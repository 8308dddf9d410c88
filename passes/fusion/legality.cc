#include "passes/fusion/legality.h"

#include "passes/fusion/region_kind.h"

namespace kiln {

FusionDecision CanMerge(const Region& p, const Region& c, const Region& merged) {
  return KindInfo(merged.kind).legal(p, c, merged);
}

}  // namespace kiln
