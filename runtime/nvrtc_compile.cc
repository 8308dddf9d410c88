#include "runtime/nvrtc_compile.h"

#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <regex>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "templates/embedded_templates.h"

#ifndef KILN_CUDA_INCLUDE_DIR
#error "KILN_CUDA_INCLUDE_DIR must be defined by runtime/CMakeLists.txt (CUDAToolkit_INCLUDE_DIRS)"
#endif

namespace kiln {
namespace {

// The log of `prog` ("" if it cannot be read).
std::string ProgramLog(nvrtcProgram prog) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

// Checks one NVRTC call; the error names the call, the kernel, and carries the program log.
#define KILN_NVRTC_RETURN_IF_ERROR(call)                                                       \
  do {                                                                                         \
    nvrtcResult kiln_nvrtc_result_ = (call);                                                   \
    if (kiln_nvrtc_result_ != NVRTC_SUCCESS) {                                                 \
      return absl::InternalError(absl::StrCat(                                                 \
          "NVRTC: ", #call, " failed for kernel ", kernel_name, ": ",                          \
          nvrtcGetErrorString(kiln_nvrtc_result_),                                             \
          prog != nullptr ? absl::StrCat("\n--- NVRTC log ---\n", ProgramLog(prog)) : ""));    \
    }                                                                                          \
  } while (0)

struct ProgramDeleter {
  void operator()(nvrtcProgram* prog) const {
    if (*prog != nullptr) nvrtcDestroyProgram(prog);
    delete prog;
  }
};

int64_t FirstNumberBefore(const std::string& text, const std::string& suffix) {
  std::smatch m;
  std::regex re("([0-9]+) " + suffix);
  if (std::regex_search(text, m, re)) {
    int64_t v = 0;
    if (absl::SimpleAtoi(m[1].str(), &v)) return v;
  }
  return 0;
}

}  // namespace

PtxasInfo ParsePtxasInfo(const std::string& log, const std::string& kernel_name) {
  PtxasInfo info;
  // ptxas -v writes, per entry function:
  //   ptxas info    : Compiling entry function 'NAME' for 'sm_90a'
  //   ptxas info    : Function properties for NAME
  //       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 30 registers, used 1 barriers, 128 bytes smem, ...
  size_t start = log.find("Compiling entry function '" + kernel_name + "'");
  if (start == std::string::npos) start = 0;
  size_t end = log.find("Compiling entry function '", start + 1);
  std::string section = log.substr(start, end == std::string::npos ? std::string::npos : end - start);
  std::smatch m;
  if (std::regex_search(section, m, std::regex("Used ([0-9]+) registers"))) {
    info.registers = std::stoi(m[1].str());
  }
  info.stack_frame_bytes = FirstNumberBefore(section, "bytes stack frame");
  info.spill_store_bytes = FirstNumberBefore(section, "bytes spill stores");
  info.spill_load_bytes = FirstNumberBefore(section, "bytes spill loads");
  info.static_smem_bytes = FirstNumberBefore(section, "bytes smem");
  // ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are
  //   serialized due to ... in the function 'NAME'   (written before NAME's section); C7518 is
  // the same loss "due to program dependence on compiler-inserted WG.DP in divergent path" (seen:
  // wgmma issued under per-iteration conditions in one loop).
  for (const char* code : {"(C7515)", "(C7518)"}) {
    for (size_t at = log.find(code); at != std::string::npos; at = log.find(code, at + 1)) {
      const size_t eol = log.find('\n', at);
      const std::string line = log.substr(at, eol == std::string::npos ? std::string::npos : eol - at);
      if (line.find("'" + kernel_name + "'") != std::string::npos) info.wgmma_serialized = true;
    }
  }
  return info;
}

std::string NvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return absl::StrCat(major, ".", minor);
}

