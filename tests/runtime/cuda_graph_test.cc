// The CUDA graph path's logic without a GPU (runtime/cuda_graph.h): the capture key and the
// replay / update / capture decision, the launch counts of a Program, and CudaGraphRunner's
// policy driven through a fake driver table (a CudaDriver whose graph entry points record what
// they are asked): replay on the same pointers, capture + cuGraphExecUpdate on new ones,
// re-instantiation when the update is refused, the warm-up run before the first capture, the
// capture on a private stream with THREAD_LOCAL mode, a capture ended even when the enqueue
// fails, and plain launches when the caller's stream is itself capturing.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cuda_graph.h"
#include "runtime/program.h"

namespace kiln {
namespace {

TEST(GraphKeyTest, EqualOnlyWithTheSamePointersInTheSameOrder) {
  GraphKey a{{0x1000, 0x2000}, {0x3000}};
  GraphKey b = a;
  EXPECT_EQ(a, b);
  b.outputs[0] = 0x4000;
  EXPECT_NE(a, b);
  GraphKey swapped{{0x2000, 0x1000}, {0x3000}};
  EXPECT_NE(a, swapped);
  GraphKey in_out_moved{{0x1000}, {0x2000, 0x3000}};
  EXPECT_NE(a, in_out_moved);
}

Buffer Buf(int64_t bytes) {
  Buffer b;
  b.name = "t";
  b.shape = {bytes / 4};
  b.bytes = bytes;
  return b;
}

TEST(LaunchCountsTest, CountsKernelsLibraryCallsAndNonEmptyCopies) {
  Program p;
  p.buffers = {Buf(64), Buf(64), Buf(0), Buf(0)};
  Step kernel;
  kernel.kind = Step::Kind::kKernel;
  Step matmul;
  matmul.kind = Step::Kind::kMatmul;
  matmul.matmul.calls.resize(3);  // one cublasLtMatmul per broadcast batch
  Step copy;
  copy.kind = Step::Kind::kCopy;
  copy.copy = {0, 1};
  Step empty_copy;
  empty_copy.kind = Step::Kind::kCopy;
  empty_copy.copy = {2, 3};  // zero bytes: the executable launches nothing
  p.steps = {kernel, matmul, kernel, copy, empty_copy};
  LaunchCounts c = CountLaunches(p);
  EXPECT_EQ(c.kernels, 2);
  EXPECT_EQ(c.library_calls, 3);
  EXPECT_EQ(c.copies, 1);
  EXPECT_EQ(c.graph_launches, 0);
  EXPECT_EQ(c.total(), 6);
  EXPECT_EQ(c.ToString(), "6 launches (2 kernels, 3 cuBLASLt calls, 1 copy)");
  LaunchCounts g;
  g.graph_launches = 1;
  EXPECT_EQ(g.ToString(), "1 launch (1 CUDA graph)");
}

// ---- A fake driver: the graph entry points record their calls. ----

struct Fake {
  std::vector<std::string> calls;
  CUstreamCaptureStatus caller_status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult update_result = CUDA_SUCCESS;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  int next_handle = 1;
};
Fake* fake = nullptr;

CUstream const kCallerStream = reinterpret_cast<CUstream>(0x5151);

template <typename T>
T Handle() {
  return reinterpret_cast<T>(static_cast<uintptr_t>(0x1000 + fake->next_handle++));
}

CUresult FakeIsCapturing(CUstream s, CUstreamCaptureStatus* status) {
  fake->calls.push_back("is_capturing");
  *status = s == kCallerStream ? fake->caller_status : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}
CUresult FakeStreamCreate(CUstream* s, unsigned int flags) {
  fake->calls.push_back(flags == CU_STREAM_NON_BLOCKING ? "stream_create(non_blocking)" : "stream_create");
  *s = Handle<CUstream>();
  return CUDA_SUCCESS;
}
CUresult FakeStreamDestroy(CUstream) {
  fake->calls.push_back("stream_destroy");
  return CUDA_SUCCESS;
}
CUresult FakeBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  fake->calls.push_back(s == kCallerStream ? "begin_capture(caller)" : "begin_capture");
  fake->mode = mode;
  return CUDA_SUCCESS;
}
CUresult FakeEndCapture(CUstream, CUgraph* g) {
  fake->calls.push_back("end_capture");
  *g = Handle<CUgraph>();
  return CUDA_SUCCESS;
}
CUresult FakeInstantiate(CUgraphExec* e, CUgraph, unsigned long long) {
  fake->calls.push_back("instantiate");
  *e = Handle<CUgraphExec>();
  return CUDA_SUCCESS;
}
CUresult FakeUpdate(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo* info) {
  fake->calls.push_back("update");
  info->result = fake->update_result == CUDA_SUCCESS ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                                                     : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  return fake->update_result;
}
CUresult FakeLaunch(CUgraphExec, CUstream s) {
  fake->calls.push_back(s == kCallerStream ? "graph_launch(caller)" : "graph_launch(other)");
  return CUDA_SUCCESS;
}
CUresult FakeExecDestroy(CUgraphExec) {
  fake->calls.push_back("exec_destroy");
  return CUDA_SUCCESS;
}
CUresult FakeGraphDestroy(CUgraph) {
  fake->calls.push_back("graph_destroy");
  return CUDA_SUCCESS;
}

class CudaGraphRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake = &state_;
    cu_.cuStreamIsCapturing = FakeIsCapturing;
    cu_.cuStreamCreate = FakeStreamCreate;
    cu_.cuStreamDestroy = FakeStreamDestroy;
    cu_.cuStreamBeginCapture = FakeBeginCapture;
    cu_.cuStreamEndCapture = FakeEndCapture;
    cu_.cuGraphInstantiate = FakeInstantiate;
    cu_.cuGraphExecUpdate = FakeUpdate;
    cu_.cuGraphLaunch = FakeLaunch;
    cu_.cuGraphExecDestroy = FakeExecDestroy;
    cu_.cuGraphDestroy = FakeGraphDestroy;
  }
  void TearDown() override { fake = nullptr; }

  // Records the stream each enqueue was given: "enqueue(caller)" or "enqueue(capture)".
  CudaGraphRunner::Enqueue Recorder() {
    return [](CUstream s) {
      fake->calls.push_back(s == kCallerStream ? "enqueue(caller)" : "enqueue(capture)");
      return absl::OkStatus();
    };
  }
  std::vector<std::string> Take() { return std::exchange(state_.calls, {}); }

  Fake state_;
  CudaDriver cu_;
};

