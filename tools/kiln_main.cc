// kiln: the command line (DESIGN.md §1). `check` and `run --reference` work today; the
// subcommands later issues build answer "not built yet" and name the issue, exit code 1.
// Exit codes: 0 ok, 1 failure, 2 bad input or usage (the message goes to stderr as
// "kiln <command>: error: ...").
#include <chrono>
#include <cstdio>
#include <filesystem>
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
#include "tools/dump_command.h"
#include "tools/summary.h"
#include "tools/tensor_io.h"

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr char kMainUsage[] = R"(kiln: a graph-level fusion compiler for NVIDIA GPUs

usage: kiln <command> [flags] GRAPH
       kiln <command> --help
       kiln --help | --version

commands:
  check GRAPH              import and verify a graph, print its IR
  run --reference GRAPH    evaluate a graph on the CPU reference interpreter
  run GRAPH                run on the GPU                    (not built yet: issue 4)
  compile GRAPH            compile for the GPU               (not built yet: issue 4)
  dump GRAPH               show every fusion decision and the cost-model numbers behind it
  bench GRAPH              time on the GPU                   (not built yet: issue 4)
  tune GRAPH               autotune the kernels              (not built yet: issue 4)

GRAPH is a graph file, read by its extension: .json is kiln's JSON format
(docs/graph-format.md), .onnx an ONNX model (the importer of issue 6).
Exit codes: 0 ok, 1 failure, 2 bad input or usage.
)";

constexpr char kCheckUsage[] = R"(usage: kiln check GRAPH

Imports GRAPH (.json: kiln's JSON format, docs/graph-format.md; .onnx: ONNX), verifies
it, and prints it in the canonical IR text form. A graph that does not import or verify
is exit code 2, with the reason (and its place in the file) on stderr.
)";

constexpr char kRunUsage[] = R"(usage: kiln run --reference GRAPH [--inputs DIR | --random SEED] [--outputs DIR]

Evaluates GRAPH on the CPU reference interpreter and prints, per output, its dtype and
shape, then min, max, mean and std (over the finite values; std divides by their count),
the number of NaN and Inf values and the first 4 values; last a timing line.
Without --reference, `kiln run` will run on the GPU: not built yet (issue 4).

flags:
  --reference     evaluate on the CPU reference interpreter
  --inputs DIR    read each graph input NAME from DIR/NAME.npy or DIR/NAME.bin
  --random SEED   random inputs, deterministic in SEED (the default, with SEED 0):
                  floats uniform in (-1, 1), integer indices within their axis
  --outputs DIR   write each output NAME to DIR/NAME.bin and DIR/NAME.npy (creates DIR)

files:
  NAME.bin   raw little-endian elements in the tensor's dtype, row-major, nothing else;
             its size must be exactly elements x bytes per element (bool: 1 byte, 0 or 1)
  NAME.npy   NumPy .npy (format 1.0-3.0, C order) whose dtype and shape must match:
             '<f4' f32, '<f2' f16, '<i4' i32, '<i8' i64, '|b1' bool, and '<u2' for bf16:
             NumPy has no bfloat16, so bf16 is stored as its uint16 bit patterns
             (PyTorch: t.view(torch.uint16).numpy(); back: torch.from_numpy(a).view(torch.bfloat16))
)";

constexpr char kCompileUsage[] = R"(usage: kiln compile GRAPH

Will compile GRAPH for the GPU (fusion passes, code generation, NVRTC) into an
ahead-of-time artifact. Not built yet: the compiler arrives with issue 4.
)";

constexpr char kBenchUsage[] = R"(usage: kiln bench GRAPH

Will time the compiled graph on the GPU against its memory-bandwidth floor. Not built
yet: the GPU runtime arrives with issue 4.
)";

constexpr char kTuneUsage[] = R"(usage: kiln tune GRAPH

Will autotune the kernels of the compiled graph on this GPU. Not built yet: the
autotuner arrives with issue 4.
)";

int Error(const std::string& command, const std::string& message, int code) {
  std::cerr << "kiln " << command << ": error: " << message << "\n";
  return code;
}

int UsageError(const std::string& command, const std::string& message) {
  std::cerr << "kiln " << command << ": error: " << message << " (see kiln " << command
            << " --help)\n";
  return kExitUsage;
}

int NotBuiltYet(const std::string& command, const std::string& what) {
  std::cerr << "kiln " << command << ": not built yet: " << what << "\n";
  return kExitFailure;
}

double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// A graph file imported and verified, or the exit code that says why not.
struct LoadedGraph {
  std::unique_ptr<Graph> graph;
  int exit_code = kExitOk;
};

// The graph formats are api::LoadGraph's: a format not built yet (kUnimplemented) is exit
// code 1; any other import or verify error is bad input, exit code 2.
LoadedGraph LoadAndVerify(const std::string& command, const std::string& path) {
  LoadedGraph loaded;
  absl::StatusOr<std::unique_ptr<Graph>> graph = LoadGraph(path);
  if (!graph.ok()) {
    if (absl::IsUnimplemented(graph.status())) {
      std::cerr << "kiln " << command << ": " << graph.status().message() << "\n";
      loaded.exit_code = kExitFailure;
    } else {
      loaded.exit_code = Error(command, std::string(graph.status().message()), kExitUsage);
    }
    return loaded;
  }
  if (absl::Status status = Verify(**graph); !status.ok()) {
    loaded.exit_code = Error(command, absl::StrCat(path, ": ", status.message()), kExitUsage);
    return loaded;
  }
  loaded.graph = std::move(*graph);
  return loaded;
}

