// Philox against the published known-answer vectors, and the stream properties fedpar relies on.
#include "core/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace fedpar {
namespace {

TEST(Philox, KnownAnswerVectors) {  // Random123's kat_vectors for philox4x32_10
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (A4{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                          {0xffffffffu, 0xffffffffu}),
            (A4{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u}),
            (A4{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Rng, GoldenStreamBytes) {  // pins the key derivation: the same bytes on every machine
  Rng r(42, "init", 3, 7);
  const std::vector<uint32_t> got = {r.next_u32(), r.next_u32(), r.next_u32(), r.next_u32(),
                                     r.next_u32()};
  EXPECT_EQ(got, (std::vector<uint32_t>{0x30149b55u, 0x24ba0a22u, 0x8c70ff88u, 0xd656dc5au,
                                        0xb0c06423u}));
  EXPECT_EQ(fnv1a64("init"), 0xf5d2afc57ab57213ull);
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafull);
}

TEST(Rng, DistinctTuplesGiveDistinctStreams) {
  auto first = [](Rng r) { return r.next_u64(); };
  const uint64_t base = first(Rng(1, "init", 0, 0));
  EXPECT_NE(base, first(Rng(2, "init", 0, 0)));
  EXPECT_NE(base, first(Rng(1, "shuffle", 0, 0)));
  EXPECT_NE(base, first(Rng(1, "init", 1, 0)));
  EXPECT_NE(base, first(Rng(1, "init", 0, 1)));
  EXPECT_EQ(base, first(Rng(1, "init", 0, 0)));
}

TEST(Rng, UniformRangeAndMean) {
  Rng r(7, "test");
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const float u = r.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
}

TEST(Rng, NormalMoments) {
  Rng r(7, "test");
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double z = r.normal();
    s += z;
    s2 += z * z;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
}

TEST(Rng, BelowIsUnbiasedAndInRange) {
  Rng r(3, "test");
  std::vector<int> counts(7, 0);
  const int n = 70000;
  for (int i = 0; i < n; ++i) {
    const uint64_t v = r.below(7);
    ASSERT_LT(v, 7u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, n / 7, 400);  // ~4.4 sigma
  EXPECT_EQ(r.below(1), 0u);
  EXPECT_EQ(r.below(0), 0u);
}

TEST(Rng, ShuffleIsAPermutationAndDeterministic) {
  std::vector<uint32_t> a(1000), b(1000);
  std::iota(a.begin(), a.end(), 0u);
  b = a;
  Rng(5, "shuffle").shuffle(std::span(a));
  Rng(5, "shuffle").shuffle(std::span(b));
  EXPECT_EQ(a, b);
  std::vector<uint32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  int fixed = 0;
  for (uint32_t i = 0; i < 1000; ++i) fixed += a[i] == i;
  EXPECT_LT(fixed, 10);  // a real shuffle moves almost everything
}

}  // namespace
}  // namespace fedpar
