// Running an Executable through a CUDA graph (issue 13: at 16 tokens a transformer block is
// all launch overhead). Executable::RunGraph (runtime/executable.h) uses this; the parts that
// need no GPU (the key, the decision, the launch count) are plain functions tested on the CPU.
//
// What a capture bakes in. A run's steps take, by value: every buffer's address (the caller's
// input and output pointers; the constant block, arena, persistent block and cuBLASLt
// workspace, which are fixed for the Executable's life), the element count (fixed by the
// Program), and cuBLASLt's alpha and beta (constants). Nothing else changes between runs:
// dropout's seed and offset are either attributes (compiled into the kernel source) or graph
// inputs, which kernels read from device memory at run time, so a replay with the same seed
// buffer holding a new value draws a new mask. The key of a capture is therefore exactly the
// caller's input and output addresses (GraphKey); the stream is not part of it, because the
// capture never runs on the caller's stream (below) and a CUgraphExec launches on any stream.
//
// Policy (CudaGraphRunner::Run):
//   - no exec yet: capture, instantiate, launch (kCapture); before the runner's first capture
//     the steps also run once on the caller's stream, outside any capture (a warm-up: what a
//     library sets up on first use, such as cuBLASLt's lazily loaded kernels, is not
//     captured), so the first call computes its outputs twice;
//   - the same key as the exec's: launch it again (kReplay);
//   - another key: capture again and cuGraphExecUpdate the exec in place (kUpdate); when the
//     driver refuses the update (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) the exec is destroyed
//     and the new graph instantiated. Launches of the old exec already enqueued are not
//     affected by either (the driver applies an update to later launches, and frees a
//     destroyed exec once its launches finish).
// The runner keeps up to `capacity` execs, one per key, and a key it holds is a replay: a
// training step under torch.compile hands a region the same few sets of addresses in turn (the
// caching allocator's blocks cycle with the step), and one exec for the last key only made
// every call a capture and an update (a capture of every step plus cuGraphExecUpdate: more host
// time than launching the steps). A new key beyond the capacity updates the least recently
// used exec in place.
//
// Streams. A capture runs on a private non-blocking stream of the runner, never on the
// caller's, so: the legacy (null) stream, which cannot be captured, works like any other
// stream; no other work on the caller's stream (another thread's, PyTorch's) can be swept into
// the capture; and capturing enqueues nothing. The graph is then launched with cuGraphLaunch
// on the caller's stream, ordered after the caller's earlier work as a kernel would be.
// The capture mode is CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: a potentially unsafe call (an
// allocation, a synchronous copy) made by this thread during the capture fails the capture
// rather than slipping past it (as RELAXED would let it), while other threads of the process
// (PyTorch's allocator, a data loader) are left alone (GLOBAL would fail their cudaMalloc).
// If the caller's stream is itself being captured (torch.cuda.graph around a kiln call), the
// run is enqueued into that capture as plain launches instead: the caller's graph holds them.
#ifndef KILN_RUNTIME_CUDA_GRAPH_H_
#define KILN_RUNTIME_CUDA_GRAPH_H_

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/cuda_driver.h"
#include "runtime/program.h"

namespace kiln {

// The addresses a capture bakes in: the caller's input and output pointers, in order.
struct GraphKey {
  std::vector<CUdeviceptr> inputs, outputs;
  bool operator==(const GraphKey& other) const { return inputs == other.inputs && outputs == other.outputs; }
  bool operator!=(const GraphKey& other) const { return !(*this == other); }
};

// The host-side launch calls one run makes. The stream path: a kernel launch per kernel step,
// a cublasLtMatmul call per matmul call (each launches one or more kernels of cuBLASLt's own),
// a cuMemcpyDtoDAsync per copy of at least one byte. Through a graph: one cuGraphLaunch.
struct LaunchCounts {
  int64_t kernels = 0;
  int64_t library_calls = 0;
  int64_t copies = 0;
  int64_t graph_launches = 0;
  int64_t total() const { return kernels + library_calls + copies + graph_launches; }
  // "12 launches (9 kernels, 2 cuBLASLt calls, 1 copy)" or "1 launch (1 CUDA graph)".
  std::string ToString() const;
};

// The stream path's counts for `program` (what a graph of it holds as nodes, too).
LaunchCounts CountLaunches(const Program& program);

// What a runner has done, for tests and `kiln run --cuda-graph`.
struct GraphStats {
  int64_t captures = 0;           // graphs captured (the first, and one per update)
  int64_t instantiations = 0;     // cuGraphInstantiate calls
  int64_t updates = 0;            // cuGraphExecUpdate calls that succeeded
  int64_t refused_updates = 0;    // ... that the driver refused (then instantiated afresh)
  int64_t graph_launches = 0;     // cuGraphLaunch calls
  int64_t inside_caller_capture = 0;  // runs enqueued into the caller's own capture instead
  std::string ToString() const;
};

// How many execs (keys) a runner keeps by default.
inline constexpr int kGraphExecsPerRunner = 4;

class CudaGraphRunner {
 public:
  // Enqueues one run's steps on the given stream (the Executable's launch, arguments already
  // validated). It must not synchronize or allocate.
  using Enqueue = std::function<absl::Status(CUstream)>;

  explicit CudaGraphRunner(const CudaDriver* cu, int capacity = kGraphExecsPerRunner)
      : cu_(cu), capacity_(capacity < 1 ? 1 : capacity) {}
  ~CudaGraphRunner();
  CudaGraphRunner(const CudaGraphRunner&) = delete;
  CudaGraphRunner& operator=(const CudaGraphRunner&) = delete;

  // One run for `key` on `stream` (0: the legacy stream), as the policy above says.
  absl::Status Run(const GraphKey& key, const Enqueue& enqueue, CUstream stream);

  const GraphStats& stats() const { return stats_; }
  // The key of the exec the last run launched (none before the first capture, or after a
  // failed one).
  const std::optional<GraphKey>& key() const { return key_; }
  // How many execs it holds now.
  int execs() const { return static_cast<int>(execs_.size()); }

 private:
  struct Exec {
    GraphKey key;
    CUgraphExec exec = nullptr;
    int64_t last_use = 0;
  };
  absl::StatusOr<CUgraph> Capture(const Enqueue& enqueue);
  // Updates `exec` from `graph` in place, or instantiates it afresh (exec.exec null, or the
  // driver refused the update).
  absl::Status Install(CUgraph graph, Exec& exec);

  const CudaDriver* cu_;
  const int capacity_;
  CUstream capture_stream_ = nullptr;  // created on first capture
  std::vector<Exec> execs_;            // at most capacity_, distinct keys
  int64_t clock_ = 0;                  // run count, for the least recently used exec
  std::optional<GraphKey> key_;
  GraphStats stats_;
  bool warmed_up_ = false;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_GRAPH_H_
