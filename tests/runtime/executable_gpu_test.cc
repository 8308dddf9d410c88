// Whole graphs on the GPU (label gpu; skips without a device). Every small example is
// compiled for this GPU, run on random inputs with poisoned outputs, and compared with the
// interpreter (16-bit floats computed in f32, ir/promote.h) at the graph tolerances of
// ir/compare.h; a second run must be bitwise equal (determinism), and so must a run of the
// same Program saved as an artifact and loaded again. Run() must refuse bad arguments with a
// message naming the argument, and Load() a Program built for another architecture.
#include <filesystem>

#include "api/compiler.h"
#include "gtest/gtest.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/promote.h"
#include "runtime/artifact.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"

namespace kiln {
namespace {

absl::StatusOr<Compiled> CompileExample(const std::string& name) {
  auto graph = LoadGraph(std::string(KILN_SOURCE_DIR) + "/examples/small/" + name + ".json");
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
  auto want = Interpret(**PromoteTo32(graph), inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  for (size_t i = 0; i < got->size(); ++i) {
    Comparison c = Compare((*got)[i], (*want)[i], GraphTolerance((*want)[i].dtype()));
    EXPECT_TRUE(c.ok()) << GetParam() << " output " << program.output_names[i] << ": " << c.ToString();
    std::printf("  %s.%s: %s\n", GetParam().c_str(), program.output_names[i].c_str(), c.ToString().c_str());
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
  for (const auto& e : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/examples/small")) {
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
