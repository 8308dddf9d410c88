// Fuzz target: the IR text parser (ir/parser.h), the form tests and `kiln dump` write. A text
// that parses and verifies must print back to text that parses to the same print
// (fuzz_check.h).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<kiln::Graph>> graph = kiln::ParseGraph(text);
  if (graph.ok()) kiln::fuzz::CheckTextRoundTrip(**graph);
  return 0;
}
