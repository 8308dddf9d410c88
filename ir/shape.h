// Static, row-major shapes and numpy broadcasting.
#ifndef KILN_IR_SHAPE_H_
#define KILN_IR_SHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln {

using Shape = std::vector<int64_t>;  // [] is a scalar

int64_t NumElements(const Shape& shape);
// NumElements, or an error when a dimension is negative or the count exceeds 2^48 elements
// (beyond any GPU's memory; also keeps byte counts far from int64 overflow); the product of the
// nonzero dimensions is held to 2^48 as well, so that an empty tensor's strides do not overflow.
absl::StatusOr<int64_t> CheckedNumElements(const Shape& shape);
// "[16384,8192]"; "[]" for a scalar.
std::string ShapeToString(const Shape& shape);
// Row-major strides in elements.
std::vector<int64_t> RowMajorStrides(const Shape& shape);
// numpy broadcasting of two shapes; the error names both shapes.
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);
// True if `from` broadcasts to exactly `to`.
bool BroadcastsTo(const Shape& from, const Shape& to);
// Maps a possibly negative axis into [0, rank); error if out of range.
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank);

}  // namespace kiln

#endif  // KILN_IR_SHAPE_H_
