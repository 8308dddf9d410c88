// Fuzz target: the ONNX importer (frontends/onnx, docs/onnx.md) on arbitrary bytes parsed as
// an onnx.ModelProto, as ImportOnnxFile does. External data is refused (no model folder), so
// the target never reads the disk. An accepted graph that verifies must round-trip through the
// IR text form (fuzz_check.h).
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontends/onnx/onnx_import.h"
#include "onnx/onnx_pb.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (size == 0 || size > (1u << 24) || !model.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<std::unique_ptr<kiln::Graph>> graph =
      kiln::ImportOnnxModel(model, "", kiln::OnnxImportOptions{}, "<fuzz>");
  if (graph.ok()) kiln::fuzz::CheckTextRoundTrip(**graph);
  return 0;
}
