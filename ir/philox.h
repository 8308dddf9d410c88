// Philox4x32-10 and the seeded dropout keep rule, as plain host functions. This is the CPU
// half of the dropout contract in docs/dropout.md; the GPU twin (templates/) implements the
// same formulas, so a mask is a pure function of (p, seed, offset, element index) and is
// never stored: dropout_grad regenerates the forward's mask from the same (p, seed, offset).
#ifndef KILN_IR_PHILOX_H_
#define KILN_IR_PHILOX_H_

#include <array>
#include <cstdint>

namespace kiln {

// Philox round constants (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC'11; the Random123 library): multipliers and the Weyl key increments.
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

// Philox4x32 with 10 rounds. One round, with (hi, lo) the high and low 32 bits of a 32x32->64
// bit product:
//   (hi0, lo0) = M0 * c0;  (hi1, lo1) = M1 * c2;
//   c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
// and between rounds the key is bumped: k0 += W0, k1 += W1 (mod 2^32).
std::array<uint32_t, 4> Philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);

// The four random words that serve elements 4g .. 4g+3 of a dropout op:
// Philox4x32_10((lo32(g), hi32(g), lo32(offset), hi32(offset)), (lo32(seed), hi32(seed))).
// Element i uses word i & 3 of group g = i >> 2.
std::array<uint32_t, 4> DropoutRandomWords(uint64_t seed, uint64_t offset, uint64_t group);

// The keep threshold for drop probability p in [0, 1]:
// (uint32) min(floor(p * 2^32), 2^32 - 1). An element is kept iff its word >= threshold
// (so p == 0 keeps everything); p == 1 is special-cased by DropoutKeep to drop everything.
uint32_t DropoutThreshold(double p);

// Whether logical element i (the row-major index in the op's output) of a dropout op with
// drop probability p, seed and offset is kept. p <= 0 keeps all, p >= 1 drops all.
bool DropoutKeep(uint64_t seed, uint64_t offset, uint64_t i, double p);

// The factor applied to kept elements, computed in float so the GPU can match it bit for
// bit: 1.0f / (1.0f - (float)p). Only meaningful for p < 1.
float DropoutScale(double p);

}  // namespace kiln

#endif  // KILN_IR_PHILOX_H_
