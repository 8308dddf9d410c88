// The plain elementwise kernel's second vectorised form (codegen/emit_vector.cc), for pointwise and
// layout regions that the broadcast-only form (codegen/emit_elementwise.cc: pointwise ops and
// broadcasts, each input loaded by its linear index) does not run: regions with transposes,
// slices, reshapes and concats, read through a LayoutPlan (layout_access.h). A thread takes V
// consecutive positions of the space, the first a multiple of V. The vector's "inner" axes are the
// fewest innermost canonical axes whose extent product P is a multiple of V, so a vector never
// leaves one run of P positions: the outer coordinates (64-bit divisions) are computed once per
// vector, and each canonical form the kernel evaluates is, over the V lanes,
//   contiguous  lane l at the first lane's address + l, a multiple of V (its inner coefficients
//               are the inner axes' row-major strides, the offset and outer coefficients multiples
//               of V): one 16-byte vector access (every store must be one);
//   uniform     no inner coefficient: one scalar access serves every lane;
//   gather      anything else: one scalar access per lane, its inner coordinates from a 32-bit
//               index (so P < 2^31 when more than one axis is inner).
// A concat's selection must be the same for every lane: its axis coordinate uniform, or contiguous
// with every piece boundary a multiple of V (rotary embeddings' halves of a head). So a permute
// that keeps the innermost axis ([B,S,H,D] -> [B,H,S,D]) moves 16-byte vectors with its divisions
// once per vector, and a patchify whose innermost axis is 3 channels stores 16-byte vectors of
// (pixel, channel) pairs, gathering each lane's element.
#ifndef KILN_PASSES_FUSION_PLAIN_VECTOR_H_
#define KILN_PASSES_FUSION_PLAIN_VECTOR_H_

#include <cstdint>

#include "passes/fusion/region.h"

namespace kiln {

struct LayoutPlan;
struct AffineForm;

enum class LaneAccess { kContiguous, kUniform, kGather };

// The number of inner canonical axes for vectors of `v` (0: no run of positions holds whole vectors).
int VectorInnerAxes(const LayoutPlan& plan, int v);
// How the lanes of a vector of `v` with `inner_axes` inner axes see canonical form `f`.
LaneAccess LanesOf(const LayoutPlan& plan, int inner_axes, int v, const AffineForm& f);
// Whether the broadcast-only vector form runs the region: pointwise, random and broadcast ops only,
// every output the whole space, every input broadcasting to it.
bool BroadcastOnly(const Region& region);
// The widest vector (a power of two, at most 16 bytes of the smallest element the region moves)
// this form runs `region` with; 1 when it does not (broadcast-only regions, outputs smaller than the
// space, stores or selections that are not the same across a vector). Every power of two below it
// runs too.
int PlainVectorWidth(const Region& region, const LayoutPlan& plan);

// The plain kernel's index arithmetic per element of the space, in 64-bit divisions or remainders
// by a constant (a 32-bit one counts half), for the kernel that runs with vectors of `v`: through
// the plan (v <= plan->plain_vector: the outer coordinates once per vector, each gathered lane's
// inner ones), the broadcast-only form (per broadcast operand, a division and a remainder once
// per vector), or one element per thread (v = 1: per transpose or slice, a division and a
// remainder per axis of its output but one; per concat or gather, two of each; per broadcast
// operand, one of each). The cost model charges them (kind_pointwise.cc).
double IndexOpsPerElement(const Region& region, const LayoutPlan* plan, int v);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_PLAIN_VECTOR_H_
