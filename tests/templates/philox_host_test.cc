// templates/kiln_philox.cuh compiled as host C++ (with shims for __device__ and __umulhi)
// agrees word for word with the CPU twin ir/philox.cc and the known answers of
// docs/dropout.md, so the GPU keep rule is the interpreter's. (kiln_philox.cuh includes no
// CUDA header on purpose; tests/codegen/dropout_gpu_test.cc checks the formulas on the GPU.)
#include <cstdint>

#define __device__
#define __forceinline__ inline
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned int>((static_cast<uint64_t>(a) * b) >> 32);
}
// In its own namespace: the template's kiln:: names would clash with ir/philox.h's.
namespace gpu_twin {
#include "templates/kiln_philox.cuh"
}  // namespace gpu_twin

#include <cmath>

#include "gtest/gtest.h"
#include "ir/philox.h"

namespace kiln {
namespace {

using gpu_twin::kiln::Philox4;
using gpu_twin::kiln::Philox4x32_10;
namespace gpu = gpu_twin::kiln;

TEST(PhiloxTemplateHostTest, KnownAnswers) {
  Philox4 c{{0, 0, 0, 0}};
  Philox4 r = Philox4x32_10(c, 0, 0);
  EXPECT_EQ(r.w[0], 0x6627e8d5u);
  EXPECT_EQ(r.w[1], 0xe169c58du);
  EXPECT_EQ(r.w[2], 0xbc57ac4cu);
  EXPECT_EQ(r.w[3], 0x9b00dbd8u);
  c = Philox4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
  r = Philox4x32_10(c, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(r.w[0], 0xd16cfe09u);
  EXPECT_EQ(r.w[3], 0x24126ea1u);
}

TEST(PhiloxTemplateHostTest, KeepRuleMatchesTheInterpreterTwin) {
  for (double p : {0.1, 0.5, 0.9, 1e-9}) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{1234}, ~uint64_t{0}}) {
      for (uint64_t offset : {uint64_t{0}, uint64_t{7}, uint64_t{1} << 40}) {
        const uint32_t threshold = DropoutThreshold(p);
        for (uint64_t i = 0; i < 257; ++i) {
          const uint64_t big = i + (uint64_t{1} << 33);  // groups above 2^32 use counter word 1
          for (uint64_t idx : {i, big}) {
            ASSERT_EQ(gpu::DropoutKeep(seed, offset, idx, threshold, false, false),
                      ::kiln::DropoutKeep(seed, offset, idx, p))
                << "p=" << p << " seed=" << seed << " offset=" << offset << " i=" << idx;
          }
        }
      }
    }
  }
  EXPECT_TRUE(gpu::DropoutKeep(1, 2, 3, 0u, true, false));
  EXPECT_FALSE(gpu::DropoutKeep(1, 2, 3, 0u, false, true));
  const float s = DropoutScale(0.1);
  EXPECT_EQ(gpu::DropoutApply(2.0f, true, s), 2.0f * s);
  EXPECT_EQ(gpu::DropoutApply(NAN, false, s), 0.0f);
}

}  // namespace
}  // namespace kiln