absl::StatusOr<CompiledCuda> CompileCuda(const std::string& kernel_name, const std::string& source,
                                         const std::string& arch,
                                         const std::vector<std::string>& extra_options) {
  if (!absl::StartsWith(arch, "sm_")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel ", kernel_name, ": NVRTC target \"", arch,
        "\" is not a real architecture (sm_XX, e.g. sm_90a); NVRTC 13 returns an empty CUBIN for "
        "compute_XX targets"));
  }
  // KILN_FORBID_NVRTC=1 turns every compile into an error: running an AOT artifact with it
  // set shows that nothing is compiled (scripts/gpu-check does).
  if (const char* forbid = std::getenv("KILN_FORBID_NVRTC"); forbid != nullptr && std::string(forbid) == "1") {
    return absl::FailedPreconditionError(
        absl::StrCat("kernel ", kernel_name, ": NVRTC was called while KILN_FORBID_NVRTC=1"));
  }
  const auto& templates = EmbeddedTemplates();
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : templates) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  const char* include_env = std::getenv("KILN_CUDA_INCLUDE_DIR");
  const std::string include_dir =
      include_env != nullptr && include_env[0] != '\0' ? include_env : KILN_CUDA_INCLUDE_DIR;

  CompiledCuda out;
  out.kernel_name = kernel_name;
  out.arch = arch;
  out.options = {"-std=c++17", "--gpu-architecture=" + arch, "-lineinfo", "--ptxas-options=-v",
                 "--include-path=" + include_dir};
  for (const std::string& o : extra_options) out.options.push_back(o);
  std::vector<const char*> option_ptrs;
  for (const std::string& o : out.options) option_ptrs.push_back(o.c_str());

  std::unique_ptr<nvrtcProgram, ProgramDeleter> holder(new nvrtcProgram(nullptr));
  nvrtcProgram& prog = *holder;
  const std::string file_name = kernel_name + ".cu";  // names the source in the log and -lineinfo
  KILN_NVRTC_RETURN_IF_ERROR(nvrtcCreateProgram(&prog, source.c_str(), file_name.c_str(),
                                                static_cast<int>(header_texts.size()),
                                                header_texts.data(), header_names.data()));
  const auto start = std::chrono::steady_clock::now();
  nvrtcResult compiled =
      nvrtcCompileProgram(prog, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  out.log = ProgramLog(prog);
  if (compiled != NVRTC_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NVRTC: nvrtcCompileProgram failed for kernel ", kernel_name, " (", arch, "): ",
        nvrtcGetErrorString(compiled), "\noptions: ", absl::StrJoin(out.options, " "),
        "\n--- NVRTC log ---\n", out.log));
  }
  size_t cubin_size = 0;
  KILN_NVRTC_RETURN_IF_ERROR(nvrtcGetCUBINSize(prog, &cubin_size));
  if (cubin_size == 0) {
    return absl::InternalError(absl::StrCat("NVRTC returned an empty CUBIN for kernel ",
                                            kernel_name, " (", arch, ")\n--- NVRTC log ---\n", out.log));
  }
  out.cubin.resize(cubin_size);
  KILN_NVRTC_RETURN_IF_ERROR(nvrtcGetCUBIN(prog, out.cubin.data()));
  size_t ptx_size = 0;
  KILN_NVRTC_RETURN_IF_ERROR(nvrtcGetPTXSize(prog, &ptx_size));
  out.ptx.resize(ptx_size);
  KILN_NVRTC_RETURN_IF_ERROR(nvrtcGetPTX(prog, out.ptx.data()));
  if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  PtxasInfo info = ParsePtxasInfo(out.log, kernel_name);
  out.registers = info.registers;
  out.spill_store_bytes = info.spill_store_bytes;
  out.spill_load_bytes = info.spill_load_bytes;
  out.stack_frame_bytes = info.stack_frame_bytes;
  out.static_smem_bytes = info.static_smem_bytes;
  out.wgmma_serialized = info.wgmma_serialized;
  return out;
}

}  // namespace kiln
