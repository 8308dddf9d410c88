// CUDA graph capture and replay of a run (runtime/cuda_graph.h states the policy).
#include "runtime/cuda_graph.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/base/status.h"

namespace kiln {

namespace {

std::string Counted(int64_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

}  // namespace

std::string LaunchCounts::ToString() const {
  std::vector<std::string> parts;
  if (kernels > 0) parts.push_back(Counted(kernels, "kernel", "kernels"));
  if (library_calls > 0) parts.push_back(Counted(library_calls, "cuBLASLt call", "cuBLASLt calls"));
  if (copies > 0) parts.push_back(Counted(copies, "copy", "copies"));
  if (graph_launches > 0) parts.push_back(Counted(graph_launches, "CUDA graph", "CUDA graphs"));
  std::string s = Counted(total(), "launch", "launches");
  if (!parts.empty()) absl::StrAppend(&s, " (", absl::StrJoin(parts, ", "), ")");
  return s;
}

LaunchCounts CountLaunches(const Program& program) {
  LaunchCounts c;
  for (const Step& step : program.steps) {
    switch (step.kind) {
      case Step::Kind::kKernel: ++c.kernels; break;
      case Step::Kind::kMatmul: c.library_calls += static_cast<int64_t>(step.matmul.calls.size()); break;
      case Step::Kind::kCopy:
        if (program.buffers[step.copy.src].bytes > 0) ++c.copies;
        break;
    }
  }
  return c;
}

std::string GraphStats::ToString() const {
  std::string s = absl::StrFormat("%d graph launches, %d captures, %d instantiations, %d updates", graph_launches,
                                  captures, instantiations, updates);
  if (refused_updates > 0) absl::StrAppendFormat(&s, " (%d refused: instantiated afresh)", refused_updates);
  if (inside_caller_capture > 0) {
    absl::StrAppendFormat(&s, ", %d runs inside the caller's own capture", inside_caller_capture);
  }
  return s;
}

CudaGraphRunner::~CudaGraphRunner() {
  // Errors here have no one to go to; a destroyed exec still in flight is freed by the driver
  // when its launches finish.
  for (Exec& e : execs_) {
    if (e.exec != nullptr) cu_->cuGraphExecDestroy(e.exec);
  }
  if (capture_stream_ != nullptr) cu_->cuStreamDestroy(capture_stream_);
}

absl::StatusOr<CUgraph> CudaGraphRunner::Capture(const Enqueue& enqueue) {
  if (capture_stream_ == nullptr) {
    KILN_CU_RETURN_IF_ERROR(cu_->cuStreamCreate(&capture_stream_, CU_STREAM_NON_BLOCKING));
  }
  KILN_CU_RETURN_IF_ERROR(cu_->cuStreamBeginCapture(capture_stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  absl::Status enqueued = enqueue(capture_stream_);
  CUgraph graph = nullptr;
  // Always end the capture, so that the stream is usable again after a failed enqueue.
  CUresult ended = cu_->cuStreamEndCapture(capture_stream_, &graph);
  if (!enqueued.ok()) {
    if (graph != nullptr) cu_->cuGraphDestroy(graph);
    return absl::Status(enqueued.code(), absl::StrCat("while capturing a CUDA graph: ", enqueued.message()));
  }
  if (ended != CUDA_SUCCESS) {
    if (graph != nullptr) cu_->cuGraphDestroy(graph);
    absl::Status e = CuResultToStatus(ended, "cuStreamEndCapture", __FILE__, __LINE__);
    return absl::Status(e.code(), absl::StrCat(e.message(),
                                               " (a call during the capture was not capturable; run without "
                                               "the CUDA graph to see which)"));
  }
  ++stats_.captures;
  return graph;
}

absl::Status CudaGraphRunner::Install(CUgraph graph, Exec& exec) {
  if (exec.exec != nullptr) {
    CUgraphExecUpdateResultInfo info = {};
    CUresult r = cu_->cuGraphExecUpdate(exec.exec, graph, &info);
    if (r == CUDA_SUCCESS) {
      ++stats_.updates;
      return absl::OkStatus();
    }
    if (r != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
      return CuResultToStatus(r, "cuGraphExecUpdate", __FILE__, __LINE__);
    }
    ++stats_.refused_updates;
    cu_->cuGraphExecDestroy(exec.exec);
    exec.exec = nullptr;
  }
  KILN_CU_RETURN_IF_ERROR(cu_->cuGraphInstantiate(&exec.exec, graph, 0));
  ++stats_.instantiations;
  return absl::OkStatus();
}

absl::Status CudaGraphRunner::Run(const GraphKey& key, const Enqueue& enqueue, CUstream stream) {
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  KILN_CU_RETURN_IF_ERROR(cu_->cuStreamIsCapturing(stream, &capturing));
  if (capturing == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    // The caller is capturing its own graph: a graph launch cannot be captured with our exec
    // in a useful way, and plain launches are what its graph wants.
    ++stats_.inside_caller_capture;
    return enqueue(stream);
  }
  if (capturing != CU_STREAM_CAPTURE_STATUS_NONE) {
    return absl::FailedPreconditionError(
        "the stream's capture was invalidated by an earlier error; end that capture before running kiln on it");
  }
  ++clock_;
  auto held = std::find_if(execs_.begin(), execs_.end(), [&](const Exec& e) { return e.key == key; });
  if (!warmed_up_) {
    // One run on the caller's stream before the first capture, so that whatever is set up on
    // a first use (cuBLASLt's lazily loaded kernels) happens outside it. The graph then
    // writes the same outputs again.
    KILN_RETURN_IF_ERROR(enqueue(stream));
    warmed_up_ = true;
  }
  if (held == execs_.end()) {
    KILN_ASSIGN_OR_RETURN(CUgraph graph, Capture(enqueue));
    if (static_cast<int>(execs_.size()) < capacity_) {
      execs_.push_back(Exec{});
      held = execs_.end() - 1;
    } else {  // the least recently used exec takes the new key
      held = std::min_element(execs_.begin(), execs_.end(),
                              [](const Exec& a, const Exec& b) { return a.last_use < b.last_use; });
    }
    absl::Status installed = Install(graph, *held);
    cu_->cuGraphDestroy(graph);  // the exec keeps what it needs
    if (!installed.ok()) {
      key_.reset();  // the exec, if any, is no longer known to match any key
      if (held->exec != nullptr) cu_->cuGraphExecDestroy(held->exec);
      execs_.erase(held);
      return installed;
    }
    held->key = key;
  }
  held->last_use = clock_;
  key_ = key;
  KILN_CU_RETURN_IF_ERROR(cu_->cuGraphLaunch(held->exec, stream));
  ++stats_.graph_launches;
  return absl::OkStatus();
}

}  // namespace kiln
