// Models exported by PyTorch (scripts/export-onnx-fixtures.py, run on the GPU machine) under
// tests/frontends/onnx_fixtures/<module>_opset<N>[_ts]/: each is imported and run on the
// interpreter, and its outputs are compared with torch's (output_<j>.pb). Skipped cleanly
// while the folder holds no fixtures.
//
// Tolerances, per dtype, |got - want| <= atol + rtol * |want|: f32 rtol 1e-4, atol 1e-5 (torch
// accumulates in f32, kiln's interpreter in double); f16 rtol 1e-2, atol 1e-3; bf16 rtol 5e-2,
// atol 1e-2; integers and bools exactly.
// A fixture whose fixture.txt says "dropout_p = P" ran dropout in training mode and returns
// (y, h, m) with y = h + dropout(m): torch's mask comes from its own RNG and kiln's from
// Philox, so h and m are compared with torch and y is checked for the dropout relation
// instead (y - h is 0 or m / (1 - P) elementwise, and the dropped fraction is P +- 0.05).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "frontends/onnx/onnx_import.h"
#include "frontends/onnx/onnx_tensor.h"
#include "api/compiler.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "onnx/onnx_pb.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(KILN_SOURCE_DIR) / "tests/frontends/onnx_fixtures";

struct Tolerance {
  double rtol, atol;
};
Tolerance ToleranceFor(DType dtype) {
  switch (dtype) {
    case DType::kF32: return {1e-4, 1e-5};
    case DType::kF16: return {1e-2, 1e-3};
    case DType::kBF16: return {5e-2, 1e-2};
    default: return {0, 0};
  }
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
  if (!fs::is_directory(kFixtures)) return out;
  for (const auto& e : fs::directory_iterator(kFixtures)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(OnnxFixtureTest, TorchExportsMatchTorchOnTheInterpreter) {
  std::vector<fs::path> dirs = FixtureDirs();
  if (dirs.empty()) {
    GTEST_SKIP() << "no fixtures in " << kFixtures << " yet: run scripts/export-onnx-fixtures.py on a machine "
                    "with torch and commit its output";
  }
  for (const fs::path& dir : dirs) {
    SCOPED_TRACE(dir.filename().string());
    auto info = ReadInfo(dir / "fixture.txt");
    auto graph = ImportOnnxFile((dir / "model.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.status();
    const Graph& g = **graph;
    std::map<std::string, Tensor> inputs;
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      inputs[g.inputs()[i]->name()] = Read(dir / absl::StrCat("input_", i, ".pb"));
    }
    auto got = Interpret(g, inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    // The optimised graph (match_attention, decompose, folding...) computes the same.
    auto analysis = Analyze(g.Clone(), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << analysis.status();
    auto optimised = Interpret(*analysis->graph, inputs);
    ASSERT_TRUE(optimised.ok()) << optimised.status();
    std::vector<Tensor> want;
    for (size_t j = 0; fs::exists(dir / absl::StrCat("output_", j, ".pb")); ++j) {
      want.push_back(Read(dir / absl::StrCat("output_", j, ".pb")));
    }
    ASSERT_EQ(got->size(), want.size());
    double p = 0;
    if (info.count("dropout_p") == 0 || !absl::SimpleAtod(info["dropout_p"], &p)) p = 0;
    if (p == 0) {
      for (size_t j = 0; j < want.size(); ++j) {
        ExpectClose((*got)[j], want[j], absl::StrCat("output ", j));
        ExpectClose((*optimised)[j], want[j], absl::StrCat("optimised output ", j));
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

// The same module exported by either exporter at any opset becomes the same kernels: the
// decomposed spellings (sqrt-scaled q and k, masked_fill, Trilu masks, LayerNormalization
// written out) fuse exactly like the native ops of opset 23.
TEST(OnnxFixtureTest, EveryExportOfAModuleGivesTheSameKernels) {
  std::map<std::string, std::map<std::string, std::string>> kernels;  // module -> export -> kinds
  for (const fs::path& dir : FixtureDirs()) {
    std::string name = dir.filename().string();
    std::string module = name.substr(0, name.find("_opset"));
    auto graph = ImportOnnxFile((dir / "model.onnx").string());
    ASSERT_TRUE(graph.ok()) << name << ": " << graph.status();
    auto analysis = Analyze(std::move(*graph), AnalyzeOptions{});
    ASSERT_TRUE(analysis.ok()) << name << ": " << analysis.status();
    std::map<std::string, int> kinds;
    for (const Region& r : analysis->plan.regions) {
      if (r.kind != RegionKind::kView) ++kinds[RegionKindName(r.kind)];
    }
    std::string summary;
    for (const auto& [kind, count] : kinds) summary += absl::StrCat(kind, " x", count, "; ");
    kernels[module][name] = summary;
  }
  for (const auto& [module, exports] : kernels) {
    for (const auto& [name, summary] : exports) {
      EXPECT_EQ(summary, exports.begin()->second) << name << " vs " << exports.begin()->first;
    }
  }
}

}  // namespace
}  // namespace kiln
