// ONNX import (docs/onnx.md): an ONNX ModelProto -> ir::Graph.
//
// The model is parsed with the ONNX project's own protobuf classes (Debian's libonnx-dev,
// onnx/onnx_pb.h); nothing here parses protobuf by hand. The default domain ("" or "ai.onnx")
// is read at opsets kMinOnnxOpset..kMaxOnnxOpset; every operator maps onto kiln's op table
// (ir/ops.def) directly or as a small decomposition (frontends/onnx/onnx_ops*.cc). Values
// computed only from constants (Shape of a static tensor, Range, the index arithmetic that
// exporters write) are folded to constants as they are imported, so a Reshape whose shape
// comes from such a chain is static.
//
// Errors are Statuses whose message starts with the source name (the file path) and the place:
//   model.onnx: node #12 "/attn/Reshape" (Reshape): input 1 "shape" must be a constant ...
//   model.onnx: graph input "x": dimension 0 is symbolic ("batch"); bind it with ...
//   model.onnx: initializer "w": external data "../w.bin" resolves outside the model's folder
// Codes: kInvalidArgument (a malformed or inconsistent model), kUnimplemented (something
// valid in ONNX that kiln does not support: an op, an attribute value, a dtype, an opset, a
// domain), kNotFound (a missing file), kPermissionDenied (external data outside the model's
// folder), kDataLoss (external data too short; a truncated model file is kInvalidArgument,
// as protobuf cannot tell it from a non-ONNX file), kFailedPrecondition (an
// unbound symbolic dimension). kUnimplemented errors carry a payload under
// kOnnxUnsupportedPayload whose value is a short, stable category ("op Foo", "dtype DOUBLE",
// "attribute Attention.softcap", "opset 25", ...) that the node-test runner groups skips by.
// ONNX value names may be any string; kiln names are made from them deterministically
// (invalid characters become '_', clashes get a ".N" suffix) and errors quote the ONNX name.
#ifndef KILN_FRONTENDS_ONNX_ONNX_IMPORT_H_
#define KILN_FRONTENDS_ONNX_ONNX_IMPORT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace kiln {

inline constexpr int kMinOnnxOpset = 13;
inline constexpr int kMaxOnnxOpset = 23;
// The absl::Status payload type URL of kUnimplemented import errors (see above).
inline constexpr char kOnnxUnsupportedPayload[] = "kiln.onnx/unsupported";

struct OnnxImportOptions {
  // Binds graph inputs whose shape is not fully static. A key is either
  //  * a graph input's ONNX name, with its whole shape ({"input_ids", {8, 512}}), or
  //  * a symbolic dimension's name (dim_param), with one value ({"batch", {8}}).
  // The CLI's `--shape NAME=16384,4096` fills this map. A key that names neither is an error.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Graph inputs replaced by constants (name -> value; the dtype and shape must match the
  // declaration). This specialises a model on inputs that are really configuration -- a
  // Reshape target, reduction axes, a Dropout ratio -- so that they can be folded.
  std::map<std::string, Tensor> constant_inputs;
  // Values computed from constants are folded at import time up to this many elements each
  // (broadcasts up to 1024); larger ones stay graph nodes, evaluated at run time.
  int64_t max_folded_elements = int64_t{1} << 16;
};

// Reads and imports `path`; external data files are resolved in the file's folder.
absl::StatusOr<std::unique_ptr<Graph>> ImportOnnxFile(const std::string& path,
                                                      const OnnxImportOptions& options = {});

// Imports a parsed model. External data is resolved inside `model_dir` (empty: refused).
// `source_name` starts every error message.
absl::StatusOr<std::unique_ptr<Graph>> ImportOnnxModel(const onnx::ModelProto& model,
                                                       const std::string& model_dir,
                                                       const OnnxImportOptions& options = {},
                                                       const std::string& source_name = "<onnx>");

}  // namespace kiln

#endif  // KILN_FRONTENDS_ONNX_ONNX_IMPORT_H_
