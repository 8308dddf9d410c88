// Models exported by PyTorch (scripts/export-onnx-fixtures.py, run on the GPU machine) under
// tests/frontends/onnx_fixtures/<module>_opset<N>[_ts]/: each is imported and run on the
// interpreter, and its outputs are compared with torch's (output_<j>.pb, computed by torch on
// the CPU in f32). Skipped cleanly while the folder holds no fixtures.
//
// Tolerances, per dtype, |got - want| <= atol + rtol * |want|. On the interpreter: f32 rtol
// 1e-4, atol 1e-5 (torch accumulates in f32, kiln's interpreter in double); f16 rtol 1e-2,
// atol 1e-3; bf16 rtol 5e-2, atol 1e-2. On the GPU: ir/compare.h's GraphTolerance (a whole
// compiled graph: f32 rtol 1e-3, atol 1e-4), as region boundaries round and matmuls and
// reductions sum in another order than torch's. Integers and bools exactly.
// A fixture whose fixture.txt says "dropout_p = P" ran dropout in training mode and returns
// (y, h, m) with y = h + dropout(m): torch's mask comes from its own RNG and kiln's from
// Philox, so h and m are compared with torch and y is checked for the dropout relation
// instead (y - h is 0 or m / (1 - P) elementwise, and the dropped fraction is P +- 0.05).
// One whose fixture.txt says "attention_dropout_p = P" dropped attention probabilities: its
// outputs are compared with the interpreter's on the imported graph (softmax, kiln's dropout
// op, matmul), not with torch's; the optimised graph (one attention with the dropout folded in)
// and the GPU must keep exactly the elements the dropout op keeps.
//
// Built with KILN_FIXTURE_TESTS_ON_GPU (the gpu-labelled binary frontends_onnx_fixture_gpu_test,
// run by scripts/gpu-check), each fixture is instead compiled for this GPU and run there
// (Compile -> Executable::RunOnHost), and the test skips cleanly without a GPU. The fixtures
// are found under $KILN_SOURCE_DIR when set (a bundle built elsewhere), else this checkout.
// The interpreter build also checks the kernels each module becomes and the JSON export.
#include "passes/fusion/region_kind.h"
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/compiler.h"
#include "frontends/onnx/onnx_import.h"
#include "frontends/onnx/onnx_tensor.h"
#include "gtest/gtest.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "onnx/onnx_pb.h"
#ifdef KILN_FIXTURE_TESTS_ON_GPU
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#else
#include "frontends/json/json_graph.h"
#endif

namespace kiln {
namespace {

namespace fs = std::filesystem;

fs::path FixtureRoot() {
  const char* dir = std::getenv("KILN_SOURCE_DIR");
  return fs::path(dir != nullptr && *dir ? dir : KILN_SOURCE_DIR) / "tests/frontends/onnx_fixtures";
}

// Tolerance is {atol, rtol}.
Tolerance ToleranceFor(DType dtype) {
#ifdef KILN_FIXTURE_TESTS_ON_GPU
  return GraphTolerance(dtype);
#else
  switch (dtype) {
    case DType::kF32: return {1e-5, 1e-4};
    case DType::kF16: return {1e-3, 1e-2};
    case DType::kBF16: return {1e-2, 5e-2};
    default: return {0, 0};
  }
#endif
}

Tensor Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  EXPECT_TRUE(in && proto.ParseFromIstream(&in)) << path;
  auto t = TensorFromOnnx(proto, "", /*allow_double=*/false);
  EXPECT_TRUE(t.ok()) << path << ": " << t.status();
  return t.ok() ? *t : Tensor();
}

std::map<std::string, std::string> ReadInfo(const fs::path& path) {
  std::map<std::string, std::string> info;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find(" = ");
    if (eq != std::string::npos) info[line.substr(0, eq)] = line.substr(eq + 3);
  }
  return info;
}

void ExpectClose(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  Tolerance tol = ToleranceFor(want.dtype());
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    double g = got.GetF64(i), w = want.GetF64(i);
    ASSERT_LE(std::abs(g - w), tol.atol + tol.rtol * std::abs(w))
        << what << " element " << i << ": kiln " << g << ", torch " << w;
  }
}

std::vector<fs::path> FixtureDirs() {
  std::vector<fs::path> out;
  if (!fs::is_directory(FixtureRoot())) return out;
  for (const auto& e : fs::directory_iterator(FixtureRoot())) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The fixture's inputs, bound to the graph's inputs in order (input_<i>.pb).
std::map<std::string, Tensor> Inputs(const Graph& g, const fs::path& dir) {
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    inputs[g.inputs()[i]->name()] = Read(dir / absl::StrCat("input_", i, ".pb"));
  }
  return inputs;
}

