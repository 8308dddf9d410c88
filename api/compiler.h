// The C++ API every entry point shares (DESIGN.md §1): load a graph from a file, run the
// pass pipeline, and plan fusion. The CLI, the Python package and the examples call these,
// never the layers below directly. (Code generation and execution join in issue 4.)
#ifndef KILN_API_COMPILER_H_
#define KILN_API_COMPILER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/base/debug_options.h"
#include "ir/graph.h"
#include "passes/cost/device_spec.h"
#include "passes/fusion/priority_fusion.h"
#include "passes/pass_pipeline.h"

namespace kiln {

// Imports a graph file by its extension: .json (kiln's format). ONNX arrives with issue 6.
absl::StatusOr<std::unique_ptr<Graph>> LoadGraph(const std::string& path);

struct AnalyzeOptions {
  std::string device = "h100";  // a named DeviceSpec (no GPU needed)
  DebugOptions debug;            // usually DebugOptionsFromEnv()
  bool keep_pass_snapshots = false;  // record the printed graph after every pass
};

struct Analysis {
  std::unique_ptr<Graph> graph;  // after the pipeline; the plan's regions point into it
  std::string imported_text;     // the graph as imported, printed
  std::vector<PassRecord> passes;
  std::vector<std::pair<std::string, std::string>> snapshots;  // pass name -> graph after it
  FusionPlan plan;
};

// Runs the default pipeline on `graph`, then priority fusion on the named device. Honours
// KILN_DUMP=ir,passes,ledger (to KILN_DUMP_DIR or stderr) and KILN_FUSION_FUEL.
absl::StatusOr<Analysis> Analyze(std::unique_ptr<Graph> graph, const AnalyzeOptions& options);

}  // namespace kiln

#endif  // KILN_API_COMPILER_H_
