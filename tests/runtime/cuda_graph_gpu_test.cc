// Executable::RunGraph on the GPU (label gpu; skips without a device): every small example
// run through a CUDA graph must be bitwise equal to the stream path, on the first call
// (capture), on a replay, after new values are written into the same input buffers, and after
// the pointers change (capture + cuGraphExecUpdate: the results must land in the new output
// buffers and the old ones stay untouched); on a private stream and on the legacy stream; and
// inside a capture of the caller's own. A dropout graph whose seed is a graph input, replayed
// with a new seed written into the same buffer, must draw a new mask equal to the stream
// path's for that seed (a graph that froze the seed would repeat the first mask).
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "api/compiler.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/philox.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_graph.h"
#include "runtime/executable.h"

namespace kiln {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("KILN_SOURCE_DIR");
  return dir != nullptr && *dir ? dir : KILN_SOURCE_DIR;
}

// A graph compiled for this GPU and loaded: the plan's graph (compiled.analysis.graph) and its
// Executable.
struct Loaded {
  Compiled compiled;
  std::unique_ptr<Executable> exe;
};

absl::StatusOr<Loaded> CompileAndLoad(absl::StatusOr<std::unique_ptr<Graph>> graph) {
  if (!graph.ok()) return graph.status();
  CompileOptions options;
  auto arch = CurrentDeviceArch();
  if (!arch.ok()) return arch.status();
  options.arch = *arch;
  auto compiled = Compile(std::move(*graph), options);
  if (!compiled.ok()) return compiled.status();
  auto exe = Executable::Load(compiled->lowered.program);
  if (!exe.ok()) return exe.status();
  return Loaded{std::move(*compiled), std::move(*exe)};
}

// Device copies of host tensors, or fresh output buffers of a Program.
struct DeviceSet {
  std::vector<DeviceBuffer> memory;
  std::vector<DeviceTensor> tensors;
};

DeviceSet Upload(const std::vector<Tensor>& host) {
  const CudaDriver* cu = *LoadCudaDriver();
  DeviceSet s;
  for (const Tensor& t : host) {
    DeviceBuffer b = *DeviceBuffer::Allocate(t.num_bytes());
    if (t.num_bytes() > 0) EXPECT_EQ(cu->cuMemcpyHtoD(b.get(), t.data(), t.num_bytes()), CUDA_SUCCESS);
    s.tensors.push_back({b.get(), t.dtype(), t.shape()});
    s.memory.push_back(std::move(b));
  }
  return s;
}

void Overwrite(const DeviceSet& s, const std::vector<Tensor>& host) {
  const CudaDriver* cu = *LoadCudaDriver();
  for (size_t i = 0; i < host.size(); ++i) {
    if (host[i].num_bytes() > 0) {
      EXPECT_EQ(cu->cuMemcpyHtoD(s.tensors[i].data, host[i].data(), host[i].num_bytes()), CUDA_SUCCESS);
    }
  }
}

DeviceSet Outputs(const Program& p) {
  DeviceSet s;
  for (int id : p.outputs) {
    const Buffer& o = p.buffers[id];
    DeviceBuffer b = *DeviceBuffer::Allocate(o.bytes);
    s.tensors.push_back({b.get(), o.dtype, o.shape});
    s.memory.push_back(std::move(b));
  }
  return s;
}

void Poison(const DeviceSet& s) {
  const CudaDriver* cu = *LoadCudaDriver();
  ASSERT_EQ(cu->cuCtxSynchronize(), CUDA_SUCCESS);
  for (const DeviceBuffer& b : s.memory) {
    if (b.bytes() > 0) ASSERT_EQ(cu->cuMemsetD8(b.get(), 0xFF, b.bytes()), CUDA_SUCCESS);
  }
  // cuMemsetD8 runs on the legacy stream and may return before it is done; the tests' stream is
  // non-blocking (it does not wait for the legacy stream), so without this a replay can race
  // the poison (a replay of dropout_add_layernorm_p0 once read back a differing output while
  // gpu-check ran other GPU jobs beside it, 2026-11-27).
  ASSERT_EQ(cu->cuCtxSynchronize(), CUDA_SUCCESS);
}

std::vector<Tensor> Download(const DeviceSet& s) {
  const CudaDriver* cu = *LoadCudaDriver();
  EXPECT_EQ(cu->cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<Tensor> out;
  for (const DeviceTensor& d : s.tensors) {
    Tensor t(d.dtype, d.shape);
    if (t.num_bytes() > 0) EXPECT_EQ(cu->cuMemcpyDtoH(t.data(), d.data, t.num_bytes()), CUDA_SUCCESS);
    out.push_back(std::move(t));
  }
  return out;
}

bool AllPoison(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) {
    const auto* bytes = static_cast<const unsigned char*>(t.data());
    for (int64_t i = 0; i < t.num_bytes(); ++i) {
      if (bytes[i] != 0xFF) return false;
    }
  }
  return true;
}

