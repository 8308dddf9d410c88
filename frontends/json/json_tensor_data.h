// Internal to frontends/json: constant data in the JSON format. Reading inline values (JSON
// numbers, "nan"/"inf"/"-inf" strings for floats, true/false or 0/1 for bool) with a check
// that each value is representable in the dtype; reading raw little-endian side files that
// must stay inside the graph's folder; and writing each element in the shortest text that
// reads back bit for bit, so export(import(x)) is stable.
#ifndef KILN_FRONTENDS_JSON_JSON_TENSOR_DATA_H_
#define KILN_FRONTENDS_JSON_JSON_TENSOR_DATA_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor.h"
#include "rapidjson/document.h"

namespace kiln::json_internal {

// Element count of `shape`, or an error at `path` if the count or its bytes in `dtype`
// overflow int64.
absl::StatusOr<int64_t> CheckedNumElements(const Shape& shape, DType dtype,
                                           const std::string& path);

// `data` must be a flat row-major array with one value per element of `shape`.
absl::StatusOr<Tensor> ReadInlineData(const rapidjson::Value& data, DType dtype,
                                      const Shape& shape, const std::string& path);

// Reads the tensor from the side file `file` (relative to `base_dir`) at byte `offset`.
// `path` is the place of the "file" field, for errors. Refuses absolute paths and paths
// that resolve outside base_dir (by `..` or through a symlink), missing and short files,
// and bool bytes other than 0 and 1.
absl::StatusOr<Tensor> ReadSideFile(const std::string& base_dir, const std::string& file,
                                    int64_t offset, DType dtype, const Shape& shape,
                                    const std::string& path);

// Element `i` of `tensor` as JSON text that ReadInlineData reads back to the same bits
// (NaN as "nan", any payload lost; -0.0 as -0.0).
std::string FormatElement(const Tensor& tensor, int64_t i);

// A float attribute as JSON: the shortest round-tripping number, always with a '.' or an
// exponent so it reads back as a float; NaN and infinities as strings.
std::string FormatFloatAttr(double value);

}  // namespace kiln::json_internal

#endif  // KILN_FRONTENDS_JSON_JSON_TENSOR_DATA_H_
