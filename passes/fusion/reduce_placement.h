// The analysis of a reduction region (row_reduction, column_reduction): where every node and
// every tensor the region reads sits in the region's *space*, the input shape of its
// reduction cut into three groups of axes [outer | reduced | inner]. A row reduction reduces
// the innermost axes (inner is empty); a column reduction reduces axes that kept axes follow.
//
// Each tensor of the region is an element-aligned view of the space: its own axes are cut the
// same way (Placement::cut), and each of its three parts is either the group's whole extent
// (any factorisation of it), a numpy broadcast of the group's axes (some of them 1: a padding
// mask [B,1,1,T] against scores [B,H,S | T]), or extent 1. The cuts are found by following the
// graph: numpy right-alignment through pointwise ops, the reduced axes through reductions,
// equal products through reshapes, and from its readers for a tensor read from memory or
// made in the kernel (iota). A kernel evaluates every node "at the current point" of the space
// and loads an input at the index its cut gives; nothing is ever read from another row. A row
// region may also read a tensor in memory through a member transpose (Placement::through: the
// tensor takes the transpose's place, and its index goes through the permutation) when each
// row is a sequence of contiguous runs of at least 32 elements: batch norm's statistics, which
// canonicalize writes as a reduction over the trailing axes of x transposed to [C, N, H, W].
// Its normalisation, which canonicalize computes in the same transposed space, leaves the
// kernel through the inverse transpose on the same condition (Placement::stored_through).
//
// From the places follow: what each value varies along (per element, per row, along the row
// only, or a scalar), the reduction level each value waits for, the combines (per-row values
// reduced over every row, e.g. a mean loss), the reduce_max / reduce_sum(exp(x - max)) and
// reduce_mean / reduce_mean((x - mean)^2) pairs a row computes in one online pass, the one-hot row sums read as one element
// (cross-entropy's target pick), and for rows the on-chip fit (passes/cost/row_fit.h). The row
// kernel (codegen/emit_reduce.cc) and the cost model both read this; neither re-derives it.
#ifndef KILN_PASSES_FUSION_REDUCE_PLACEMENT_H_
#define KILN_PASSES_FUSION_REDUCE_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/cost/row_fit.h"
#include "passes/fusion/region.h"

namespace kiln {

struct ReduceSpace {
  Shape shape;       // the space: the input shape of the region's reduction
  int begin = 0;     // reduced axes [begin, end)
  int end = 0;
  int64_t outer = 1, reduced = 1, inner = 1;  // the groups' extents

  // The axes of group g: 0 outer, 1 reduced, 2 inner.
  Shape Group(int g) const;
  int64_t Extent(int g) const { return g == 0 ? outer : g == 1 ? reduced : inner; }
  // "[16 x 4096 | 1]" style: outer, reduced and inner extents.
  std::string ToString() const;
};

// One tensor of the region in the space.
struct Placement {
  int cut[2] = {0, 0};  // its axes [0, cut0) follow the outer group, [cut0, cut1) reduced, the rest inner
  bool varies[3] = {false, false, false};  // along outer, reduced, inner
  int level = 0;           // the reduction level it waits for (0: none)
  // A tensor in memory that the kernel reads only through this member transpose (its place is
  // the transpose's): element p of the space is its element at the transposed index.
  const Node* through = nullptr;
  // A reshape that only leaves the kernel, of a tensor over the whole space whose axes it
  // regroups across the space's groups: placed, indexed and stored as that tensor (`like`), since
  // a row-major reshape keeps each element's linear index.
  const Node* like = nullptr;
  // A transpose of a member that only leaves the kernel (canonicalize's SinkIntoTransposedSpace:
  // batch norm's result, computed in the statistics' transposed space): placed as its operand,
  // and stored through the permutation (element p of the space is its element at the inverse
  // index), in runs of contiguous elements as a read through a transpose is.
  const Node* stored_through = nullptr;
  bool combined = false;   // depends on a combine

  bool outer() const { return varies[0]; }
  bool reduced() const { return varies[1]; }
  bool inner() const { return varies[2]; }
  // Its part of group g within `shape` (its own shape).
  Shape Part(const Shape& shape, int g) const;
  // The part of group g of tensor `n` placed here (the transpose's shape when read through one,
  // `like`'s for a reshape placed as its operand).
  Shape Part(const Node* n, int g) const;
  // "row-shaped", "per-row", "along the row", "scalar" (row spaces), with "x inner" for columns.
  std::string FormName() const;
};

// sum over the row of where(eq(iota, s), f, 0), iota the column index and s constant along the
// row: exactly one term can be non-zero, f at column s.
struct OneHotPick {
  const Node* value = nullptr;  // f
  const Node* index = nullptr;  // s
  const Node* eq = nullptr;     // the comparison that reads s
};

struct ReducePlacement {
  ReduceSpace space;
  std::map<const Node*, Placement> place;   // every member, and every tensor a member reads
  std::vector<const Node*> reductions;      // over the reduced group (not combines), region order
  std::vector<const Node*> combines;        // per-row values reduced over every row, region order
  std::map<const Node*, const Node*> online_max;  // reduce_sum(exp(x - max)) -> its reduce_max
  // reduce_{sum,mean}((x - mean)^2) -> its reduce_mean(x): both from one pass (rows only)
  std::map<const Node*, const Node*> online_mean;
  std::map<const Node*, OneHotPick> picks;
  int levels = 0;          // the deepest reduction level (an online pair shares its max's)
  // The elements of a row that stay contiguous in every tensor read or stored through a
  // transpose: the gcd of their innermost runs and the strides between them (0: none such). A
  // row vector must divide it to be one 16-byte access (RowVector).
  int64_t through_run = 0;
  // The divisions (quotients and remainders by a constant) the row's index pays per access of
  // those tensors, over all of them: the row kernel's index arithmetic (PriceRow).
  int through_index_ops = 0;
  RowFit fit;              // row reductions: the on-chip rule's verdict (row_fit.h)

  const Placement& Of(const Node* n) const;
  bool IsRowReduction(const Node* n) const;  // one of `reductions`
  bool IsCombine(const Node* n) const;
  bool IsPairedSum(const Node* n) const { return online_max.count(n) > 0; }
  bool IsPairedMax(const Node* n) const;
  bool IsPairedVariance(const Node* n) const { return online_mean.count(n) > 0; }
  bool IsPairedMean(const Node* n) const;
  // A reduction computed by its pair's accumulator, not its own.
  bool IsPairedSecond(const Node* n) const { return IsPairedSum(n) || IsPairedVariance(n); }
  // "online max+sum", "online mean+variance", both, or "" where the region has no pair.
  std::string OnlinePairs() const;
};

// The row kernel's vector: 16 bytes of the narrowest element (VectorElements), halved until it
// divides `placement.through_run`. The fit prices it and DefaultParams launches it.
int RowVector(const Region& region, const ReducePlacement& placement);

// Places the nodes of `region` (its nodes, inputs and outputs set). An error says why the
// reduction kernels cannot run them, as "rule: reason" (reduce-space, reduce-layout), which
// legality reports as the refusal.
absl::StatusOr<ReducePlacement> PlaceReduction(const Region& region, const DeviceSpec& device);

// The space of a single reduction node: its input's shape and its (sorted, adjacent) axes.
// Fails for axes that are not adjacent (canonicalize splits such reductions).
absl::StatusOr<ReduceSpace> SpaceOf(const Node* reduction);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_REDUCE_PLACEMENT_H_
