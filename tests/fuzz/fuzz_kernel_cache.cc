// Fuzz target: the reader of the on-disk CUBIN cache entries (runtime/jit/kernel_cache.cc,
// DecodeCacheEntry), which `kiln compile` trusts to skip NVRTC. Each input is decoded twice:
// as it is, and with its header repaired (version, key, payload length and checksum made to
// match the bytes after it), so that mutations reach the payload decoder instead of stopping
// at the checksum. A decoded entry, encoded again, must decode to the same entry.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "ir/base/hash.h"
#include "runtime/jit/kernel_cache.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr size_t kHeaderBytes = 48;  // kernel_cache.cc's layout table
const char kKey[] = "0123456789abcdef";

void PutLittleEndian(std::string& bytes, size_t pos, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) bytes[pos + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void Decode(const std::string& bytes) {
  absl::StatusOr<kiln::CompiledCuda> entry =
      kiln::DecodeCacheEntry(bytes, kKey, "fuzz_kernel", "sm_90a");
  if (!entry.ok()) return;
  const std::string encoded = kiln::EncodeCacheEntry(kKey, *entry);
  absl::StatusOr<kiln::CompiledCuda> again =
      kiln::DecodeCacheEntry(encoded, kKey, "fuzz_kernel", "sm_90a");
  if (!again.ok() || kiln::EncodeCacheEntry(kKey, *again) != encoded) {
    kiln::fuzz::FuzzFail("a decoded cache entry, encoded again, does not decode to the same entry");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Decode(bytes);
  if (bytes.size() < kHeaderBytes) return 0;
  std::memcpy(bytes.data(), "KILNCUB\n", 8);
  PutLittleEndian(bytes, 8, 1, 4);  // kEntryVersion
  std::memcpy(bytes.data() + 16, kKey, 16);
  std::string_view payload = std::string_view(bytes).substr(kHeaderBytes);
  PutLittleEndian(bytes, 32, payload.size(), 8);
  PutLittleEndian(bytes, 40, kiln::Fnv1a64(payload), 8);
  Decode(bytes);
  return 0;
}
