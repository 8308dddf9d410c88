#include "tools/cli_common.h"

#include <filesystem>
#include <iostream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/compiler.h"
#include "ir/interpreter.h"
#include "ir/verifier.h"
#include "tools/tensor_io.h"

namespace kiln {

int Error(const std::string& command, const std::string& message, int code) {
  std::cerr << "kiln " << command << ": error: " << message << "\n";
  return code;
}

int UsageError(const std::string& command, const std::string& message) {
  std::cerr << "kiln " << command << ": error: " << message << " (see kiln " << command << " --help)\n";
  return kExitUsage;
}

double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

absl::StatusOr<std::map<std::string, std::vector<int64_t>>> ParseShapeFlag(const std::string& value) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (absl::string_view binding : absl::StrSplit(value, ';', absl::SkipWhitespace())) {
    std::vector<absl::string_view> parts = absl::StrSplit(binding, absl::MaxSplits('=', 1));
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shape expects NAME=DIM[,DIM...] (bindings separated by ';'), not \"", binding, "\""));
    }
    std::vector<int64_t> dims;
    for (absl::string_view d : absl::StrSplit(parts[1], ',')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(d, &v) || v < 0) {
        return absl::InvalidArgumentError(absl::StrCat("--shape ", binding, ": \"", d, "\" is not a dimension"));
      }
      dims.push_back(v);
    }
    if (!shapes.emplace(std::string(parts[0]), dims).second) {
      return absl::InvalidArgumentError(absl::StrCat("--shape binds ", parts[0], " twice"));
    }
  }
  return shapes;
}

LoadedGraph LoadAndVerify(const std::string& command, const std::string& path, const ParsedArgs* args) {
  LoadedGraph loaded;
  LoadOptions options;
  if (args != nullptr && args->values.count("shape")) {
    auto shapes = ParseShapeFlag(args->values.at("shape"));
    if (!shapes.ok()) {
      loaded.exit_code = UsageError(command, std::string(shapes.status().message()));
      return loaded;
    }
    options.shapes = *shapes;
  }
  absl::StatusOr<std::unique_ptr<Graph>> graph = LoadGraph(path, options);
  if (!graph.ok()) {
    // Whatever the file holds that kiln cannot take (malformed, or an op or domain kiln does
    // not support) is bad input for every command alike: exit 2, one message.
    loaded.exit_code = Error(command, std::string(graph.status().message()), kExitUsage);
    return loaded;
  }
  if (absl::Status status = Verify(**graph); !status.ok()) {
    loaded.exit_code = Error(command, absl::StrCat(path, ": ", status.message()), kExitUsage);
    return loaded;
  }
  loaded.graph = std::move(*graph);
  return loaded;
}

absl::StatusOr<int> PositiveIntFlag(const ParsedArgs& args, const std::string& name, int fallback) {
  if (!args.values.count(name)) return fallback;
  int value = 0;
  if (!absl::SimpleAtoi(args.values.at(name), &value) || value < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a positive integer"));
  }
  return value;
}

bool OneGraph(const std::string& command, const ParsedArgs& args, int* exit_code) {
  if (args.positional.size() == 1) return true;
  *exit_code = UsageError(command, args.positional.empty()
                                       ? std::string("missing GRAPH")
                                       : absl::StrCat("expected one GRAPH, got ", absl::StrJoin(args.positional, " ")));
  return false;
}

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
      return absl::InvalidArgumentError(absl::StrCat("both ", npy, " and ", bin, " exist; keep one"));
    }
    if (!has_npy && !has_bin) {
      return absl::NotFoundError(absl::StrCat("no file for graph input \"", input->name(), "\" (",
                                              DTypeName(input->dtype()), ShapeToString(input->shape()),
                                              "): expected ", npy, " or ", bin));
    }
    absl::StatusOr<Tensor> t = ReadTensorFile(has_npy ? npy : bin, input->dtype(), input->shape());
    if (!t.ok()) return t.status();
    inputs.emplace(input->name(), std::move(*t));
  }
  return inputs;
}

absl::Status WriteOutputs(const std::vector<std::string>& names, const std::vector<Tensor>& values,
                          const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  for (size_t i = 0; i < values.size(); ++i) {
    std::filesystem::path stem = std::filesystem::path(dir) / names[i];
    if (absl::Status s = WriteRawTensor(stem.string() + ".bin", values[i]); !s.ok()) return s;
    if (absl::Status s = WriteNpyTensor(stem.string() + ".npy", values[i]); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, Tensor>> InputsFromFlags(const std::string& command, const Graph& graph,
                                                               const ParsedArgs& args) {
  if (args.Has("inputs") && args.Has("random")) {
    return absl::InvalidArgumentError("--inputs and --random exclude each other");
  }
  if (args.Has("inputs")) {
    absl::StatusOr<std::map<std::string, Tensor>> read = ReadInputs(graph, args.values.at("inputs"));
    if (read.ok()) std::cout << "inputs: read from " << args.values.at("inputs") << "\n";
    return read;
  }
  uint64_t seed = 0;
  if (args.Has("random") && !absl::SimpleAtoi(args.values.at("random"), &seed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--random needs a non-negative integer seed, not \"", args.values.at("random"), "\""));
  }
  std::cout << "inputs: random, seed " << seed << "\n";
  return RandomInputs(graph, seed);
}

}  // namespace kiln
