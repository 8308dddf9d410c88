// Whole graphs on the GPU (label gpu; skips without a device). Every small example is
// compiled for this GPU, run on random inputs with poisoned outputs, and compared with the
// interpreter evaluating the same plan region by region (api/reference.h: f32 inside a
// region, rounding where the GPU stores) at the graph tolerances of ir/compare.h; a second run must be bitwise equal (determinism), and so must a run of the
// same Program saved as an artifact and loaded again. Run() must refuse bad arguments with a
// message naming the argument, and Load() a Program built for another architecture.
#include "passes/fusion/region_kind.h"
#include <cstdlib>
#include <filesystem>

#include "api/compiler.h"
#include "api/reference.h"
#include "gtest/gtest.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/promote.h"
#include "ir/subgraph.h"
#include "passes/pass_pipeline.h"
#include "runtime/artifact.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"

namespace kiln {
namespace {

// The checkout: $KILN_SOURCE_DIR when set (a bundle built elsewhere, scripts/gpu-check), else
// the source folder this binary was built from.
std::string SourceDir() {
  const char* dir = std::getenv("KILN_SOURCE_DIR");
  return dir != nullptr && *dir ? dir : KILN_SOURCE_DIR;
}

absl::StatusOr<Compiled> CompileExample(const std::string& name) {
  auto graph = LoadGraph(SourceDir() + "/examples/small/" + name + ".json");
  if (!graph.ok()) return graph.status();
  CompileOptions options;
  auto arch = CurrentDeviceArch();
  if (!arch.ok()) return arch.status();
  options.arch = *arch;
  return Compile(std::move(*graph), options);
}

bool BitwiseEqual(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].BitwiseEqual(b[i])) return false;
  }
  return true;
}

class ExecutableTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  }
};

TEST_P(ExecutableTest, MatchesTheInterpreterAndIsDeterministic) {
  auto compiled = CompileExample(GetParam());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const Graph& graph = *compiled->analysis.graph;
  Program program = compiled->lowered.program;
  std::map<std::string, Tensor> inputs = RandomInputs(graph, 3);
  std::vector<Tensor> in;
  for (const Node* n : graph.inputs()) in.push_back(inputs.at(n->name()));

  auto exe = Executable::Load(program);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto got = (*exe)->RunOnHost(in);
  ASSERT_TRUE(got.ok()) << got.status();
  auto want = InterpretAsPlanned(graph, compiled->analysis.plan, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  auto whole = Interpret(**PromoteTo32(graph), inputs);
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (size_t i = 0; i < got->size(); ++i) {
    Comparison c = Compare((*got)[i], (*want)[i], GraphTolerance((*want)[i].dtype()));
    EXPECT_TRUE(c.ok()) << GetParam() << " output " << program.output_names[i] << ": " << c.ToString();
    Comparison f = Compare((*got)[i], (*whole)[i], GraphTolerance((*want)[i].dtype()));
    std::printf("  %s.%s: vs planned %s; vs f32 graph: %s\n", GetParam().c_str(), program.output_names[i].c_str(),
                c.ToString().c_str(), f.ToString().c_str());
  }
  auto again = (*exe)->RunOnHost(in);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(BitwiseEqual(*got, *again)) << "two runs differ";

  auto reloaded = DeserializeProgram(SerializeProgram(program));
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  auto exe2 = Executable::Load(std::move(*reloaded));
  ASSERT_TRUE(exe2.ok()) << exe2.status();
  auto from_artifact = (*exe2)->RunOnHost(in);
  ASSERT_TRUE(from_artifact.ok()) << from_artifact.status();
  EXPECT_TRUE(BitwiseEqual(*got, *from_artifact)) << "the artifact computes something else";
}

std::vector<std::string> SmallExamples() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(SourceDir() + "/examples/small")) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Examples, ExecutableTest, ::testing::ValuesIn(SmallExamples()),
                         [](const auto& info) { return info.param; });

class RunValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  }
};

TEST_F(RunValidationTest, BadArgumentsAreNamed) {
  auto compiled = CompileExample("softmax");
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto exe = Executable::Load(compiled->lowered.program);
  ASSERT_TRUE(exe.ok()) << exe.status();
  const Program& p = (*exe)->program();
  const Buffer& x = p.buffers[p.inputs[0]];
  const Buffer& y = p.buffers[p.outputs[0]];
  auto in_mem = DeviceBuffer::Allocate(x.bytes + 64);
  auto out_mem = DeviceBuffer::Allocate(y.bytes);
  ASSERT_TRUE(in_mem.ok() && out_mem.ok());
  DeviceTensor in{in_mem->get(), x.dtype, x.shape}, out{out_mem->get(), y.dtype, y.shape};
  ASSERT_TRUE((*exe)->Run({in}, {out}).ok());

  auto expect = [&](DeviceTensor i, DeviceTensor o, const std::string& text) {
    absl::Status s = (*exe)->Run({i}, {o});
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find(text), std::string::npos) << s;
  };
  DeviceTensor bad = in;
  bad.dtype = DType::kF16 == x.dtype ? DType::kF32 : DType::kF16;
  expect(bad, out, "input #0 'x'");
  bad = in;
  bad.shape[0] += 1;
  expect(bad, out, "the graph expects");
  bad = in;
  bad.data = 0;
  expect(bad, out, "null pointer");
  bad = in;
  bad.data += 4;
  expect(bad, out, "not 16-byte aligned");
  std::vector<char> host(x.bytes + 16);
  bad = in;
  bad.data = (reinterpret_cast<CUdeviceptr>(host.data()) + 15) / 16 * 16;
  expect(bad, out, "not device memory");
  DeviceTensor alias = out;
  alias.data = in.data;
  alias.dtype = y.dtype;
  expect(in, alias, "overlaps");
  EXPECT_FALSE((*exe)->Run({}, {out}).ok());
}

