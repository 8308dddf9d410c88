// kiln's own JSON graph format (docs/graph-format.md): import and export.
// Import parses with RapidJSON's iterative parser and reports every error with its place,
// a JSON path such as `nodes[3].inputs[1]`, and what was expected. Export writes a document
// that imports to the same graph; export(import(x)) is stable.
#ifndef KILN_FRONTENDS_JSON_JSON_GRAPH_H_
#define KILN_FRONTENDS_JSON_JSON_GRAPH_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace kiln {

// `base_dir` is the folder side data files are resolved in (they must stay inside it).
// `source_name` prefixes error messages (usually the file path).
absl::StatusOr<std::unique_ptr<Graph>> ImportJsonGraph(const std::string& json_text,
                                                       const std::string& base_dir,
                                                       const std::string& source_name = "<json>");
absl::StatusOr<std::unique_ptr<Graph>> ImportJsonGraphFile(const std::string& path);

struct JsonExportOptions {
  // Constants with more bytes than this go to a side file `<data_prefix>.bin` in `data_dir`
  // (raw little-endian, one after another, each at a 64-byte aligned offset) instead of inline.
  int64_t inline_limit_bytes = 4096;
  std::string data_dir;     // empty: everything inline
  std::string data_prefix;  // side file name stem
};
absl::StatusOr<std::string> ExportJsonGraph(const Graph& graph, const JsonExportOptions& options = {});

}  // namespace kiln

#endif  // KILN_FRONTENDS_JSON_JSON_GRAPH_H_