::testing::AssertionResult Same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " outputs for " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (!got[i].BitwiseEqual(want[i])) return ::testing::AssertionFailure() << "output " << i << " differs";
  }
  return ::testing::AssertionSuccess();
}

std::vector<Tensor> InOrder(const Graph& g, const std::map<std::string, Tensor>& values) {
  std::vector<Tensor> v;
  for (const Node* n : g.inputs()) v.push_back(values.at(n->name()));
  return v;
}

std::vector<std::string> SmallExamples() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(SourceDir() + "/examples/small")) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class CudaGraphExampleTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  }
};

TEST_P(CudaGraphExampleTest, GraphReplayIsBitwiseTheStreamPath) {
  auto loaded = CompileAndLoad(LoadGraph(SourceDir() + "/examples/small/" + GetParam() + ".json"));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Graph& g = *loaded->compiled.analysis.graph;
  Executable& exe = *loaded->exe;
  const Program& p = exe.program();
  const CudaDriver* cu = *LoadCudaDriver();
  CUstream stream;
  ASSERT_EQ(cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

  const std::vector<Tensor> host1 = InOrder(g, RandomInputs(g, 3)), host2 = InOrder(g, RandomInputs(g, 4));
  DeviceSet in1 = Upload(host1), in2 = Upload(host2);
  DeviceSet out1 = Outputs(p), out2 = Outputs(p), reference = Outputs(p);
  auto stream_path = [&](const DeviceSet& in) {
    Poison(reference);
    EXPECT_TRUE(exe.Run(in.tensors, reference.tensors, stream).ok());
    return Download(reference);
  };
  const std::vector<Tensor> want1 = stream_path(in1), want2 = stream_path(in2);
  EXPECT_EQ(exe.launches_per_run().total(), CountLaunches(p).total());
  EXPECT_EQ(exe.graph_stats().graph_launches, 0);

  // Capture, then replay.
  Poison(out1);
  ASSERT_TRUE(exe.RunGraph(in1.tensors, out1.tensors, stream).ok());
  EXPECT_TRUE(Same(Download(out1), want1)) << "first (captured) run";
  Poison(out1);
  ASSERT_TRUE(exe.RunGraph(in1.tensors, out1.tensors, stream).ok());
  EXPECT_TRUE(Same(Download(out1), want1)) << "replay";
  EXPECT_EQ(exe.graph_stats().captures, 1);
  EXPECT_EQ(exe.graph_stats().graph_launches, 2);

  // New values in the same buffers: a replay reads them.
  Overwrite(in1, host2);
  Poison(out1);
  ASSERT_TRUE(exe.RunGraph(in1.tensors, out1.tensors, stream).ok());
  EXPECT_TRUE(Same(Download(out1), want2)) << "replay after new input values";
  EXPECT_EQ(exe.graph_stats().captures, 1);
  Overwrite(in1, host1);

  // New pointers (exec update): results land in out2, out1 stays untouched.
  Poison(out1);
  Poison(out2);
  ASSERT_TRUE(exe.RunGraph(in2.tensors, out2.tensors, stream).ok());
  EXPECT_TRUE(Same(Download(out2), want2)) << "after the pointers changed";
  EXPECT_TRUE(AllPoison(Download(out1))) << "the updated graph still wrote the old outputs";
  // Swapped: inputs of set 2 into the buffers of set 1's outputs and back.
  Poison(out1);
  Poison(out2);
  ASSERT_TRUE(exe.RunGraph(in1.tensors, out2.tensors, stream).ok());
  EXPECT_TRUE(Same(Download(out2), want1)) << "in1 -> out2";
  EXPECT_TRUE(AllPoison(Download(out1)));
  ASSERT_TRUE(exe.RunGraph(in2.tensors, out1.tensors, stream).ok());
  EXPECT_TRUE(Same(Download(out1), want2)) << "in2 -> out1";
  static_assert(kGraphExecsPerRunner >= 4, "the four keys below each keep an exec");
  // Four keys: one exec each (the runner keeps kGraphExecsPerRunner); an earlier key replays its
  // own exec, with its own pointers.
  Poison(out1);
  Poison(out2);
  ASSERT_TRUE(exe.RunGraph(in1.tensors, out1.tensors, stream).ok());
  EXPECT_TRUE(Same(Download(out1), want1)) << "the first key again";
  EXPECT_TRUE(AllPoison(Download(out2)));
  const GraphStats s = exe.graph_stats();
  EXPECT_EQ(s.captures, 4);
  EXPECT_EQ(s.instantiations + s.updates, 4);
  std::printf("  %s: %s; stream path %s\n", GetParam().c_str(), s.ToString().c_str(),
              CountLaunches(p).ToString().c_str());

  // Run() with the option on, on the legacy stream (RunOnHost uses it).
  exe.set_cuda_graph(true);
  EXPECT_EQ(exe.launches_per_run().total(), 1);
  EXPECT_EQ(exe.launches_per_run().graph_launches, 1);
  auto on_host = exe.RunOnHost(host1);
  ASSERT_TRUE(on_host.ok()) << on_host.status();
  EXPECT_TRUE(Same(*on_host, want1)) << "RunOnHost through the graph, legacy stream";
  EXPECT_GT(exe.graph_stats().graph_launches, s.graph_launches);
  exe.set_cuda_graph(false);

  // Inside the caller's own capture: plain launches, replayed by the caller's graph.
  Poison(out1);
  ASSERT_EQ(cu->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  absl::Status inside = exe.RunGraph(in1.tensors, out1.tensors, stream);
  CUgraph outer = nullptr;
  ASSERT_EQ(cu->cuStreamEndCapture(stream, &outer), CUDA_SUCCESS);
  ASSERT_TRUE(inside.ok()) << inside;
  CUgraphExec outer_exec = nullptr;
  ASSERT_EQ(cu->cuGraphInstantiate(&outer_exec, outer, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu->cuGraphLaunch(outer_exec, stream), CUDA_SUCCESS);
  EXPECT_TRUE(Same(Download(out1), want1)) << "inside the caller's capture";
  EXPECT_EQ(exe.graph_stats().inside_caller_capture, 1);
  cu->cuGraphExecDestroy(outer_exec);
  cu->cuGraphDestroy(outer);
  cu->cuStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(Examples, CudaGraphExampleTest, ::testing::ValuesIn(SmallExamples()),
                         [](const auto& info) { return info.param; });

class CudaGraphSeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA device (or no driver)";
  }
};

TEST_F(CudaGraphSeedTest, AReplayReadsTheSeedFromItsBufferNotFromTheCapture) {
  const double p = 0.5;
  auto graph = ParseGraph(R"(graph dropout_seeded(x: bf16[64,1000], r: bf16[64,1000], seed: i64[], offset: i64[]) {
      xd: bf16[64,1000] = dropout(x, seed, offset) {p = 0.5}
      h: bf16[64,1000] = add(xd, r)
      return h
    })");
  auto loaded = CompileAndLoad(std::move(graph));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Graph& g = *loaded->compiled.analysis.graph;
  Executable& exe = *loaded->exe;

  // x = 0.75, r = 0.25: a kept element is 0.75 * 2 + 0.25 = 1.75, a dropped one 0.25 (exact in bf16).
  std::map<std::string, Tensor> values;
  for (const char* name : {"x", "r"}) {
    Tensor t(DType::kBF16, {64, 1000});
    for (int64_t i = 0; i < t.num_elements(); ++i) t.SetF64(i, name[0] == 'x' ? 0.75 : 0.25);
    values.emplace(name, std::move(t));
  }
  auto with_seed = [&](int64_t seed) {
    values["seed"] = Tensor(DType::kI64, {});
    values["seed"].SetI64(0, seed);
    values["offset"] = Tensor(DType::kI64, {});
    values["offset"].SetI64(0, 0);
    return InOrder(g, values);
  };
  DeviceSet in = Upload(with_seed(1));
  DeviceSet out = Outputs(exe.program()), reference = Outputs(exe.program());
  std::vector<std::vector<Tensor>> masks;
  for (int64_t seed : {1, 2, 1}) {
    SCOPED_TRACE(seed);
    Overwrite(in, with_seed(seed));
    Poison(out);
    ASSERT_TRUE(exe.RunGraph(in.tensors, out.tensors, nullptr).ok());
    std::vector<Tensor> got = Download(out);
    Poison(reference);
    ASSERT_TRUE(exe.Run(in.tensors, reference.tensors, nullptr).ok());
    EXPECT_TRUE(Same(got, Download(reference))) << "graph and stream paths differ for seed " << seed;
    const Tensor& h = got[0];
    const Tensor& r = values.at("r");
    int64_t mismatches = 0;
    for (int64_t i = 0; i < h.num_elements(); ++i) {
      mismatches += (h.GetF64(i) != r.GetF64(i)) != DropoutKeep(static_cast<uint64_t>(seed), 0, i, p);
    }
    EXPECT_EQ(mismatches, 0) << "the mask is not seed " << seed << "'s";
    masks.push_back(std::move(got));
  }
  EXPECT_FALSE(Same(masks[0], masks[1])) << "seed 2 replayed seed 1's mask: the seed is frozen in the graph";
  EXPECT_TRUE(Same(masks[0], masks[2]));
  EXPECT_EQ(exe.graph_stats().captures, 1) << "the same pointers must replay, not re-capture";
  EXPECT_EQ(exe.graph_stats().graph_launches, 3);
}

}  // namespace
}  // namespace kiln
