#include "passes/fusion/strided_view.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln {
namespace {

// Drops extent-1 atoms and merges an atom into the one outside it when their strides chain
// (outer.stride == inner.stride * inner.extent). An empty dim (extent 0) is one (0, 0) atom.
ViewDim Normalize(const ViewDim& dim) {
  for (const ViewAtom& a : dim) {
    if (a.extent == 0) return {ViewAtom{0, 0}};
  }
  ViewDim out;
  for (const ViewAtom& a : dim) {
    if (a.extent == 1) continue;
    if (!out.empty() && out.back().stride == a.stride * a.extent) {
      out.back() = ViewAtom{out.back().extent * a.extent, a.stride};
    } else {
      out.push_back(a);
    }
  }
  return out;
}

int64_t Extent(const ViewDim& dim) {
  int64_t e = 1;
  for (const ViewAtom& a : dim) e *= a.extent;
  return e;
}

// Regroups the row-major atom sequence of `view` into dims of `shape` (same element count):
// each new dim takes atoms from the front, splitting one where the dim ends inside it.
std::optional<StridedView> Regroup(const StridedView& view, const Shape& shape) {
  StridedView out{view.source, view.offset, {}};
  if (NumElements(shape) == 0) {
    for (int64_t e : shape) out.dims.push_back({ViewAtom{e, 0}});
    return out;
  }
  ViewDim all;
  for (const ViewDim& d : view.dims) all.insert(all.end(), d.begin(), d.end());
  all = Normalize(all);
  std::deque<ViewAtom> atoms(all.begin(), all.end());
  for (int64_t extent : shape) {
    ViewDim dim;
    int64_t p = 1;
    while (p < extent) {
      if (atoms.empty()) return std::nullopt;
      const ViewAtom a = atoms.front();
      if (p * a.extent <= extent && extent % (p * a.extent) == 0) {
        dim.push_back(a);
        p *= a.extent;
        atoms.pop_front();
        continue;
      }
      if (extent % p != 0) return std::nullopt;
      const int64_t f = extent / p;  // the outer part of `a` this dim takes
      if (a.extent % f != 0) return std::nullopt;
      dim.push_back(ViewAtom{f, a.stride * (a.extent / f)});
      atoms.front() = ViewAtom{a.extent / f, a.stride};
      p = extent;
    }
    out.dims.push_back(dim.empty() ? ViewDim{ViewAtom{1, 0}} : dim);
  }
  if (!atoms.empty()) return std::nullopt;
  return out;
}

std::optional<StridedView> Slice(const StridedView& view, const Node* op) {
  const Shape& in = op->operand(0)->shape();
  const Shape& out = op->shape();
  const auto& starts = op->attrs().GetInts("starts");
  std::vector<int64_t> steps = op->attrs().GetInts("steps");
  if (steps.empty()) steps.assign(in.size(), 1);
  StridedView result = view;
  for (size_t d = 0; d < in.size(); ++d) {
    if (out[d] == in[d] && (steps[d] == 1 || in[d] <= 1)) continue;  // the whole axis
    if (out[d] == 0) {
      result.dims[d] = {ViewAtom{0, 0}};
      continue;
    }
    const int64_t begin = std::clamp<int64_t>(starts[d] < 0 ? starts[d] + in[d] : starts[d], 0, in[d]);
    std::optional<ViewAtom> atom = SingleAtom(view.dims[d]);
    if (!atom) return std::nullopt;
    result.offset += begin * atom->stride;
    result.dims[d] = {ViewAtom{out[d], atom->stride * steps[d]}};
  }
  return result;
}

}  // namespace

Shape StridedView::shape() const {
  Shape s;
  for (const ViewDim& d : dims) s.push_back(Extent(d));
  return s;
}

std::string StridedView::ToString() const {
  std::vector<std::string> parts;
  for (const ViewDim& d : dims) {
    std::vector<std::string> atoms;
    for (const ViewAtom& a : d) atoms.push_back(absl::StrCat(a.extent, ":", a.stride));
    parts.push_back(absl::StrCat("(", absl::StrJoin(atoms, " "), ")"));
  }
  return absl::StrCat(source ? source->name() : "?", "[offset ", offset, ": ", absl::StrJoin(parts, " "), "]");
}

StridedView ContiguousView(const Node* tensor) {
  StridedView v{tensor, 0, {}};
  const Shape& s = tensor->shape();
  v.dims.resize(s.size());
  int64_t stride = 1;
  for (size_t d = s.size(); d-- > 0;) {
    v.dims[d] = {ViewAtom{s[d], s[d] == 1 ? 0 : stride}};
    stride *= s[d];
  }
  return v;
}

std::optional<StridedView> ViewThrough(const StridedView& operand, const Node* op) {
  switch (op->op()) {
    case OpKind::kReshape: return Regroup(operand, op->shape());
    case OpKind::kTranspose: {
      const auto& perm = op->attrs().GetInts("perm");
      StridedView out{operand.source, operand.offset, {}};
      for (int64_t p : perm) out.dims.push_back(operand.dims[p]);
      return out;
    }
    case OpKind::kSlice: return Slice(operand, op);
    case OpKind::kBroadcastTo: return BroadcastView(operand, op->shape());
    default: return std::nullopt;
  }
}

std::optional<StridedView> ViewBack(const StridedView& result, const Node* op) {
  switch (op->op()) {
    case OpKind::kReshape: return Regroup(result, op->operand(0)->shape());
    case OpKind::kTranspose: {
      const auto& perm = op->attrs().GetInts("perm");
      StridedView out{result.source, result.offset, std::vector<ViewDim>(perm.size())};
      for (size_t d = 0; d < perm.size(); ++d) out.dims[perm[d]] = result.dims[d];
      return out;
    }
    default: return std::nullopt;
  }
}

StridedView BroadcastView(const StridedView& view, const Shape& shape) {
  StridedView out{view.source, view.offset, {}};
  const size_t lead = shape.size() - view.dims.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < lead) {
      out.dims.push_back({ViewAtom{shape[d], 0}});
    } else if (Extent(view.dims[d - lead]) == 1 && shape[d] != 1) {
      out.dims.push_back({ViewAtom{shape[d], 0}});
    } else {
      out.dims.push_back(view.dims[d - lead]);
    }
  }
  return out;
}

std::optional<ViewAtom> SingleAtom(const ViewDim& dim) {
  ViewDim n = Normalize(dim);
  if (n.empty()) return ViewAtom{1, 0};
  if (n.size() == 1) return n[0];
  return std::nullopt;
}

ViewDim FlattenDims(const StridedView& view, size_t begin, size_t end) {
  ViewDim all;
  for (size_t d = begin; d < end; ++d) all.insert(all.end(), view.dims[d].begin(), view.dims[d].end());
  return Normalize(all);
}

}  // namespace kiln
