// kiln's own JSON graph format (docs/graph-format.md): import and export.
//
// Import parses with RapidJSON's iterative parser (so no input can overflow the stack) under
// explicit limits (kMaxJsonBytes, kMaxJsonDepth in json_common.h), then builds the graph with
// Graph::AddInput/AddConstant/AddNode/AddOutput, which check arity, attributes, shapes and
// dtypes. Every error is a Status whose message starts with the source name and the place:
//   graph.json:12:7: malformed JSON: Invalid value.                  (syntax: line:column)
//   graph.json: nodes[3].inputs[1]: unknown name "x9"; did you mean "x"?   (content: JSON path)
// and says what was expected. Codes: kInvalidArgument (bad content), kNotFound (missing file),
// kPermissionDenied (a side file outside the graph's folder), kDataLoss (a side file too
// short), kOutOfRange (nesting limit), kResourceExhausted (size limit), kUnimplemented (a
// format version this build does not read). No error ever leaves a partial graph behind.
//
// Export writes a stable document, one entry per line, that imports to the same graph:
// inputs in graph order, constants and nodes in PostOrder, attributes sorted and complete
// (defaults included), floats in the shortest form that reads back bit for bit (NaN payloads
// are not kept). export(import(x)) == export(import(export(import(x)))).
#ifndef KILN_FRONTENDS_JSON_JSON_GRAPH_H_
#define KILN_FRONTENDS_JSON_JSON_GRAPH_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace kiln {

// Imports a graph from JSON text. `base_dir` is the folder that side data files ("file"
// fields) are resolved in; they must stay inside it, symlinks included. An empty `base_dir`
// refuses side files. `source_name` starts every error message (usually the file path).
absl::StatusOr<std::unique_ptr<Graph>> ImportJsonGraph(const std::string& json_text,
                                                       const std::string& base_dir,
                                                       const std::string& source_name = "<json>");

// Reads `path` (kNotFound if it is missing, an error if unreadable or over the size limit)
// and imports it with the file's folder as base_dir and the path as source_name.
absl::StatusOr<std::unique_ptr<Graph>> ImportJsonGraphFile(const std::string& path);

// Reads one node's attributes, a JSON object such as {"axis": -1, "epsilon": 1e-5}, as the
// importer reads a node's "attrs" (checked against the op's schema, defaults filled in). The
// C ABI (api/kiln.h) builds graphs node by node with it. Empty text means no attributes.
absl::StatusOr<Attributes> ImportJsonAttributes(const std::string& json_text, OpKind op,
                                                const std::string& source_name = "<attrs>");

struct JsonExportOptions {
  // Constants with more bytes than this go to a side file `<data_prefix>.bin` in `data_dir`
  // (raw little-endian, one after another, each at a 64-byte aligned offset) instead of
  // inline. The JSON refers to it as "<data_prefix>.bin", so save the JSON in `data_dir` too.
  int64_t inline_limit_bytes = 4096;
  std::string data_dir;     // empty: everything inline
  std::string data_prefix;  // side file name stem; empty: the graph's name
};

// Writes `graph` as JSON text (and the side file, if options ask for one and some constant
// is large enough). Fails only on I/O errors or a bad data_prefix.
absl::StatusOr<std::string> ExportJsonGraph(const Graph& graph,
                                            const JsonExportOptions& options = {});

}  // namespace kiln

#endif  // KILN_FRONTENDS_JSON_JSON_GRAPH_H_
