#include "passes/fusion/plain_vector.h"

#include <algorithm>
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

double IndexOpsPerElement(const Region& region, const LayoutPlan* plan, int v) {
  if (plan != nullptr && v > 1 && v <= plan->plain_vector) {
    const int g = static_cast<int>(plan->extents.size()), inner = VectorInnerAxes(*plan, v);
    double ops = 2.0 * (g - inner + 1) / v;  // i % P, i / P, the outer coordinates
    for (const LayoutRead& r : plan->reads) {
      if (inner > 1 && LanesOf(*plan, inner, v, r.form) == LaneAccess::kGather) ops += 0.5 * 2 * (inner - 1);
    }
    return ops;
  }
  double ops = 0;
  for (const Node* n : region.nodes) {
    int axes = 0;
    for (int64_t e : n->shape()) axes += e != 1;
    switch (n->op()) {
      case OpKind::kTranspose: case OpKind::kSlice: ops += 2.0 * std::max(0, axes - 1); continue;
      case OpKind::kConcat: case OpKind::kGather: ops += 4; continue;
      default: break;
    }
    if (n->category() != OpCategory::kPointwise && n->category() != OpCategory::kBroadcast) continue;
    for (const Node* o : n->operands()) {
      if (o->num_elements() > 1 && o->shape() != n->shape()) ops += 2;
    }
  }
  return ops / std::max(v, 1);
}

}  // namespace kiln
