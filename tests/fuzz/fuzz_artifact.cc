// Fuzz target: the `.kiln` artifact loader (runtime/artifact.h, DeserializeProgram and
// Program::Validate), what `kiln run model.kiln` and kiln_load read. Each input is loaded
// twice: as it is, and with its header repaired (magic, version, payload length and checksum
// made to match), so that mutations reach the payload decoder and the validator instead of
// stopping at the checksum. A loaded Program, saved again, must load and save to the same
// bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "ir/base/hash.h"
#include "runtime/artifact.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr size_t kHeaderBytes = 20;  // magic, u32 version, u64 payload length
constexpr size_t kTrailerBytes = 8;  // u64 FNV-1a of the payload

void Load(const std::string& bytes) {
  absl::StatusOr<kiln::Program> program = kiln::DeserializeProgram(bytes, "<fuzz>");
  if (!program.ok()) return;
  // The bytes need not be canonical (any nonzero flag reads as true), but what Serialize
  // writes must load again and serialize to itself.
  const std::string saved = kiln::SerializeProgram(*program);
  absl::StatusOr<kiln::Program> again = kiln::DeserializeProgram(saved, "<saved>");
  if (!again.ok()) {
    kiln::fuzz::FuzzFail("a loaded artifact, saved again, does not load: " +
                         std::string(again.status().message()));
  }
  if (kiln::SerializeProgram(*again) != saved) {
    kiln::fuzz::FuzzFail("a saved artifact does not load and save to the same bytes");
  }
}

void PutLittleEndian(std::string& bytes, size_t pos, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) bytes[pos + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Load(bytes);
  if (bytes.size() < kHeaderBytes + kTrailerBytes) return 0;
  std::memcpy(bytes.data(), "KILNART\n", 8);
  PutLittleEndian(bytes, 8, kiln::kArtifactVersion, 4);
  const size_t length = bytes.size() - kHeaderBytes - kTrailerBytes;
  PutLittleEndian(bytes, 12, length, 8);
  PutLittleEndian(bytes, kHeaderBytes + length,
                  kiln::Fnv1a64(std::string_view(bytes).substr(kHeaderBytes, length)), 8);
  Load(bytes);
  return 0;
}
