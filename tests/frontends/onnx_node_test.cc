// ONNX's own backend node tests (onnx 1.22.0 wheel: onnx/backend/test/data/node/test_*/), run
// through the importer and the reference interpreter.
//
// The directory comes from $KILN_ONNX_NODE_TESTS, else from the installed `onnx` Python
// package (`pip install onnx==1.22.0`: later versions no longer ship the files). Without
// either the test is skipped with that reason.
//
// For every test directory: import model.onnx; a kUnimplemented import error skips the test
// with the importer's category (unsupported op, dtype, attribute, opset, ...), never silently;
// otherwise every test_data_set_*/input_*.pb runs through Interpret() and the outputs are
// compared with output_*.pb: shape and dtype exactly, values at the suite's own tolerance
// |got - want| <= atol + rtol * |want| with rtol 1e-3, atol 1e-7 (NaN matches NaN). f16 and
// bf16 outputs use rtol 2e-3 and 1e-2: about one unit in the last place, because kiln rounds
// a double-precision result once while NumPy's reference rounds every intermediate step.
//
// Built with KILN_NODE_TESTS_ON_GPU (the gpu-labelled binary frontends_onnx_node_gpu_test,
// run by scripts/gpu-check), each graph is instead compiled for the GPU and run there (the
// kernels and cuBLASLt), compared at the same tolerances, and skips cleanly without a GPU.
//
// ONNX 1.22 stamps some tests with opset 24 or 25, which kiln's importer refuses. A test at
// opset 24/25 whose every node is a default-domain op that got no new version at 24 or 25, or
// whose 24/25 versions only added element types (kTypesOnlyIn24And25), means the same at
// opset 23: it is imported with its opset re-stamped to 23 and counted apart ("run at opset
// 23"). Any other test at 24/25 stays skipped as "opset 24"/"opset 25".
//
// The summary printed at the end lists passed / failed / skipped counts, skips grouped by
// reason, and every failure with its first mismatch. The test fails if any test of a supported
// op fails, unless it is in kKnownFailures below with the reason.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/onnx_import.h"
#include "frontends/onnx/onnx_tensor.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#ifdef KILN_NODE_TESTS_ON_GPU
#include "api/compiler.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#endif
#include "onnx/onnx_pb.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// Excluded before import: these cases draw their mask from NumPy's RNG, which a Philox keep
// rule (docs/dropout.md) cannot reproduce. The zero-ratio training cases stay in.
const std::regex kExcluded("^test_training_dropout(_default)?(_mask)?$");
constexpr char kExcludedReason[] = "excluded: training dropout with ratio > 0 uses NumPy's RNG (kiln uses Philox)";

// The default-domain ops that got a new version at opset 24 or 25 (ONNX's operator changelog,
// https://onnx.ai/onnx/operators/, checked against onnx 1.22's schemas), and whether that
// version only added element types (FLOAT8E8M0 at 24; INT2, UINT2 at 25), which kiln refuses
// anyway. Cast and CastLike 24 also added `round_mode`, which applies only to casts to
// FLOAT8E8M0; the opset-23 importer refuses the attribute wherever it appears, so it is never
// ignored. Attention 24 added the `nonpad_kv_seqlen` input; the others are ops kiln lacks.
const std::map<std::string, bool>& NewIn24Or25() {
  static const auto* table = new std::map<std::string, bool>{
      {"Cast", true}, {"CastLike", true}, {"Constant", true}, {"ConstantOfShape", true},
      {"Flatten", true}, {"Identity", true}, {"Reshape", true}, {"Shape", true}, {"Size", true},
      {"Squeeze", true}, {"Transpose", true}, {"Unsqueeze", true},
      {"Attention", false}, {"DequantizeLinear", false}, {"If", false}, {"Loop", false}, {"Pad", false},
      {"QuantizeLinear", false}, {"Scan", false}, {"SplitToSequence", false}, {"Swish", false},
      {"TensorScatter", false}, {"TopK", false}};
  return *table;
}

// True when `model` is at default-domain opset 24 or 25 and means the same at opset 23 (see
// the file comment); its opset is then set to 23.
bool RestampTo23(onnx::ModelProto& model) {
  onnx::OperatorSetIdProto* default_domain = nullptr;
  for (auto& entry : *model.mutable_opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx") default_domain = &entry;
  }
  if (default_domain == nullptr || default_domain->version() < 24 || default_domain->version() > 25) return false;
  if (model.functions_size() > 0) return false;
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
    auto it = NewIn24Or25().find(node.op_type());
    if (it != NewIn24Or25().end() && !it->second) return false;
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g() || a.graphs_size() > 0) return false;  // subgraphs: not looked into
    }
  }
  default_domain->set_version(23);
  return true;
}

