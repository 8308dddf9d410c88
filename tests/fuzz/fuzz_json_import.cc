// Fuzz target: the JSON graph importer (frontends/json, docs/graph-format.md) on arbitrary
// text, as `kiln check graph.json` reads it. Side files are refused (empty base_dir), so the
// target never touches the disk. An accepted graph that verifies must also round-trip through
// the IR text form (fuzz_check.h).
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontends/json/json_graph.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<kiln::Graph>> graph = kiln::ImportJsonGraph(text, "", "<fuzz>");
  if (graph.ok()) kiln::fuzz::CheckTextRoundTrip(**graph);
  return 0;
}