TEST_F(RunValidationTest, AnotherArchitectureIsRefused) {
  auto compiled = CompileExample("softmax");
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  Program p = compiled->lowered.program;
  p.arch = p.arch == "sm_80" ? "sm_90a" : "sm_80";
  auto exe = Executable::Load(p);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("was compiled for " + p.arch), std::string::npos) << exe.status();
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Bisects a wrong graph to its first wrong region: compiled without arena sharing and run
// once; then every region is evaluated on the interpreter from the values the GPU computed for
// its inputs (f32 inside the region, as the kernels compute; ir/promote.h) and its outputs are
// compared with what the GPU wrote. No error is carried over from earlier regions, so a
// mismatch points at the region that computed it (a whole-graph reference instead drifts
// through the block's bf16 roundings and matmuls). Kernel regions at the kernel tolerances;
// matmul and attention regions (cuBLASLt's summation order; the attention fallback's stored
// bf16 scores and probabilities) at the graph tolerances.
TEST_F(RunValidationTest, EveryRegionMatchesTheInterpreterOnTheGpusInputs) {
  auto graph = LoadGraph(SourceDir() + "/examples/small/transformer_block.json");
  ASSERT_TRUE(graph.ok());
  CompileOptions options;
  options.arch = *CurrentDeviceArch();
  options.share_arena = false;
  auto compiled = Compile(std::move(*graph), options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const Graph& g = *compiled->analysis.graph;
  std::map<std::string, Tensor> gpu = RandomInputs(g, 3);
  auto exe = Executable::Load(compiled->lowered.program);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<Tensor> in;
  for (const Node* n : g.inputs()) in.push_back(gpu.at(n->name()));
  auto outputs = (*exe)->RunOnHost(in);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  for (size_t i = 0; i < outputs->size(); ++i) gpu.insert_or_assign(g.outputs()[i].node->name(), (*outputs)[i]);
  const Program& p = (*exe)->program();
  for (size_t id = 0; id < p.buffers.size(); ++id) {
    const Buffer& b = p.buffers[id];
    if (b.kind != BufferKind::kArena && b.kind != BufferKind::kAlias) continue;
    auto value = (*exe)->ReadBuffer(static_cast<int>(id));
    if (value.ok() && !gpu.count(b.name)) gpu.insert_or_assign(b.name, std::move(*value));
  }
  int checked = 0;
  for (const Region& r : compiled->analysis.plan.regions) {
    if (r.kind == RegionKind::kView) continue;
    auto sub = ExtractSubgraph(g, r.nodes, r.inputs, r.outputs);
    ASSERT_TRUE(sub.ok()) << sub.status();
    std::map<std::string, Tensor> sub_inputs;
    for (const Node* n : (*sub)->inputs()) {
      ASSERT_TRUE(gpu.count(n->name())) << "region " << r.id << ": no GPU value of its input " << n->name();
      sub_inputs.insert_or_assign(n->name(), gpu.at(n->name()));
    }
    auto promoted = PromoteTo32(**sub);
    ASSERT_TRUE(promoted.ok()) << promoted.status();
    auto want = Interpret(**promoted, sub_inputs);
    ASSERT_TRUE(want.ok()) << "region " << r.id << ": " << want.status();
    const bool library = r.kind == RegionKind::kMatmul || r.kind == RegionKind::kAttention;
    for (size_t o = 0; o < r.outputs.size(); ++o) {
      const std::string& name = r.outputs[o]->name();
      ASSERT_TRUE(gpu.count(name)) << "region " << r.id << ": no GPU value of its output " << name;
      const DType dtype = r.outputs[o]->dtype();
      Comparison c = Compare(gpu.at(name), (*want)[o], library ? GraphTolerance(dtype) : KernelTolerance(dtype));
      std::printf("  region %-2d %-14s %-24s %s\n", r.id, RegionKindName(r.kind), name.c_str(), c.ToString().c_str());
      EXPECT_TRUE(c.ok()) << "region " << r.id << " (" << RegionKindName(r.kind) << ") output " << name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace kiln