// Known failures of supported ops: test name -> why. Keep it short and explain each.
const std::map<std::string, std::string>& KnownFailures() {
  static const auto* table = new std::map<std::string, std::string>{
  };
  return *table;
}

std::string NodeTestDir() {
  if (const char* env = std::getenv("KILN_ONNX_NODE_TESTS")) return env;
  FILE* pipe = popen("python3 -c \"import onnx,os;print(os.path.join(os.path.dirname(onnx.__file__),"
                     "'backend','test','data','node'))\" 2>/dev/null", "r");
  if (pipe == nullptr) return "";
  char buf[4096];
  std::string out;
  while (fgets(buf, sizeof(buf), pipe)) out += buf;
  pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

absl::StatusOr<onnx::TensorProto> ReadProto(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  if (!in || !proto.ParseFromIstream(&in)) return absl::InvalidArgumentError(absl::StrCat("cannot parse ", path.string()));
  return proto;
}

std::vector<fs::path> Sorted(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  // input_10.pb after input_9.pb.
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    std::string x = a.filename().string(), y = b.filename().string();
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  return out;
}

std::string Category(const absl::Status& status) {
  auto payload = status.GetPayload(kOnnxUnsupportedPayload);
  return payload ? std::string(*payload) : "unsupported (no category)";
}

// "" when `got` matches `want`, else the first mismatch.
std::string Compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return absl::StrCat("got ", DTypeName(got.dtype()), ShapeToString(got.shape()), ", want ",
                        DTypeName(want.dtype()), ShapeToString(want.shape()));
  }
  double rtol = 1e-3, atol = 1e-7;
  if (want.dtype() == DType::kF16) rtol = 2e-3;
  if (want.dtype() == DType::kBF16) rtol = 1e-2;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    double g = got.GetF64(i), w = want.GetF64(i);
    bool ok;
    if (!IsFloat(want.dtype())) ok = got.GetI64(i) == want.GetI64(i);
    else if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else ok = std::abs(g - w) <= atol + rtol * std::abs(w);
    if (!ok) return absl::StrCat("element ", i, ": got ", g, ", want ", w);
  }
  return "";
}

struct Outcome {
  enum Kind { kPassed, kFailed, kSkipped } kind;
  std::string detail;  // skip reason or first mismatch
  bool frozen = false;  // passed with configuration-like inputs frozen to constants
  bool restamped = false;  // imported at opset 23 instead of its own 24 or 25
};

absl::StatusOr<onnx::ModelProto> ReadModel(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto proto;
  if (!in || !proto.ParseFromIstream(&in)) return absl::InvalidArgumentError("cannot parse model.onnx");
  return proto;
}

