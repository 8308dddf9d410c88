// Internal to the C ABI (api/kiln.h): what its opaque handles hold, and the error plumbing
// every entry point shares. Each kiln_* function body runs inside Guard(), which clears
// nothing on success, records the message of a failure in a thread-local string for
// kiln_last_error(), maps absl::Status codes to KILN_ERROR_* (ToCode) and turns any C++
// exception into KILN_ERROR_INTERNAL, so that none crosses the C boundary.
#ifndef KILN_API_CAPI_CAPI_INTERNAL_H_
#define KILN_API_CAPI_CAPI_INTERNAL_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "api/kiln.h"
#include "ir/graph.h"
#include "runtime/executable.h"
#include "runtime/program.h"

struct kiln_graph {
  std::unique_ptr<kiln::Graph> graph;
  std::vector<kiln::Node*> values;  // ids handed out by the builder (kiln_graph_add_*)
  bool borrowed = false;            // owned by a kiln_executable (kiln_executable_graph)
};

struct kiln_options {
  std::string arch;                 // "" : this GPU's, or sm_90a without one
  std::string cost_device = "auto";  // this GPU's query (the h100 spec without a GPU)
  bool tune = false;
  bool has_cache_dir = false;       // false: KernelCache::Default()
  std::string cache_dir;            // "" with has_cache_dir: memory only
  int device_ordinal = 0;
  bool cuda_graph = false;          // run through a CUDA graph (kiln_options_set_cuda_graph)
};

struct kiln_executable {
  kiln::Program program;
  kiln_graph source;                // parsed from program.source_graph; borrowed = true
  int device_ordinal = 0;
  std::mutex mutex;                 // guards `loaded` (loaded once, by the first run)
  std::unique_ptr<kiln::Executable> loaded;
  bool cuda_graph = false;          // applied to `loaded` by every run
};

namespace kiln::capi {

// Records `message` as this thread's last error and returns `code`.
int Fail(int code, const std::string& message);
// KILN_ERROR_* for a failed status: CUDA errors (the runtime's "... failed: CUDA_ERROR_..."
// messages) are KILN_ERROR_CUDA, a missing driver or GPU KILN_ERROR_NO_DEVICE, then by code.
int ToCode(const absl::Status& status);
// Fail(ToCode(status), message) for a failed status, KILN_OK otherwise.
int FromStatus(const absl::Status& status);

// Runs `body` (returning a KILN_* code), turning exceptions into KILN_ERROR_INTERNAL.
template <typename Body>
int Guard(const char* function, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(KILN_ERROR_INTERNAL, std::string(function) + ": out of host memory");
  } catch (const std::exception& e) {
    return Fail(KILN_ERROR_INTERNAL, std::string(function) + ": internal error: " + e.what());
  } catch (...) {
    return Fail(KILN_ERROR_INTERNAL, std::string(function) + ": internal error (unknown exception)");
  }
}

// KILN_ERROR_INVALID_ARGUMENT naming the NULL argument: "kiln_compile: graph is NULL".
int NullArgument(const char* function, const char* argument);

// A library-owned copy of `text` for a `char**` result (freed with kiln_string_free).
char* CopyString(const std::string& text);

// Makes device `ordinal`'s primary context current on this thread, retaining it once per
// process (it is never released: the CUDA runtime and PyTorch share it for the process's life).
absl::Status UsePrimaryContext(int ordinal);

// Loads the executable onto its GPU unless that happened already (under its mutex).
absl::Status Prepare(kiln_executable* executable);

// Fills `info` from a graph value.
void FillInfo(const std::string& name, const Node& node, kiln_tensor_info* info);

}  // namespace kiln::capi

#endif  // KILN_API_CAPI_CAPI_INTERNAL_H_
