// Fnv1a64: the one content hash of kiln. Stable across processes, platforms and builds, so it
// names kernels, keys the CUBIN cache and checks artifacts. Not cryptographic: it detects
// accidents (a truncated or stale file), not adversaries.
#ifndef KILN_IR_BASE_HASH_H_
#define KILN_IR_BASE_HASH_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace kiln {

inline uint64_t Fnv1a64(std::string_view text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// 16 lowercase hex digits.
inline std::string Hex64(uint64_t value) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(value));
  return hex;
}

}  // namespace kiln

#endif  // KILN_IR_BASE_HASH_H_
