// The fusion legality rules: may producer region `p` and consumer region `c` become the
// region `merged` (their union, already described and analysed)? The kind of the merged
// region decides, through its hook in the kind table (region_kind.h); every refusal names its
// rule and says why in a sentence. The cycle rule needs the whole region graph and lives in
// priority_fusion.cc.
#ifndef KILN_PASSES_FUSION_LEGALITY_H_
#define KILN_PASSES_FUSION_LEGALITY_H_

#include "passes/fusion/fusion_decision.h"
#include "passes/fusion/region.h"

namespace kiln {

FusionDecision CanMerge(const Region& p, const Region& c, const Region& merged);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_LEGALITY_H_
