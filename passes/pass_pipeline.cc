#include "passes/pass_pipeline.h"

#include <chrono>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/base/status.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace kiln {
namespace {

void DumpGraph(const DebugOptions& options, const Graph& graph, int index, const std::string& pass) {
  std::string text = PrintGraph(graph);
  if (options.dump_dir.empty()) {
    std::fprintf(stderr, "// ---- after %s ----\n%s", pass.c_str(), text.c_str());
    return;
  }
  std::string path =
      absl::StrFormat("%s/%s.%02d.%s.kir", options.dump_dir, graph.name(), index, pass);
  std::ofstream(path) << text;
}

}  // namespace

absl::StatusOr<std::vector<PassRecord>> PassPipeline::Run(Graph& graph, const DebugOptions& options,
                                                          const Observer& observer) const {
  std::vector<PassRecord> records;
  int index = 0;
  for (const auto& pass : passes_) {
    ++index;
    PassRecord record;
    record.name = pass->name();
    if (options.disabled_passes.count(record.name)) {
      records.push_back(record);
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> changed = pass->Run(graph);
    record.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
    if (!changed.ok()) {
      return absl::Status(changed.status().code(),
                          absl::StrCat("pass ", record.name, ": ", changed.status().message()));
    }
    record.ran = true;
    record.changed = *changed;
    if (options.verify) {
      absl::Status verified = Verify(graph);
      // A pass that breaks the graph is a compiler bug, never the user's fault.
      KILN_CHECK(verified.ok()) << "graph invalid after pass " << record.name << ": " << verified;
    }
    if (record.changed && options.Dumps(DumpKind::kPasses)) DumpGraph(options, graph, index, record.name);
    if (observer) observer(record, graph);
    records.push_back(record);
  }
  return records;
}

}  // namespace kiln
