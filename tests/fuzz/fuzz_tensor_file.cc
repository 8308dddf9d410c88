// Fuzz target: the tensor file reader of `kiln run --inputs` (tools/tensor_io.h). The first
// byte picks the path: even, the bytes after it are an .npy file (ParseNpy), and a tensor
// read must write back (SerializeNpy) to a file that reads as the same tensor; odd, they are
// written to a scratch file read by ReadTensorFile as .npy or raw (.bin) against a dtype and
// a shape of up to three small dims taken from the next bytes, as the CLI checks an input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/fuzz/fuzz_check.h"
#include "tools/tensor_io.h"

namespace {

// A scratch file of this process (the name depends on the pid, so parallel jobs do not
// collide); removed at exit.
const std::string& ScratchStem() {
  static const std::string* stem = [] {
    const char* dir = std::getenv("TMPDIR");
    auto* s = new std::string(std::string(dir && *dir ? dir : "/tmp") + "/kiln_fuzz_tensor_" +
                              std::to_string(getpid()));
    std::atexit([] {
      std::remove((ScratchStem() + ".npy").c_str());
      std::remove((ScratchStem() + ".bin").c_str());
    });
    return s;
  }();
  return *stem;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  if ((mode & 1) == 0) {
    const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    absl::StatusOr<kiln::Tensor> t = kiln::ParseNpy(bytes, "<fuzz>");
    if (!t.ok()) return 0;
    absl::StatusOr<kiln::Tensor> again = kiln::ParseNpy(kiln::SerializeNpy(*t), "<again>");
    if (!again.ok() || again->dtype() != t->dtype() || again->shape() != t->shape() ||
        again->num_bytes() != t->num_bytes() ||
        (t->num_bytes() > 0 && std::memcmp(again->data(), t->data(), t->num_bytes()) != 0)) {
      kiln::fuzz::FuzzFail("an .npy tensor does not read back from SerializeNpy");
    }
    return 0;
  }
  if (size < 3) return 0;
  static const kiln::DType kDTypes[] = {kiln::DType::kF32, kiln::DType::kF16, kiln::DType::kBF16,
                                        kiln::DType::kI32, kiln::DType::kI64, kiln::DType::kBool};
  const kiln::DType dtype = kDTypes[data[1] % 6];
  kiln::Shape shape;
  const int rank = data[2] % 4;
  size_t at = 3;
  for (int i = 0; i < rank && at < size; ++i) shape.push_back(data[at++] % 17);
  const std::string path = ScratchStem() + ((mode & 2) ? ".npy" : ".bin");
  const std::string bytes(reinterpret_cast<const char*>(data) + at, size - at);
  if (!kiln::WriteFileBytes(path, bytes).ok()) kiln::fuzz::FuzzFail("cannot write " + path);
  absl::StatusOr<kiln::Tensor> t = kiln::ReadTensorFile(path, dtype, shape);
  if (t.ok() && (t->dtype() != dtype || t->shape() != shape)) {
    kiln::fuzz::FuzzFail("ReadTensorFile returned another dtype or shape than it was asked for");
  }
  return 0;
}
