// The fusion legality rules: may producer region `p` and consumer region `c` become the
// region `merged` (their union, already described)? Every refusal names its rule and says
// why in a sentence. The cycle rule needs the whole region graph and lives in
// priority_fusion.cc; everything that depends only on the two regions is here.
#ifndef KILN_PASSES_FUSION_LEGALITY_H_
#define KILN_PASSES_FUSION_LEGALITY_H_

#include "passes/cost/device_spec.h"
#include "passes/fusion/fusion_decision.h"
#include "passes/fusion/region.h"

namespace kiln {

// A bias cuBLASLt's EPILOGUE_BIAS can add to a matmul output `out`: [N], or [1, .., 1, N],
// with N the output's last extent (broadcast over every row). A column vector [M, 1] is not one.
bool IsRowBias(const Shape& bias, const Shape& out);

FusionDecision CanMerge(const Region& p, const Region& c, const Region& merged);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_LEGALITY_H_