using Calls = std::vector<std::string>;

TEST_F(CudaGraphRunnerTest, CapturesOnceThenReplaysThenUpdatesInPlace) {
  CudaGraphRunner runner(&cu_, 1);
  GraphKey a{{0x1000}, {0x2000}}, b{{0x1000}, {0x3000}};
  ASSERT_TRUE(runner.Run(a, Recorder(), kCallerStream).ok());
  EXPECT_EQ(Take(), (Calls{"is_capturing", "enqueue(caller)", "stream_create(non_blocking)", "begin_capture",
                           "enqueue(capture)", "end_capture", "instantiate", "graph_destroy",
                           "graph_launch(caller)"}));
  EXPECT_EQ(state_.mode, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  ASSERT_TRUE(runner.Run(a, Recorder(), kCallerStream).ok());
  EXPECT_EQ(Take(), (Calls{"is_capturing", "graph_launch(caller)"}));
  ASSERT_TRUE(runner.Run(b, Recorder(), kCallerStream).ok());
  EXPECT_EQ(Take(), (Calls{"is_capturing", "begin_capture", "enqueue(capture)", "end_capture", "update",
                           "graph_destroy", "graph_launch(caller)"}));
  EXPECT_EQ(runner.key(), b);
  const GraphStats& s = runner.stats();
  EXPECT_EQ(s.captures, 2);
  EXPECT_EQ(s.instantiations, 1);
  EXPECT_EQ(s.updates, 1);
  EXPECT_EQ(s.refused_updates, 0);
  EXPECT_EQ(s.graph_launches, 3);
}

// Keys that come back in turn (a training step's allocator blocks) are replays, one exec each;
// a key beyond the capacity takes the least recently used exec, updated in place.
TEST_F(CudaGraphRunnerTest, KeepsAnExecPerKeyUpToItsCapacity) {
  CudaGraphRunner runner(&cu_, 2);
  GraphKey a{{0x1000}, {0x2000}}, b{{0x1000}, {0x3000}}, c{{0x1000}, {0x4000}};
  for (const GraphKey& k : {a, b, a, b, a}) ASSERT_TRUE(runner.Run(k, Recorder(), kCallerStream).ok());
  EXPECT_EQ(runner.execs(), 2);
  EXPECT_EQ(runner.stats().captures, 2);
  EXPECT_EQ(runner.stats().instantiations, 2);
  EXPECT_EQ(runner.stats().updates, 0);
  EXPECT_EQ(runner.stats().graph_launches, 5);
  Take();
  ASSERT_TRUE(runner.Run(c, Recorder(), kCallerStream).ok());  // b is the least recently used
  EXPECT_EQ(Take(), (Calls{"is_capturing", "begin_capture", "enqueue(capture)", "end_capture", "update",
                           "graph_destroy", "graph_launch(caller)"}));
  ASSERT_TRUE(runner.Run(a, Recorder(), kCallerStream).ok());
  EXPECT_EQ(Take(), (Calls{"is_capturing", "graph_launch(caller)"}));
  ASSERT_TRUE(runner.Run(b, Recorder(), kCallerStream).ok());  // c is now the oldest
  EXPECT_EQ(runner.stats().updates, 2);
  EXPECT_EQ(runner.key(), b);
}

TEST_F(CudaGraphRunnerTest, ARefusedUpdateInstantiatesAfresh) {
  CudaGraphRunner runner(&cu_, 1);
  ASSERT_TRUE(runner.Run(GraphKey{{0x1000}, {0x2000}}, Recorder(), kCallerStream).ok());
  Take();
  state_.update_result = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  ASSERT_TRUE(runner.Run(GraphKey{{0x1100}, {0x2000}}, Recorder(), kCallerStream).ok());
  EXPECT_EQ(Take(), (Calls{"is_capturing", "begin_capture", "enqueue(capture)", "end_capture", "update",
                           "exec_destroy", "instantiate", "graph_destroy", "graph_launch(caller)"}));
  EXPECT_EQ(runner.stats().refused_updates, 1);
  EXPECT_EQ(runner.stats().instantiations, 2);
}

TEST_F(CudaGraphRunnerTest, AnotherUpdateErrorIsReturnedAndForgetsTheExec) {
  CudaGraphRunner runner(&cu_, 1);
  ASSERT_TRUE(runner.Run(GraphKey{{0x1000}, {0x2000}}, Recorder(), kCallerStream).ok());
  state_.update_result = CUDA_ERROR_INVALID_VALUE;
  absl::Status s = runner.Run(GraphKey{{0x1100}, {0x2000}}, Recorder(), kCallerStream);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cuGraphExecUpdate"), std::string::npos) << s;
  EXPECT_FALSE(runner.key().has_value());
  Take();
  state_.update_result = CUDA_SUCCESS;
  ASSERT_TRUE(runner.Run(GraphKey{{0x1100}, {0x2000}}, Recorder(), kCallerStream).ok());
  EXPECT_EQ(Take(), (Calls{"is_capturing", "begin_capture", "enqueue(capture)", "end_capture", "instantiate",
                           "graph_destroy", "graph_launch(caller)"}));
}

TEST_F(CudaGraphRunnerTest, TheLegacyStreamIsNeverCapturedOnlyLaunchedOn) {
  CudaGraphRunner runner(&cu_, 1);
  // The fake says any stream but kCallerStream is "capturing"; so use the caller stream's
  // status for the null stream by making it the caller here.
  cu_.cuStreamBeginCapture = [](CUstream s, CUstreamCaptureMode) -> CUresult {
    fake->calls.push_back(s == nullptr ? "begin_capture(null)" : "begin_capture");
    return CUDA_SUCCESS;
  };
  cu_.cuStreamIsCapturing = [](CUstream, CUstreamCaptureStatus* status) -> CUresult {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  };
  cu_.cuGraphLaunch = [](CUgraphExec, CUstream s) -> CUresult {
    fake->calls.push_back(s == nullptr ? "graph_launch(null)" : "graph_launch(other)");
    return CUDA_SUCCESS;
  };
  ASSERT_TRUE(runner.Run(GraphKey{{0x1000}, {0x2000}}, Recorder(), nullptr).ok());
  Calls calls = Take();
  EXPECT_NE(std::find(calls.begin(), calls.end(), "begin_capture"), calls.end());
  EXPECT_EQ(std::find(calls.begin(), calls.end(), "begin_capture(null)"), calls.end());
  EXPECT_EQ(calls.back(), "graph_launch(null)");
}

TEST_F(CudaGraphRunnerTest, InsideTheCallersCaptureItLaunchesTheStepsPlainly) {
  CudaGraphRunner runner(&cu_, 1);
  state_.caller_status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  ASSERT_TRUE(runner.Run(GraphKey{{0x1000}, {0x2000}}, Recorder(), kCallerStream).ok());
  EXPECT_EQ(Take(), (Calls{"is_capturing", "enqueue(caller)"}));
  EXPECT_EQ(runner.stats().inside_caller_capture, 1);
  EXPECT_EQ(runner.stats().graph_launches, 0);
  state_.caller_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  EXPECT_EQ(runner.Run(GraphKey{{0x1000}, {0x2000}}, Recorder(), kCallerStream).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CudaGraphRunnerTest, AFailedEnqueueStillEndsTheCapture) {
  CudaGraphRunner runner(&cu_, 1);
  int runs = 0;
  auto failing_in_capture = [&](CUstream s) -> absl::Status {
    ++runs;
    fake->calls.push_back(s == kCallerStream ? "enqueue(caller)" : "enqueue(capture)");
    if (s != kCallerStream) return absl::InternalError("step 2 (x) kernel k: launch failed");
    return absl::OkStatus();
  };
  absl::Status s = runner.Run(GraphKey{{0x1000}, {0x2000}}, failing_in_capture, kCallerStream);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("while capturing a CUDA graph: step 2"), std::string::npos) << s;
  EXPECT_EQ(Take(), (Calls{"is_capturing", "enqueue(caller)", "stream_create(non_blocking)", "begin_capture",
                           "enqueue(capture)", "end_capture", "graph_destroy"}));
  EXPECT_FALSE(runner.key().has_value());
  EXPECT_EQ(runs, 2);
}

TEST_F(CudaGraphRunnerTest, DestroysItsExecAndStream) {
  {
    CudaGraphRunner runner(&cu_, 1);
    ASSERT_TRUE(runner.Run(GraphKey{{0x1000}, {0x2000}}, Recorder(), kCallerStream).ok());
    Take();
  }
  EXPECT_EQ(Take(), (Calls{"exec_destroy", "stream_destroy"}));
}

}  // namespace
}  // namespace kiln
