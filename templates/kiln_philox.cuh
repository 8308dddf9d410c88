// kiln_philox.cuh: Philox4x32-10 and the seeded dropout keep rule on the GPU, the twin of
// ir/philox.cc. docs/dropout.md is the contract, bit for bit:
//   group   g = i >> 2, lane = i & 3 (i: the row-major index in the dropout op's output)
//   counter = (lo32(g), hi32(g), lo32(offset), hi32(offset)), key = (lo32(seed), hi32(seed))
//   keep(i) = Philox4x32_10(counter, key)[lane] >= threshold
//   threshold = (uint32) min(floor(p * 2^32), 2^32 - 1), computed on the host in double
//   p == 0 keeps everything, p == 1 drops everything (the codegen passes the two flags)
//   y = keep ? (float)x * s : 0 (a select: a dropped NaN gives +0), s = 1.0f / (1.0f - (float)p)
// The threshold and s are compile-time literals produced by the host functions
// DropoutThreshold / DropoutScale (ir/philox.h), so the two sides cannot drift apart.
#pragma once

namespace kiln {

// Round constants (Salmon et al., SC'11; Random123): multipliers and Weyl key increments.
constexpr unsigned int kPhiloxM0 = 0xD2511F53u;
constexpr unsigned int kPhiloxM1 = 0xCD9E8D57u;
constexpr unsigned int kPhiloxW0 = 0x9E3779B9u;
constexpr unsigned int kPhiloxW1 = 0xBB67AE85u;

// Four 32-bit words.
struct Philox4 {
  unsigned int w[4];
};

// One round: (hi0, lo0) = M0 * c0; (hi1, lo1) = M1 * c2;
//            c' = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0).
__device__ __forceinline__ Philox4 PhiloxRound(const Philox4& c, unsigned int k0, unsigned int k1) {
  const unsigned int hi0 = __umulhi(kPhiloxM0, c.w[0]), lo0 = kPhiloxM0 * c.w[0];
  const unsigned int hi1 = __umulhi(kPhiloxM1, c.w[2]), lo1 = kPhiloxM1 * c.w[2];
  Philox4 r;
  r.w[0] = hi1 ^ c.w[1] ^ k0;
  r.w[1] = lo1;
  r.w[2] = hi0 ^ c.w[3] ^ k1;
  r.w[3] = lo0;
  return r;
}

// Philox4x32 with 10 rounds; the key is bumped (k0 += W0, k1 += W1) before rounds 2..10.
__device__ __forceinline__ Philox4 Philox4x32_10(Philox4 c, unsigned int k0, unsigned int k1) {
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    c = PhiloxRound(c, k0, k1);
  }
  return c;
}

// The four words that serve elements 4g .. 4g+3 of a dropout op.
__device__ __forceinline__ Philox4 DropoutWords(unsigned long long seed, unsigned long long offset,
                                                unsigned long long group) {
  Philox4 c;
  c.w[0] = static_cast<unsigned int>(group);
  c.w[1] = static_cast<unsigned int>(group >> 32);
  c.w[2] = static_cast<unsigned int>(offset);
  c.w[3] = static_cast<unsigned int>(offset >> 32);
  return Philox4x32_10(c, static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32));
}

// Word `lane` (0..3) of a call: the one that serves element 4 g + lane.
__device__ __forceinline__ unsigned int PhiloxWord(const Philox4& w, unsigned int lane) {
  return lane == 0 ? w.w[0] : lane == 1 ? w.w[1] : lane == 2 ? w.w[2] : w.w[3];
}

// Whether logical element i is kept. kAll: p == 0 (keep all); kNone: p == 1 (drop all);
// otherwise word (i & 3) of group (i >> 2) compared with the threshold.
__device__ __forceinline__ bool DropoutKeep(unsigned long long seed, unsigned long long offset,
                                            unsigned long long i, unsigned int threshold,
                                            bool keep_all, bool drop_all) {
  if (drop_all) return false;
  if (keep_all) return true;
  return PhiloxWord(DropoutWords(seed, offset, i >> 2), static_cast<unsigned int>(i & 3)) >= threshold;
}

// y = keep ? x * s : +0 (a select, so a dropped NaN or inf gives +0).
__device__ __forceinline__ float DropoutApply(float x, bool keep, float scale) {
  return keep ? x * scale : 0.0f;
}

}  // namespace kiln
