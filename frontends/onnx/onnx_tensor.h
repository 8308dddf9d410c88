// ONNX tensors and dtypes <-> kiln: TensorProto data (raw_data, the typed fields, external
// data files) into a kiln Tensor, and the dtype mapping.
//
// Supported element types: FLOAT, FLOAT16, BFLOAT16, INT32, INT64, BOOL (kiln's six). DOUBLE
// data is accepted only where the caller allows it (constants: initializers and Constant
// nodes), converted to f32 with round-to-nearest; everything else is kUnimplemented naming
// the type. External data ("location", "offset", "length", "checksum" keys; nothing else) is
// read only from inside `model_dir`: an absolute location, a `..` component, a path that
// leaves the folder through a symlink, a file that is not a regular file or has other hard
// links, a negative or overflowing offset/length, data past the end of the file, or a length
// that differs from the tensor's byte size are all errors. onnx's own external-data helpers
// are never used (reference/anchors-ecosystem-reliability.md §B4).
#ifndef KILN_FRONTENDS_ONNX_ONNX_TENSOR_H_
#define KILN_FRONTENDS_ONNX_ONNX_TENSOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "ir/tensor.h"

namespace onnx {
class TensorProto;
}  // namespace onnx

namespace kiln {

// "FLOAT", "DOUBLE", "FLOAT8E4M3FN", ... ("type 99" for an unknown number).
std::string OnnxTypeName(int32_t onnx_type);
// kiln's dtype for an ONNX element type; kUnimplemented (with the unsupported payload
// "dtype NAME") for any other.
absl::StatusOr<DType> DTypeFromOnnx(int32_t onnx_type);
int32_t OnnxTypeFromDType(DType dtype);

// The data of `proto` as a kiln tensor. Errors do not name the tensor; callers add the place.
// `allow_double`: DOUBLE data becomes f32 instead of an error.
absl::StatusOr<Tensor> TensorFromOnnx(const onnx::TensorProto& proto, const std::string& model_dir,
                                      bool allow_double);

// Adds the kUnimplemented payload used by the node-test runner to group skips.
absl::Status WithUnsupportedCategory(absl::Status status, const std::string& category);

}  // namespace kiln

#endif  // KILN_FRONTENDS_ONNX_ONNX_TENSOR_H_
