// Philox4x32-10 and the dropout keep rule (docs/dropout.md). Kept dependency-free and
// branch-light so that the GPU twin can be checked against it formula by formula.
#include "ir/philox.h"

#include <cmath>

namespace kiln {
namespace {

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t product = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

inline std::array<uint32_t, 4> Round(const std::array<uint32_t, 4>& c,
                                     const std::array<uint32_t, 2>& k) {
  uint32_t hi0, lo0, hi1, lo1;
  MulHiLo(kPhiloxM0, c[0], &hi0, &lo0);
  MulHiLo(kPhiloxM1, c[2], &hi1, &lo1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

}  // namespace

std::array<uint32_t, 4> Philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    ctr = Round(ctr, key);
  }
  return ctr;
}

std::array<uint32_t, 4> DropoutRandomWords(uint64_t seed, uint64_t offset, uint64_t group) {
  return Philox4x32_10({static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32),
                        static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

uint32_t DropoutThreshold(double p) {
  if (!(p > 0.0)) return 0;  // also NaN: keep everything
  double scaled = std::floor(p * 4294967296.0);  // p * 2^32, exact in double
  if (scaled >= 4294967295.0) return 0xFFFFFFFFu;
  return static_cast<uint32_t>(scaled);
}

bool DropoutKeep(uint64_t seed, uint64_t offset, uint64_t i, double p) {
  if (p >= 1.0) return false;
  if (!(p > 0.0)) return true;
  uint32_t word = DropoutRandomWords(seed, offset, i >> 2)[i & 3];
  return word >= DropoutThreshold(p);
}

float DropoutScale(double p) { return 1.0f / (1.0f - static_cast<float>(p)); }

}  // namespace kiln
