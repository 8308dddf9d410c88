// Pieces every `kiln` subcommand shares: exit codes, error printing, loading and verifying
// a graph (with --shape bindings for ONNX), and reading inputs / writing outputs as files.
// Exit codes: 0 ok, 1 failure, 2 bad input or usage (the message goes to stderr as
// "kiln <command>: error: ...").
#ifndef KILN_TOOLS_CLI_COMMON_H_
#define KILN_TOOLS_CLI_COMMON_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "tools/cli_args.h"

namespace kiln {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

int Error(const std::string& command, const std::string& message, int code);
int UsageError(const std::string& command, const std::string& message);
double MillisSince(std::chrono::steady_clock::time_point start);

// "--shape batch=8;seq=512" -> {"batch": {8}, "seq": {512}}; "x=16384,4096" binds a whole input.
absl::StatusOr<std::map<std::string, std::vector<int64_t>>> ParseShapeFlag(const std::string& value);

// A graph file imported and verified, or the exit code that says why not.
struct LoadedGraph {
  std::unique_ptr<Graph> graph;
  int exit_code = kExitOk;
};
// Loads and verifies GRAPH for `command`. Every import or verify error (malformed, or an op
// or domain kiln does not take) is bad input: exit 2 with the same message from every command
// (issue 15's contract: bad input 2, GPU or runtime failure 1). Reads --shape from `args`.
LoadedGraph LoadAndVerify(const std::string& command, const std::string& path, const ParsedArgs* args = nullptr);

// Exactly one positional argument, the graph.
bool OneGraph(const std::string& command, const ParsedArgs& args, int* exit_code);

// The value of a positive integer flag `name` (or `fallback` when absent); an error names it.
absl::StatusOr<int> PositiveIntFlag(const ParsedArgs& args, const std::string& name, int fallback);

// Reads every graph input from DIR/NAME.npy or DIR/NAME.bin (exactly one of them).
absl::StatusOr<std::map<std::string, Tensor>> ReadInputs(const Graph& graph, const std::string& dir);
// Writes output i as DIR/<name>.bin and DIR/<name>.npy.
absl::Status WriteOutputs(const std::vector<std::string>& names, const std::vector<Tensor>& values,
                          const std::string& dir);

// The graph's inputs from --inputs DIR or --random SEED (default seed 0); prints which.
absl::StatusOr<std::map<std::string, Tensor>> InputsFromFlags(const std::string& command, const Graph& graph,
                                                               const ParsedArgs& args);

}  // namespace kiln

#endif  // KILN_TOOLS_CLI_COMMON_H_
