// Checks that Philox4x32_10 reproduces the published Random123 known-answer vectors and that
// the dropout keep rule (threshold, lanes, counter/key layout, p edge cases) is exactly the
// one docs/dropout.md specifies.
#include "ir/philox.h"

#include <cmath>

#include "gtest/gtest.h"

namespace kiln {
namespace {

using Words = std::array<uint32_t, 4>;

// Random123 known-answer vectors, rows "philox4x32 10" of tests/kat_vectors in the Random123
// distribution (D. E. Shaw Research), as reproduced verbatim in
// DEShawResearch/Random123-Boost, libs/random/test/test_philox.cpp (commit 916db91a,
// BOOST_AUTO_TEST_CASE(test_kat_philox4x32)): "counter[4] key[2] -> output[4]".
TEST(Philox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(Philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// The counter is (lo32(g), hi32(g), lo32(offset), hi32(offset)), the key (lo32(seed), hi32(seed)).
TEST(Philox, DropoutWordsUseTheDocumentedCounterAndKeyLayout) {
  const uint64_t seed = 0x0123456789abcdefull, offset = 0xfedcba9876543210ull, group = 0x1122334455ull;
  EXPECT_EQ(DropoutRandomWords(seed, offset, group),
            Philox4x32_10({0x22334455u, 0x11u, 0x76543210u, 0xfedcba98u}, {0x89abcdefu, 0x01234567u}));
  // seed = offset = group = 0 is the first KAT vector.
  EXPECT_EQ(DropoutRandomWords(0, 0, 0), (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(Philox, ThresholdIsFloorOfPTimes2To32Saturated) {
  EXPECT_EQ(DropoutThreshold(0.0), 0u);
  EXPECT_EQ(DropoutThreshold(0.5), 0x80000000u);
  EXPECT_EQ(DropoutThreshold(0.25), 0x40000000u);
  EXPECT_EQ(DropoutThreshold(0.1), 429496729u);  // floor(0.1 * 4294967296) = floor(429496729.6)
  EXPECT_EQ(DropoutThreshold(1.0), 0xffffffffu);
  EXPECT_EQ(DropoutThreshold(std::nextafter(1.0, 0.0)), 0xffffffffu);
  EXPECT_EQ(DropoutThreshold(1.0 / 4294967296.0), 1u);
}

// Element i uses lane i & 3 of group i >> 2 and is kept iff that word >= the threshold.
TEST(Philox, KeepRuleUsesLaneOfGroup) {
  const uint64_t seed = 42, offset = 7;
  for (double p : {0.1, 0.5, 0.9}) {
    const uint32_t threshold = DropoutThreshold(p);
    for (uint64_t i = 0; i < 4000; ++i) {
      const uint32_t word = DropoutRandomWords(seed, offset, i >> 2)[i & 3];
      ASSERT_EQ(DropoutKeep(seed, offset, i, p), word >= threshold) << "i = " << i << " p = " << p;
    }
  }
  // Large indices use the high word of the group.
  const uint64_t big = (uint64_t{5} << 34) + 6;
  EXPECT_EQ(DropoutKeep(seed, offset, big, 0.5),
            Philox4x32_10({1, 5, 7, 0}, {42, 0})[2] >= 0x80000000u);
}

TEST(Philox, ProbabilityZeroKeepsAllAndOneDropsAll) {
  for (uint64_t i = 0; i < 1000; ++i) {
    EXPECT_TRUE(DropoutKeep(3, 4, i, 0.0));
    EXPECT_FALSE(DropoutKeep(3, 4, i, 1.0));
  }
}

TEST(Philox, ScaleIsComputedInFloat) {
  EXPECT_EQ(DropoutScale(0.0), 1.0f);
  EXPECT_EQ(DropoutScale(0.5), 2.0f);
  EXPECT_EQ(DropoutScale(0.1), 1.0f / (1.0f - 0.1f));
  EXPECT_NE(static_cast<double>(DropoutScale(0.1)), 1.0 / 0.9);  // float, not double
}

}  // namespace
}  // namespace kiln