// Exactly one positional argument, the graph.
bool OneGraph(const std::string& command, const ParsedArgs& args, int* exit_code) {
  if (args.positional.size() == 1) return true;
  *exit_code = UsageError(command, args.positional.empty()
                                       ? std::string("missing GRAPH")
                                       : absl::StrCat("expected one GRAPH, got ",
                                                      absl::StrJoin(args.positional, " ")));
  return false;
}

int RunCheck(const std::vector<std::string>& argv) {
  absl::StatusOr<ParsedArgs> args = ParseArgs(argv, {});
  if (!args.ok()) return UsageError("check", std::string(args.status().message()));
  if (args->help) {
    std::cout << kCheckUsage;
    return kExitOk;
  }
  int code = kExitOk;
  if (!OneGraph("check", *args, &code)) return code;
  LoadedGraph loaded = LoadAndVerify("check", args->positional[0]);
  if (!loaded.graph) return loaded.exit_code;
  std::cout << PrintGraph(*loaded.graph);
  return kExitOk;
}

// Reads every graph input from DIR/NAME.npy or DIR/NAME.bin (exactly one of them).
absl::StatusOr<std::map<std::string, Tensor>> ReadInputs(const Graph& graph, const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("--inputs ", dir, " is not a directory"));
  }
  std::map<std::string, Tensor> inputs;
  for (const Node* input : graph.inputs()) {
    std::string npy = (std::filesystem::path(dir) / (input->name() + ".npy")).string();
    std::string bin = (std::filesystem::path(dir) / (input->name() + ".bin")).string();
    bool has_npy = std::filesystem::exists(npy, ec), has_bin = std::filesystem::exists(bin, ec);
    if (has_npy && has_bin) {
      return absl::InvalidArgumentError(absl::StrCat("both ", npy, " and ", bin,
                                                     " exist; keep one"));
    }
    if (!has_npy && !has_bin) {
      return absl::NotFoundError(absl::StrCat(
          "no file for graph input \"", input->name(), "\" (", DTypeName(input->dtype()),
          ShapeToString(input->shape()), "): expected ", npy, " or ", bin));
    }
    absl::StatusOr<Tensor> t = ReadTensorFile(has_npy ? npy : bin, input->dtype(), input->shape());
    if (!t.ok()) return t.status();
    inputs.emplace(input->name(), std::move(*t));
  }
  return inputs;
}

absl::Status WriteOutputs(const Graph& graph, const std::vector<Tensor>& values,
                          const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  for (size_t i = 0; i < values.size(); ++i) {
    std::filesystem::path stem = std::filesystem::path(dir) / graph.outputs()[i].name;
    if (absl::Status s = WriteRawTensor(stem.string() + ".bin", values[i]); !s.ok()) return s;
    if (absl::Status s = WriteNpyTensor(stem.string() + ".npy", values[i]); !s.ok()) return s;
  }
  return absl::OkStatus();
}

int RunRun(const std::vector<std::string>& argv) {
  absl::StatusOr<ParsedArgs> args = ParseArgs(
      argv, {{"reference", false}, {"inputs", true}, {"random", true}, {"outputs", true}});
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
  if (!args->Has("reference")) {
    return NotBuiltYet("run", "running on the GPU arrives with issue 4; "
                              "use --reference for the CPU reference interpreter");
  }

  auto start = std::chrono::steady_clock::now();
  LoadedGraph loaded = LoadAndVerify("run", args->positional[0]);
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
    if (absl::Status s = WriteOutputs(graph, *outputs, dir); !s.ok()) {
      return Error("run", std::string(s.message()), kExitFailure);
    }
    std::cout << "outputs: written to " << dir << " (.bin and .npy)\n";
  }
  std::cout << absl::StrFormat("time: import %.1f ms, interpret %.1f ms\n", import_ms, interpret_ms);
  return kExitOk;
}

// A subcommand that later issues build: --help works, everything else says so honestly.
int RunNotBuilt(const std::string& command, const char* usage, const std::string& what,
                const std::vector<std::string>& argv) {
  for (const std::string& arg : argv) {
    if (arg == "--help" || arg == "-h") {
      std::cout << usage;
      return kExitOk;
    }
  }
  return NotBuiltYet(command, what);
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
  if (command == "compile") {
    return RunNotBuilt(command, kCompileUsage,
                       "the compiler (fusion, code generation, GPU runtime) arrives with issue 4", args);
  }
  if (command == "dump") return DumpCommand(args);
  if (command == "bench") {
    return RunNotBuilt(command, kBenchUsage,
                       "the GPU runtime and benchmarks arrive with issue 4", args);
  }
  if (command == "tune") {
    return RunNotBuilt(command, kTuneUsage, "the autotuner arrives with issue 4", args);
  }
  std::cerr << "kiln: error: unknown command \"" << command
            << "\" (commands: check, run, compile, dump, bench, tune; see kiln --help)\n";
  return kExitUsage;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) { return kiln::Main(argc, argv); }
