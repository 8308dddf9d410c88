// CompileCuda: a small NVRTC wrapper that turns one generated CUDA source into a CUBIN for a
// real GPU architecture (DESIGN.md §6). It needs no GPU and no driver: CI compiles every
// generated kernel with it.
//  * The embedded templates (templates/*.cuh, EmbeddedTemplates()) are passed as named
//    headers, so a kernel writes `#include "row_reduce.cuh"`.
//  * Options: -std=c++17, --gpu-architecture=<arch> (a real sm_XX target such as "sm_90a":
//    NVRTC 13 returns an empty CUBIN for compute_XX, which is refused here), -lineinfo (so
//    compute-sanitizer names source lines), --ptxas-options=-v (the log then carries registers
//    and spills, parsed into CompiledCuda), and --include-path=<CUDA include dir> (NVRTC finds
//    cuda_fp16.h / cuda_bf16.h only through it; the directory is CUDAToolkit_INCLUDE_DIRS at
//    build time, overridable at run time with KILN_CUDA_INCLUDE_DIR), then `extra_options`.
//  * KILN_FORBID_NVRTC=1 in the environment makes every call fail (to show that running an
//    AOT artifact compiles nothing).
//  * Every NVRTC call is checked by KILN_NVRTC_RETURN_IF_ERROR, which names the call; a failed
//    compile returns an error Status naming the kernel and carrying the full NVRTC log.
#ifndef KILN_RUNTIME_NVRTC_COMPILE_H_
#define KILN_RUNTIME_NVRTC_COMPILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln {

struct CompiledCuda {
  std::string kernel_name;
  std::string arch;               // e.g. "sm_90a"
  std::vector<char> cubin;        // never empty on success
  std::string ptx;
  std::string log;                // the NVRTC log (ptxas -v lines included)
  int registers = -1;             // per thread, from "Used N registers" (-1: not reported)
  int64_t spill_store_bytes = 0;  // from "N bytes spill stores"
  int64_t spill_load_bytes = 0;   // from "N bytes spill loads"
  int64_t stack_frame_bytes = 0;  // from "N bytes stack frame"
  int64_t static_smem_bytes = 0;  // from "N bytes smem"
  // ptxas's C7515 / C7518 "wgmma.mma_async instructions are serialized": an accumulator of a
  // wgmma in flight is touched before its wait, or wgmma are issued on divergent paths, so ptxas
  // waits after every wgmma (no overlap at all).
  bool wgmma_serialized = false;
  double compile_ms = 0;          // wall time of nvrtcCompileProgram + fetching the outputs
  std::vector<std::string> options;  // exactly what NVRTC was given
};

// Compiles `source` (whose entry point is the extern "C" kernel `kernel_name`) for `arch`.
absl::StatusOr<CompiledCuda> CompileCuda(const std::string& kernel_name, const std::string& source,
                                         const std::string& arch,
                                         const std::vector<std::string>& extra_options = {});

// The ptxas -v figures of `kernel_name` in an NVRTC log (exposed for tests).
struct PtxasInfo {
  int registers = -1;
  int64_t spill_store_bytes = 0, spill_load_bytes = 0, stack_frame_bytes = 0, static_smem_bytes = 0;
  bool wgmma_serialized = false;  // ptxas C7515 / C7518: the kernel's wgmma run one at a time
};
PtxasInfo ParsePtxasInfo(const std::string& log, const std::string& kernel_name);

// "13.0": the NVRTC library version in use.
std::string NvrtcVersionString();

}  // namespace kiln

#endif  // KILN_RUNTIME_NVRTC_COMPILE_H_
