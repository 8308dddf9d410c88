// The C ABI's error plumbing (capi_internal.h) and its library-wide functions: version, the
// last error, status names, strings, whether there is a GPU.
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "api/capi/capi_internal.h"
#include "ir/dtype.h"
#include "runtime/cuda_driver.h"

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln::capi {
namespace {

std::string& LastError() {
  thread_local std::string message;
  return message;
}

}  // namespace

int Fail(int code, const std::string& message) {
  LastError() = message;
  return code;
}

int ToCode(const absl::Status& status) {
  if (status.ok()) return KILN_OK;
  const absl::string_view message = status.message();
  if (absl::StrContains(message, "CUDA_ERROR_NO_DEVICE") || absl::StartsWith(message, "no CUDA driver") ||
      absl::StartsWith(message, "cuInit(0) failed")) {
    return KILN_ERROR_NO_DEVICE;
  }
  if (absl::StrContains(message, " failed: CUDA_ERROR_") || absl::StrContains(message, "NVRTC") ||
      absl::StrContains(message, "CUBLAS_STATUS_")) {
    return KILN_ERROR_CUDA;
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kResourceExhausted:  // the importers' size limits
    case absl::StatusCode::kAlreadyExists:
      return KILN_ERROR_INVALID_ARGUMENT;
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kFailedPrecondition:  // e.g. an artifact for another arch
      return KILN_ERROR_UNSUPPORTED;
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kDataLoss:
      return KILN_ERROR_IO;
    default:
      return KILN_ERROR_INTERNAL;
  }
}

int FromStatus(const absl::Status& status) {
  if (status.ok()) return KILN_OK;
  return Fail(ToCode(status), std::string(status.message()));
}

int NullArgument(const char* function, const char* argument) {
  return Fail(KILN_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + argument + " is NULL");
}

char* CopyString(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, text.data(), text.size());
  copy[text.size()] = '\0';
  return copy;
}

void FillInfo(const std::string& name, const Node& node, kiln_tensor_info* info) {
  info->name = name.c_str();
  info->dtype = DTypeName(node.dtype());
  info->rank = static_cast<int64_t>(node.shape().size());
  info->dims = node.shape().empty() ? nullptr : node.shape().data();
}

}  // namespace kiln::capi

extern "C" {

const char* kiln_version(void) { return KILN_VERSION; }

int kiln_abi_version(void) { return KILN_C_ABI_VERSION; }

const char* kiln_last_error(void) { return kiln::capi::LastError().c_str(); }

const char* kiln_status_name(int status) {
  switch (status) {
    case KILN_OK: return "KILN_OK";
    case KILN_ERROR_INVALID_ARGUMENT: return "KILN_ERROR_INVALID_ARGUMENT";
    case KILN_ERROR_UNSUPPORTED: return "KILN_ERROR_UNSUPPORTED";
    case KILN_ERROR_CUDA: return "KILN_ERROR_CUDA";
    case KILN_ERROR_INTERNAL: return "KILN_ERROR_INTERNAL";
    case KILN_ERROR_IO: return "KILN_ERROR_IO";
    case KILN_ERROR_NO_DEVICE: return "KILN_ERROR_NO_DEVICE";
    default: return "KILN_ERROR_UNKNOWN";
  }
}

void kiln_string_free(char* text) { std::free(text); }

int kiln_have_gpu(void) {
  try {
    return kiln::HaveGpu() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