// The graph's outputs: the interpreter, or the GPU (compiled for this device).
absl::StatusOr<std::vector<Tensor>> Evaluate(const Graph& g, const std::map<std::string, Tensor>& inputs) {
#ifdef KILN_FIXTURE_TESTS_ON_GPU
  return CompileAndRunOnHost(g, inputs);
#else
  return Interpret(g, inputs);
#endif
}

TEST(OnnxFixtureTest, TorchExportsMatchTorch) {
#ifdef KILN_FIXTURE_TESTS_ON_GPU
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
#endif
  std::vector<fs::path> dirs = FixtureDirs();
  if (dirs.empty()) {
    GTEST_SKIP() << "no fixtures in " << FixtureRoot() << " yet: run scripts/export-onnx-fixtures.py on a machine "
                    "with torch and commit its output";
  }
  for (const fs::path& dir : dirs) {
    SCOPED_TRACE(dir.filename().string());
    auto info = ReadInfo(dir / "fixture.txt");
    auto graph = ImportOnnxFile((dir / "model.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.status();
    const Graph& g = **graph;
    std::map<std::string, Tensor> inputs = Inputs(g, dir);
    auto got = Evaluate(g, inputs);
    ASSERT_TRUE(got.ok()) << got.status();
#ifndef KILN_FIXTURE_TESTS_ON_GPU
    // The optimised graph (match_attention, decompose, folding...) computes the same.
    auto analysis = Analyze(g.Clone(), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << analysis.status();
    auto optimised = Interpret(*analysis->graph, inputs);
    ASSERT_TRUE(optimised.ok()) << optimised.status();
#endif
    std::vector<Tensor> want;
    for (size_t j = 0; fs::exists(dir / absl::StrCat("output_", j, ".pb")); ++j) {
      want.push_back(Read(dir / absl::StrCat("output_", j, ".pb")));
    }
    ASSERT_EQ(got->size(), want.size());
    if (info.count("attention_dropout_p") != 0) {
      auto reference = Interpret(g, inputs);
      ASSERT_TRUE(reference.ok()) << reference.status();
      for (size_t j = 0; j < want.size(); ++j) {
        ExpectClose((*got)[j], (*reference)[j], absl::StrCat("output ", j, " against the unfused graph"));
#ifndef KILN_FIXTURE_TESTS_ON_GPU
        ExpectClose((*optimised)[j], (*reference)[j], absl::StrCat("optimised output ", j, " against the unfused graph"));
#endif
      }
      continue;
    }
    double p = 0;
    if (info.count("dropout_p") == 0 || !absl::SimpleAtod(info["dropout_p"], &p)) p = 0;
    if (p == 0) {
      for (size_t j = 0; j < want.size(); ++j) {
        ExpectClose((*got)[j], want[j], absl::StrCat("output ", j));
#ifndef KILN_FIXTURE_TESTS_ON_GPU
        ExpectClose((*optimised)[j], want[j], absl::StrCat("optimised output ", j));
#endif
      }
      continue;
    }
    // Training-mode dropout: outputs (y, h, m), y = h + dropout(m).
    ASSERT_EQ(want.size(), 3u);
    ExpectClose((*got)[1], want[1], "h");
    ExpectClose((*got)[2], want[2], "m");
    const Tensor &y = (*got)[0], &h = (*got)[1], &m = (*got)[2];
    Tolerance tol = ToleranceFor(y.dtype());
    int64_t dropped = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      double d = y.GetF64(i) - h.GetF64(i), kept = m.GetF64(i) / (1 - p);
      double slack = tol.atol + tol.rtol * (std::abs(h.GetF64(i)) + std::abs(kept));
      bool is_dropped = std::abs(d) <= slack && std::abs(kept) > slack;
      dropped += is_dropped;
      ASSERT_TRUE(std::abs(d) <= slack || std::abs(d - kept) <= slack)
          << "y - h at element " << i << " is " << d << ", neither 0 nor m / (1 - p) = " << kept;
    }
    double fraction = static_cast<double>(dropped) / y.num_elements();
    EXPECT_NEAR(fraction, p, 0.05) << dropped << " of " << y.num_elements() << " elements dropped";
  }
}

#ifndef KILN_FIXTURE_TESTS_ON_GPU
// The kernels (regions other than views, by kind) each module must become.
const std::map<std::string, std::map<std::string, int>>& ExpectedKernels() {
  static const auto* table = new std::map<std::string, std::map<std::string, int>>{
      {"gpt2_sdpa", {{"matmul", 4}, {"row_reduction", 2}, {"attention", 1}, {"pointwise", 1}}},
      {"gpt2_manual", {{"matmul", 4}, {"row_reduction", 2}, {"attention", 1}, {"pointwise", 1}}},
      // dropout(softmax(s)) v: one attention kernel, the mask regenerated inside it.
      {"gpt2_attn_dropout", {{"matmul", 4}, {"row_reduction", 2}, {"attention", 1}, {"pointwise", 1}}},
      // gelu_tanh and its bias: fc1's cuBLASLt epilogue, no pointwise kernel.
      {"gpt2_tanh", {{"matmul", 4}, {"row_reduction", 2}, {"attention", 1}}},
      // + the dropout's pointwise region (y = h + dropout(m) is written besides h and m).
      {"gpt2_dropout", {{"matmul", 4}, {"row_reduction", 2}, {"attention", 1}, {"pointwise", 2}}},
      // gate and up: one matmul on joined weights (horizontal_matmul).
      {"llama", {{"matmul", 4}, {"row_reduction", 2}, {"attention", 1}, {"pointwise", 1}}},
      {"ce_head", {{"matmul", 1}, {"row_reduction", 1}}},
  };
  return *table;
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Summary(const std::map<std::string, int>& kinds) {
  std::string out;
  int total = 0;
  for (const auto& [kind, count] : kinds) {
    absl::StrAppend(&out, kind, " x", count, "; ");
    total += count;
  }
  return absl::StrCat(total, " kernels: ", out);
}

// The same module exported by either exporter at any opset becomes the same kernels, the
// ones ExpectedKernels() names: the decomposed spellings (sqrt-scaled q and k, masked_fill,
// Trilu masks, LayerNormalization written out) fuse exactly like the native ops of opset 23.
// (Attention the tiled template does not run is lowered to matmuls and a softmax row kernel
// before fusion; then every export still plans alike, and the table is not the reference.)
TEST(OnnxFixtureTest, EveryExportOfAModuleGivesTheExpectedKernels) {
  std::map<std::string, std::string> first_summary;
  for (const fs::path& dir : FixtureDirs()) {
    std::string name = dir.filename().string();
    std::string module = name.substr(0, name.find("_opset"));
    auto graph = ImportOnnxFile((dir / "model.onnx").string());
    ASSERT_TRUE(graph.ok()) << name << ": " << graph.status();
    auto analysis = Analyze(std::move(*graph), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << name << ": " << analysis.status();
    std::map<std::string, int> kinds;
    bool lowered_attention = false;
    for (const PassRecord& p : analysis->passes) lowered_attention |= p.name == "lower_attention" && p.changed;
    for (const Region& r : analysis->plan.regions) {
      if (KindInfo(r.kind).lowering != Lowering::kAlias) ++kinds[RegionKindName(r.kind)];
    }
    auto [it, first] = first_summary.emplace(module, Summary(kinds));
    if (!first) {
      EXPECT_EQ(Summary(kinds), it->second) << name << " plans unlike another export of " << module;
    }
    auto expected = ExpectedKernels().find(module);
    ASSERT_NE(expected, ExpectedKernels().end()) << name << ": add module " << module << " to ExpectedKernels ("
                                                 << Summary(kinds) << ")";
    if (!lowered_attention) {
      EXPECT_EQ(Summary(kinds), Summary(expected->second)) << name;
    }
  }
}

// `kiln check --json`'s path: every imported fixture written in kiln's JSON format (large
// constants in a side file) reads back as the same graph and computes bitwise the same.
TEST(OnnxFixtureTest, JsonExportOfEveryFixtureComputesTheSame) {
  const fs::path tmp = fs::path(::testing::TempDir()) / absl::StrCat("kiln_onnx_fixture_json_", ::getpid());
  for (const fs::path& dir : FixtureDirs()) {
    const std::string name = dir.filename().string();
    SCOPED_TRACE(name);
    auto graph = ImportOnnxFile((dir / "model.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.status();
    const fs::path out = tmp / name;
    fs::remove_all(out);
    fs::create_directories(out);
    JsonExportOptions options;
    options.data_dir = out.string();
    options.data_prefix = "graph";
    auto text = ExportJsonGraph(**graph, options);
    ASSERT_TRUE(text.ok()) << text.status();
    std::ofstream(out / "graph.json") << *text;
    auto again = ImportJsonGraphFile((out / "graph.json").string());
    ASSERT_TRUE(again.ok()) << again.status();
    // Written again, it is the same document and side file: the same graph, constants included.
    options.data_dir = (out / "again").string();
    fs::create_directories(options.data_dir);
    auto text_again = ExportJsonGraph(**again, options);
    ASSERT_TRUE(text_again.ok()) << text_again.status();
    EXPECT_EQ(*text_again, *text) << "another graph read back";
    EXPECT_EQ(ReadBytes(out / "again/graph.bin"), ReadBytes(out / "graph.bin"));
    std::map<std::string, Tensor> inputs = Inputs(**graph, dir);
    auto want = Interpret(**graph, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    auto got = Interpret(**again, inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want->size());
    for (size_t j = 0; j < want->size(); ++j) EXPECT_TRUE((*got)[j].BitwiseEqual((*want)[j])) << "output " << j;
  }
  fs::remove_all(tmp);
}
#endif  // KILN_FIXTURE_TESTS_ON_GPU

}  // namespace
}  // namespace kiln
