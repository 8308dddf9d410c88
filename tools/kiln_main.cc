// kiln: the command line (DESIGN.md §1): check, run (--reference on the CPU interpreter, or
// on the GPU), compile, dump, bench and tune.
// Exit codes: 0 ok, 1 failure, 2 bad input or usage (the message goes to stderr as
// "kiln <command>: error: ...").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/compiler.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tools/cli_args.h"
#include "tools/cli_common.h"
#include "tools/gpu_commands.h"
#include "tools/dump_command.h"
#include "tools/summary.h"
#include "tools/tensor_io.h"

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln {
namespace {

constexpr char kMainUsage[] = R"(kiln: a graph-level fusion compiler for NVIDIA GPUs

usage: kiln <command> [flags] GRAPH
       kiln <command> --help
       kiln --help | --version

commands:
  check GRAPH              import and verify a graph, print its IR
  run --reference GRAPH    evaluate a graph on the CPU reference interpreter
  run GRAPH|FILE.kiln      run on the GPU (--check: against the interpreter)
  compile GRAPH -o F.kiln  compile ahead of time into one artifact (no GPU needed)
  dump GRAPH               show every fusion decision and the cost-model numbers behind it
  bench GRAPH|FILE.kiln    time on the GPU against the copy-bandwidth floor
  tune GRAPH               time every kernel's launch parameters on this GPU

GRAPH is a graph file, read by its extension: .json is kiln's JSON format
(docs/graph-format.md), .onnx an ONNX model (the importer of issue 6).
Exit codes: 0 ok, 1 failure, 2 bad input or usage.
)";

constexpr char kCheckUsage[] = R"(usage: kiln check GRAPH [--shape NAME=DIMS] [--json OUT]

Imports GRAPH (.json: kiln's JSON format, docs/graph-format.md; .onnx: ONNX), verifies
it, and prints it in the canonical IR text form. A graph that does not import or verify
is exit code 2, with the reason (and its place in the file) on stderr.

flags:
  --shape B    ONNX symbolic dimensions, NAME=DIM[,DIM...] separated by ';'
  --json OUT   also write the imported graph to OUT in kiln's JSON format; constants over
               4 KiB go to the side file STEM.bin next to OUT (STEM: OUT's name without
               its extension), which OUT refers to
)";

constexpr char kRunUsage[] = R"(usage: kiln run --reference GRAPH [--inputs DIR | --random SEED] [--outputs DIR]
       kiln run GRAPH|FILE.kiln [--check] [--cuda-graph] [--inputs DIR | --random SEED] [--outputs DIR]

With --reference, evaluates GRAPH on the CPU reference interpreter; without it, compiles
GRAPH (or loads the artifact FILE.kiln, without NVRTC) and runs it on the GPU. Prints, per
output, its dtype and shape, then min, max, mean and std (over the finite values; std
divides by their count), the number of NaN and Inf values and the first 4 values; last a
timing line. --check compares every GPU output with the interpreter evaluating the same plan
region by region (f32 inside a region, rounding where the GPU stores: api/reference.h) at
the graph tolerances of ir/compare.h, and shows the difference from the whole graph computed
in f32; a mismatch is exit code 1.

flags:
  --reference     evaluate on the CPU reference interpreter
  --check         (GPU) compare with the interpreter
  --cuda-graph    (GPU) run through a CUDA graph: the first run captures the steps (after one
                  plain run) and instantiates the graph, later runs with the same device
                  pointers replay it with one launch, runs with other pointers capture again
                  and update it in place; prints the launches per run and what the graph did
  --arch ARCH     (GPU, GRAPH) NVRTC target; default: this GPU's
  --device NAME   cost model device spec: auto (default: this GPU's; h100 without one), h100, h200
  --shape B       ONNX symbolic dimensions, NAME=DIM[,DIM...] separated by ';'
  --inputs DIR    read each graph input NAME from DIR/NAME.npy or DIR/NAME.bin
  --random SEED   random inputs, deterministic in SEED (the default, with SEED 0):
                  floats uniform in (-1, 1) (a matmul's right operand / sqrt(K)),
                  integer indices within their axis
  --outputs DIR   write each output NAME to DIR/NAME.bin and DIR/NAME.npy (creates DIR)

files:
  NAME.bin   raw little-endian elements in the tensor's dtype, row-major, nothing else;
             its size must be exactly elements x bytes per element (bool: 1 byte, 0 or 1)
  NAME.npy   NumPy .npy (format 1.0-3.0, C order) whose dtype and shape must match:
             '<f4' f32, '<f2' f16, '<i4' i32, '<i8' i64, '|b1' bool, and '<u2' for bf16:
             NumPy has no bfloat16, so bf16 is stored as its uint16 bit patterns
             (PyTorch: t.view(torch.uint16).numpy(); back: torch.from_numpy(a).view(torch.bfloat16))
)";



std::vector<std::string> OutputNames(const Graph& graph) {
  std::vector<std::string> names;
  for (const Graph::Output& o : graph.outputs()) names.push_back(o.name);
  return names;
}

int RunCheck(const std::vector<std::string>& argv) {
  absl::StatusOr<ParsedArgs> args = ParseArgs(argv, {{"shape", true}, {"json", true}});
  if (!args.ok()) return UsageError("check", std::string(args.status().message()));
  if (args->help) {
    std::cout << kCheckUsage;
    return kExitOk;
  }
  int code = kExitOk;
  if (!OneGraph("check", *args, &code)) return code;
  const std::filesystem::path out = args->Has("json") ? args->values.at("json") : "";
  if (args->Has("json") && (out.stem().empty() || out.extension() == ".bin")) {  // before any work
    return UsageError("check", absl::StrCat("--json ", out.string(), ": name a file not ending in .bin (",
                                            "the weights go to its side file STEM.bin)"));
  }
  LoadedGraph loaded = LoadAndVerify("check", args->positional[0], &*args);
  if (!loaded.graph) return loaded.exit_code;
  std::cout << PrintGraph(*loaded.graph);
  if (args->Has("json")) {
    if (absl::Status s = SaveGraphAsJson(*loaded.graph, out.string()); !s.ok()) {
      return Error("check", absl::StrCat("--json ", s.message()), kExitFailure);
    }
    std::cerr << "kiln check: wrote " << out.string() << "\n";
  }
  return kExitOk;
}

int RunRun(const std::vector<std::string>& argv) {
  bool reference = std::find(argv.begin(), argv.end(), "--reference") != argv.end();
  bool help = std::find(argv.begin(), argv.end(), "--help") != argv.end() ||
              std::find(argv.begin(), argv.end(), "-h") != argv.end();
  if (!reference && !help) return RunGpuCommand(argv);
  absl::StatusOr<ParsedArgs> args = ParseArgs(
      argv, {{"reference", false}, {"inputs", true}, {"random", true}, {"outputs", true}, {"shape", true}});
  if (!args.ok()) return UsageError("run", std::string(args.status().message()));
  if (args->help) {
    std::cout << kRunUsage;
    return kExitOk;
  }
  int code = kExitOk;
  if (!OneGraph("run", *args, &code)) return code;
  if (args->Has("inputs") && args->Has("random")) {
    return UsageError("run", "--inputs and --random exclude each other");
  }
  uint64_t seed = 0;
  if (args->Has("random") && !absl::SimpleAtoi(args->values.at("random"), &seed)) {
    return UsageError("run", absl::StrCat("--random needs a non-negative integer seed, not \"",
                                          args->values.at("random"), "\""));
  }

  auto start = std::chrono::steady_clock::now();
  LoadedGraph loaded = LoadAndVerify("run", args->positional[0], &*args);
  if (!loaded.graph) return loaded.exit_code;
  const Graph& graph = *loaded.graph;
  double import_ms = MillisSince(start);

  std::map<std::string, Tensor> inputs;
  if (args->Has("inputs")) {
    absl::StatusOr<std::map<std::string, Tensor>> read = ReadInputs(graph, args->values.at("inputs"));
    if (!read.ok()) return Error("run", std::string(read.status().message()), kExitUsage);
    inputs = std::move(*read);
    std::cout << "inputs: read from " << args->values.at("inputs") << "\n";
  } else {
    inputs = RandomInputs(graph, seed);
    std::cout << "inputs: random, seed " << seed << "\n";
  }

  start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<Tensor>> outputs = Interpret(graph, inputs);
  double interpret_ms = MillisSince(start);
  if (!outputs.ok()) return Error("run", std::string(outputs.status().message()), kExitFailure);
  if (outputs->size() != graph.outputs().size()) {
    return Error("run", absl::StrCat("the interpreter returned ", outputs->size(), " outputs for ",
                                     graph.outputs().size()), kExitFailure);
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    const Tensor& t = (*outputs)[i];
    std::cout << FormatSummary(graph.outputs()[i].name, t, Summarize(t));
  }
  if (args->Has("outputs")) {
    const std::string& dir = args->values.at("outputs");
    if (absl::Status s = WriteOutputs(OutputNames(graph), *outputs, dir); !s.ok()) {
      return Error("run", std::string(s.message()), kExitFailure);
    }
    std::cout << "outputs: written to " << dir << " (.bin and .npy)\n";
  }
  std::cout << absl::StrFormat("time: import %.1f ms, interpret %.1f ms\n", import_ms, interpret_ms);
  return kExitOk;
}


int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kMainUsage;
    return kExitUsage;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kMainUsage;
    return kExitOk;
  }
  if (command == "--version") {
    std::cout << "kiln " << KILN_VERSION << "\n";
    return kExitOk;
  }
  if (command == "check") return RunCheck(args);
  if (command == "run") return RunRun(args);
  if (command == "compile") return CompileCommand(args);
  if (command == "dump") return DumpCommand(args);
  if (command == "bench") return BenchCommand(args);
  if (command == "tune") return TuneCommand(args);
  std::cerr << "kiln: error: unknown command \"" << command
            << "\" (commands: check, run, compile, dump, bench, tune; see kiln --help)\n";
  return kExitUsage;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) { return kiln::Main(argc, argv); }
