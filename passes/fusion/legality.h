// The fusion legality rules: may producer region `p` and consumer region `c` become the
// region `merged` (their union, already described and analysed)? Within the size cap below,
// the kind of the merged region decides, through its hook in the kind table (region_kind.h);
// every refusal names its rule and says why in a sentence. The cycle rule needs the whole region graph and lives in
// priority_fusion.cc.
#ifndef KILN_PASSES_FUSION_LEGALITY_H_
#define KILN_PASSES_FUSION_LEGALITY_H_

#include "passes/fusion/fusion_decision.h"
#include "passes/fusion/region.h"

namespace kiln {

// No region holds more than kMaxRegionOps ops, whatever its kind ("region-size"). A kernel's
// code, and the stack depth of the passes and emitters that walk a region back from its
// outputs, grow with its ops: cold NVRTC for a chain of pointwise ops took 99 / 175 / 358 ms
// at 64 / 128 / 256 ops and 9.5 s at 2000 (2-core build machine, 2026-11-26), and a 10,000-op
// region overflowed the emitter's stack. torch inductor caps a fusion at 64 nodes
// (max_fusion_size). Beyond the cap a long chain splits into kernels of at most this many ops,
// one extra write and read per split, and planning a graph whose fusible part grows one node
// at a time (a ladder) stays linear, each region described in bounded time.
inline constexpr int kMaxRegionOps = 128;

FusionDecision CanMerge(const Region& p, const Region& c, const Region& merged);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_LEGALITY_H_
