// Shared by the fuzz targets in this folder (docs/fuzzing.md). A target returns normally for
// every input its reader refuses with an absl::Status: that is the contract (a located error,
// exit code 2 in the CLI). Anything else -- a crash, a sanitizer report, a KILN_CHECK, an
// exception, or a property below that does not hold -- is a finding, and FuzzFail aborts so
// that libFuzzer (or the replay driver in replay_main.cc) reports it with the input.
#ifndef KILN_TESTS_FUZZ_FUZZ_CHECK_H_
#define KILN_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace kiln::fuzz {

[[noreturn]] inline void FuzzFail(const std::string& what) {
  std::fprintf(stderr, "fuzz property failed: %s\n", what.c_str());
  std::abort();
}

// A graph that a reader accepted and that verifies must survive the text form: PrintGraph's
// output parses (ir/parser.h) and prints the same again. Graphs holding over 2^16 constant
// elements are skipped: an ONNX Range of 2^26 elements (kiln's limit) is a valid import
// whose text takes the fuzzer's whole 10 s timeout to print and parse, and one of 494,567
// (10.8 MB of text) took 2.2 s under ASan alone and over 10 s on a loaded machine
// (regressions/onnx_import/range-494k-elements-round-trip.onnx: 0.2 s without sanitizers).
inline void CheckTextRoundTrip(const Graph& graph) {
  if (!Verify(graph).ok()) return;  // the CLI verifies before anything else and stops here
  int64_t constant_elements = 0;
  for (const Node* n : graph.nodes()) {
    if (n->op() == OpKind::kConstant) constant_elements += n->num_elements();
  }
  if (constant_elements > (int64_t{1} << 16)) return;
  const std::string text = PrintGraph(graph);
  absl::StatusOr<std::unique_ptr<Graph>> reparsed = ParseGraph(text);
  if (!reparsed.ok()) {
    FuzzFail("the printed graph does not parse: " + std::string(reparsed.status().message()) +
             "\n" + text);
  }
  const std::string again = PrintGraph(**reparsed);
  if (again != text) FuzzFail("print -> parse -> print changed the text:\n" + text + "\n---\n" + again);
}

}  // namespace kiln::fuzz

#endif  // KILN_TESTS_FUZZ_FUZZ_CHECK_H_