// The model's graph inputs that are not initializers, in order (the order of input_N.pb).
std::vector<std::string> InputNames(const onnx::ModelProto& proto) {
  std::set<std::string> inits;
  for (const auto& t : proto.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> out;
  for (const auto& v : proto.graph().input()) {
    if (!inits.count(v.name())) out.push_back(v.name());
  }
  return out;
}

// Reads a TensorProto file; a kUnimplemented status (an unsupported dtype) means "skip".
absl::StatusOr<Tensor> ReadTensor(const fs::path& path) {
  auto proto = ReadProto(path);
  if (!proto.ok()) return proto.status();
  return TensorFromOnnx(*proto, "", /*allow_double=*/false);
}

// The graph's outputs for `inputs`: the interpreter, or the GPU (compiled for this device).
absl::StatusOr<std::vector<Tensor>> Evaluate(const Graph& g, const std::map<std::string, Tensor>& inputs) {
#ifdef KILN_NODE_TESTS_ON_GPU
  return CompileAndRunOnHost(g, inputs);
#else
  return Interpret(g, inputs);
#endif
}

// Runs one data set on `g`; "" on success, else the first problem.
std::string RunSet(const Graph& g, const fs::path& set, const std::vector<std::string>& names,
                   const std::map<std::string, Tensor>& values) {
  // Graph inputs keep the ONNX order of the inputs that were not frozen.
  std::map<std::string, Tensor> inputs;
  size_t k = 0;
  for (const std::string& name : names) {
    auto it = values.find(name);
    if (it == values.end()) continue;  // frozen
    if (k >= g.inputs().size()) return "more inputs than the graph has";
    inputs[g.inputs()[k++]->name()] = it->second;
  }
  std::vector<Tensor> want;
  for (const fs::path& f : Sorted(set, "output_")) {
    auto t = ReadTensor(f);
    if (!t.ok()) return absl::StrCat("SKIP:", t.status().code() == absl::StatusCode::kUnimplemented
                                                  ? Category(t.status()) : std::string(t.status().message()));
    want.push_back(std::move(*t));
  }
  absl::StatusOr<std::vector<Tensor>> got = Evaluate(g, inputs);
  if (!got.ok()) return absl::StrCat("evaluate: ", got.status().message());
  if (got->size() != want.size()) return absl::StrCat(got->size(), " outputs, want ", want.size());
  for (size_t j = 0; j < want.size(); ++j) {
    std::string mismatch = Compare((*got)[j], want[j]);
    if (!mismatch.empty()) return absl::StrCat(set.filename().string(), " output ", j, ": ", mismatch);
  }
  return "";
}

// Runs the test in `dir` whose model is `proto` (possibly re-stamped to opset 23).
Outcome RunModel(const fs::path& dir, const onnx::ModelProto& proto) {
  const fs::path model = dir / "model.onnx";
  auto import = [&](const OnnxImportOptions& options) {
    return ImportOnnxModel(proto, dir.string(), options, model.string());
  };
  const std::vector<std::string> names = InputNames(proto);
  absl::StatusOr<std::unique_ptr<Graph>> graph = import({});
  // Inputs that must be constants (a Reshape target, axes, a Dropout ratio) are frozen to the
  // data set's values and the model is imported again, once per data set.
  const bool freeze = !graph.ok() && graph.status().code() == absl::StatusCode::kUnimplemented &&
                      Category(graph.status()).rfind("non-constant", 0) == 0;
  if (!graph.ok() && !freeze) {
    if (graph.status().code() == absl::StatusCode::kUnimplemented) return {Outcome::kSkipped, Category(graph.status())};
    return {Outcome::kFailed, absl::StrCat("import: ", graph.status().message())};
  }
  int sets = 0;
  for (const fs::path& set : Sorted(dir, "test_data_set_")) {
    ++sets;
    std::vector<fs::path> files = Sorted(set, "input_");
    if (files.size() != names.size()) {
      return {Outcome::kFailed, absl::StrCat(set.filename().string(), ": ", files.size(), " input files for ",
                                             names.size(), " graph inputs")};
    }
    std::map<std::string, Tensor> values;
    OnnxImportOptions options;
    for (size_t i = 0; i < files.size(); ++i) {
      auto t = ReadTensor(files[i]);
      if (!t.ok()) {
        if (t.status().code() == absl::StatusCode::kUnimplemented) return {Outcome::kSkipped, Category(t.status())};
        return {Outcome::kFailed, absl::StrCat(files[i].filename().string(), ": ", t.status().message())};
      }
      if (freeze && (!IsFloat(t->dtype()) || t->shape().empty())) {
        options.constant_inputs[names[i]] = std::move(*t);
      } else {
        values[names[i]] = std::move(*t);
      }
    }
    if (freeze) {
      graph = import(options);
      if (!graph.ok()) {
        if (graph.status().code() == absl::StatusCode::kUnimplemented) return {Outcome::kSkipped, Category(graph.status())};
        return {Outcome::kFailed, absl::StrCat("import (inputs frozen): ", graph.status().message())};
      }
    }
    std::string problem = RunSet(**graph, set, names, values);
    if (problem.rfind("SKIP:", 0) == 0) return {Outcome::kSkipped, problem.substr(5)};
    if (!problem.empty()) return {Outcome::kFailed, problem};
  }
  if (sets == 0) return {Outcome::kFailed, "no test_data_set_* directory"};
  return {Outcome::kPassed, "", freeze};
}

Outcome RunOne(const fs::path& dir) {
  absl::StatusOr<onnx::ModelProto> proto = ReadModel(dir / "model.onnx");
  if (!proto.ok()) return {Outcome::kFailed, std::string(proto.status().message())};
  const bool restamped = RestampTo23(*proto);
  Outcome outcome = RunModel(dir, *proto);
  outcome.restamped = restamped;
  if (restamped && outcome.kind == Outcome::kFailed) outcome.detail += " (run at opset 23)";
  return outcome;
}

onnx::ModelProto OneNodeModel(int opset, const std::string& op_type, const std::string& domain = "") {
  onnx::ModelProto model;
  auto* entry = model.add_opset_import();
  entry->set_domain("");
  entry->set_version(opset);
  auto* node = model.mutable_graph()->add_node();
  node->set_op_type(op_type);
  node->set_domain(domain);
  return model;
}

TEST(OnnxNodeTest, OnlyOpsUnchangedButForTypesAreRunAtOpset23) {
  for (const char* op : {"Cast", "Reshape", "Add"}) {
    onnx::ModelProto model = OneNodeModel(25, op);
    EXPECT_TRUE(RestampTo23(model)) << op;
    EXPECT_EQ(model.opset_import(0).version(), 23) << op;
  }
  for (const char* op : {"Attention", "Pad", "TopK"}) {
    onnx::ModelProto model = OneNodeModel(24, op);
    EXPECT_FALSE(RestampTo23(model)) << op;
    EXPECT_EQ(model.opset_import(0).version(), 24) << op;
  }
  onnx::ModelProto foreign = OneNodeModel(24, "Cast", "com.microsoft");
  EXPECT_FALSE(RestampTo23(foreign));
  onnx::ModelProto at23 = OneNodeModel(23, "Cast"), at26 = OneNodeModel(26, "Cast");
  EXPECT_FALSE(RestampTo23(at23));
  EXPECT_FALSE(RestampTo23(at26));
}

TEST(OnnxNodeTest, BackendNodeTestsPass) {
#ifdef KILN_NODE_TESTS_ON_GPU
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
#endif
  const std::string root = NodeTestDir();
  if (root.empty() || !fs::is_directory(root)) {
    GTEST_SKIP() << "ONNX node tests not found (set KILN_ONNX_NODE_TESTS or `pip install onnx==1.22.0`; "
                    "onnx >= 1.23 no longer ships them); looked in \"" << root << "\"";
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_", 0) == 0) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  ASSERT_FALSE(dirs.empty()) << "no test_* directories under " << root;

  int passed = 0, frozen = 0;
  std::map<Outcome::Kind, int> restamped;
  std::map<std::string, std::vector<std::string>> skipped;  // reason -> tests
  std::vector<std::pair<std::string, std::string>> failed, known, fixed;
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    Outcome outcome = std::regex_match(name, kExcluded) ? Outcome{Outcome::kSkipped, kExcludedReason} : RunOne(dir);
    if (std::getenv("KILN_ONNX_NODE_VERBOSE")) {
      std::printf("%s %s%s %s\n", name.c_str(),
                  outcome.kind == Outcome::kPassed ? "PASS" : outcome.kind == Outcome::kFailed ? "FAIL" : "SKIP",
                  outcome.restamped ? " (at opset 23)" : "", outcome.detail.c_str());
    }
    if (outcome.restamped) ++restamped[outcome.kind];
    auto k = KnownFailures().find(name);
    switch (outcome.kind) {
      case Outcome::kPassed:
        ++passed;
        frozen += outcome.frozen;
        if (k != KnownFailures().end()) fixed.push_back({name, k->second});
        break;
      case Outcome::kSkipped: skipped[outcome.detail].push_back(name); break;
      case Outcome::kFailed:
        (k != KnownFailures().end() ? known : failed).push_back({name, outcome.detail});
        break;
    }
  }
  int num_skipped = 0;
  for (const auto& [reason, tests] : skipped) num_skipped += tests.size();
  std::vector<std::pair<std::string, std::vector<std::string>>> by_count(skipped.begin(), skipped.end());
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::string report = absl::StrCat("ONNX node tests in ", root, "\n  ", dirs.size(), " tests: ", passed, " passed, ",
                                    failed.size() + known.size(), " failed (", known.size(), " known), ", num_skipped,
                                    " skipped\n  (", frozen, " of the passed ran with integer or scalar inputs frozen to the data set's "
                                    "values, because kiln needs them constant)\n  run at opset 23: ",
                                    restamped[Outcome::kPassed] + restamped[Outcome::kFailed] + restamped[Outcome::kSkipped],
                                    " (stamped opset 24 or 25, every op unchanged there but for new types: ",
                                    restamped[Outcome::kPassed], " passed, ", restamped[Outcome::kFailed], " failed, ",
                                    restamped[Outcome::kSkipped], " skipped; counted in the totals above)\n"
                                    "  skipped by reason:\n");
  for (const auto& [reason, tests] : by_count) {
    absl::StrAppend(&report, "    ", tests.size(), "  ", reason, "  (e.g. ", tests[0], ")\n");
  }
  for (const auto& [name, detail] : failed) absl::StrAppend(&report, "  FAILED ", name, ": ", detail, "\n");
  for (const auto& [name, detail] : known) {
    absl::StrAppend(&report, "  known failure ", name, " (", KnownFailures().at(name), "): ", detail, "\n");
  }
  for (const auto& [name, why] : fixed) {
    absl::StrAppend(&report, "  now passes, remove from kKnownFailures: ", name, "\n");
  }
  std::printf("%s", report.c_str());
  if (const char* out = std::getenv("KILN_ONNX_NODE_REPORT")) std::ofstream(out) << report;
  EXPECT_TRUE(failed.empty()) << failed.size() << " node tests of supported ops failed (see the list above)";
}

}  // namespace
}  // namespace kiln
