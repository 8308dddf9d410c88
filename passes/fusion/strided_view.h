// StridedView: a value that a chain of layout ops (reshape, transpose, slice, broadcast_to)
// derives from a tensor in memory, written as index arithmetic over that tensor instead of a
// copy. Element (i_0, ..., i_{r-1}) of the value is element
//     offset + sum over dims d, over the atoms a of dims[d]: coordinate_a * a.stride
// of `source`, where each logical index i_d is split row-major over the atoms of dims[d]
// (outermost first). One atom per dim is the common case; a reshape that merges dims whose
// strides do not chain (GQA's [B, Hkv, G] -> [B, H] over a broadcast G of stride 0) keeps
// several, and a kernel decomposes the merged index over them with a division and a modulo
// each. Templates that read an operand through a view (attention's Q/K/V loads and its
// output store) therefore need no layout kernel around them.
//
// Reading through ops (ViewThrough) works for every reshape, transpose, slice and
// broadcast_to; writing through ops (ViewBack, from a region output back to the value that
// feeds the chain) for the bijective ones, reshape and transpose.
#ifndef KILN_PASSES_FUSION_STRIDED_VIEW_H_
#define KILN_PASSES_FUSION_STRIDED_VIEW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln {

struct ViewAtom {
  int64_t extent = 1;
  int64_t stride = 0;  // elements of the source; 0: broadcast
  bool operator==(const ViewAtom& o) const { return extent == o.extent && stride == o.stride; }
};
using ViewDim = std::vector<ViewAtom>;  // outermost atom first; the extents multiply to the dim's

struct StridedView {
  const Node* source = nullptr;  // the tensor in memory
  int64_t offset = 0;            // elements of `source`
  std::vector<ViewDim> dims;     // one per logical dim of the viewed value

  Shape shape() const;
  // "x[offset 8: (16:3072) (64:1), ...]" for dumps and tests.
  std::string ToString() const;
};

// `tensor` as stored: row-major, one atom per dim.
StridedView ContiguousView(const Node* tensor);

// The view of `op`'s value, given the view of its operand 0; nullopt if `op` is not one of
// reshape, transpose, slice, broadcast_to.
std::optional<StridedView> ViewThrough(const StridedView& operand, const Node* op);

// The view of `op`'s operand 0, given the view its value is written through; nullopt unless
// `op` is a reshape or a transpose (a bijection).
std::optional<StridedView> ViewBack(const StridedView& result, const Node* op);

// numpy broadcasting of `view` to `shape` (leading dims added, extent-1 dims widened, all with
// stride 0). `view` must broadcast to `shape`.
StridedView BroadcastView(const StridedView& view, const Shape& shape);

// The dim as a single (extent, stride) atom after merging atoms that chain and dropping
// extent-1 ones; nullopt when it cannot be one.
std::optional<ViewAtom> SingleAtom(const ViewDim& dim);

// The atoms of dims [begin, end), merged where they chain, extent-1 atoms dropped: the
// row-major decomposition of their flattened index.
ViewDim FlattenDims(const StridedView& view, size_t begin, size_t end);

}  // namespace kiln

#endif  // KILN_PASSES_FUSION_STRIDED_VIEW_H_
