#include "passes/fusion/plain_vector.h"

#include <limits>

#include "passes/cost/row_fit.h"
#include "passes/fusion/layout_access.h"

namespace kiln {

int VectorInnerAxes(const LayoutPlan& plan, int v) {
  const int g = static_cast<int>(plan.extents.size());
  int64_t product = 1;
  for (int k = 1; k <= g; ++k) {
    product *= plan.extents[g - k];
    if (product % v != 0) continue;
    return k == 1 || product <= std::numeric_limits<int32_t>::max() ? k : 0;
  }
  return 0;
}

LaneAccess LanesOf(const LayoutPlan& plan, int inner_axes, int v, const AffineForm& f) {
  const int g = static_cast<int>(plan.extents.size());
  bool uniform = true, strides = true;
  int64_t stride = 1;
  for (int d = g - 1; d >= g - inner_axes; --d) {
    uniform &= f.coeff[d] == 0;
    strides &= f.coeff[d] == stride;
    stride *= plan.extents[d];
  }
  if (uniform) return LaneAccess::kUniform;
  bool aligned = f.offset % v == 0;
  for (int d = 0; d < g - inner_axes; ++d) aligned &= f.coeff[d] % v == 0;
  return strides && aligned ? LaneAccess::kContiguous : LaneAccess::kGather;
}

bool BroadcastOnly(const Region& region) {
  for (const Node* n : region.nodes) {
    const OpCategory c = n->category();
    if (c != OpCategory::kPointwise && c != OpCategory::kRandom && c != OpCategory::kBroadcast) return false;
  }
  for (const Node* o : region.outputs) {
    if (o->shape() != region.space) return false;
  }
  for (const Node* in : region.inputs) {
    if (!BroadcastsTo(in->shape(), region.space)) return false;
  }
  return true;
}

namespace {

bool Runs(const LayoutPlan& plan, int v) {
  const int inner = VectorInnerAxes(plan, v);
  if (inner == 0) return false;
  for (const AffineForm& f : plan.stores) {
    if (LanesOf(plan, inner, v, f) != LaneAccess::kContiguous) return false;
  }
  for (const ConcatSelect& s : plan.selects) {
    const LaneAccess lanes = LanesOf(plan, inner, v, s.coord);
    if (lanes == LaneAccess::kGather) return false;
    if (lanes == LaneAccess::kContiguous) {
      for (size_t k = 1; k + 1 < s.starts.size(); ++k) {
        if (s.starts[k] % v != 0) return false;  // a boundary inside a vector
      }
    }
  }
  return true;
}

}  // namespace

int PlainVectorWidth(const Region& region, const LayoutPlan& plan) {
  if (plan.extents.empty() || plan.stores.size() != region.outputs.size() || BroadcastOnly(region)) return 1;
  for (const Node* o : region.outputs) {
    if (o->num_elements() != NumElements(region.space)) return 1;
  }
  for (int v = VectorElements(region, 0); v > 1; v /= 2) {
    if (Runs(plan, v)) return v;
  }
  return 1;
}

}  // namespace kiln
