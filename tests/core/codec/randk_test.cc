// random-k: a pinned small case, the sparse draw against Rng::choose, indices shared by the
// clients of a round and fresh each round, summability, the cache, byte counts and refusals.
#include "core/codec/randk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <vector>

#include "core/rng.h"
#include "tests/core/codec/codec_test_util.h"

namespace fedpar {
namespace {
using testing::append_f32;
using testing::awkward_vector;
using testing::contains;
using testing::encode;
using testing::same_bits;

// Rng::choose on 0..d-1 itself, the first k sorted: the definition.
std::vector<uint32_t> by_choose(uint64_t seed, uint64_t round, size_t d, size_t k) {
  std::vector<uint32_t> all(d);
  std::iota(all.begin(), all.end(), 0u);
  Rng rng(seed, "randk", 0, uint32_t(round));
  rng.choose(std::span<uint32_t>(all), k);
  all.resize(k);
  std::sort(all.begin(), all.end());
  return all;
}

TEST(RandK, PinnedSmallCase) {
  // seed 5, round 3, d = 10, ratio 0.3: k = 3; Rng(5, "randk", 0, 3).choose picks {1, 2, 7}
  // (pinned here: a change of the stream or of the draw would move them)
  EXPECT_EQ(by_choose(5, 3, 10, 3), (std::vector<uint32_t>{1, 2, 7}));
  const auto c = make_codec("randk", {.ratio = 0.3, .seed = 5});
  EXPECT_TRUE(c->summable());
  const std::vector<float> v = {0, 1.5f, -2, 3, 4, 5, 6, -7.25f, 8, 9};
  std::vector<uint8_t> want;
  for (float x : {1.5f, -2.0f, -7.25f}) append_f32(want, x);
  EXPECT_EQ(encode(*c, v, {.round = 3, .client = 4}), want);
  std::vector<float> out(10, 1.0f);
  ASSERT_EQ(c->decode(want, {.round = 3}, out), "");
  EXPECT_TRUE(same_bits(out, {0, 1.5f, -2, 0, 0, 0, 0, -7.25f, 0, 0}));
  EXPECT_EQ(randk_count(10, 0.3), 3u);
  EXPECT_EQ(randk_count(10, 0.01), 1u);  // max(1, llround(0.1))
  EXPECT_EQ(randk_count(3, 0.5), 2u);    // llround(1.5): half away from zero
  EXPECT_EQ(randk_count(0, 0.5), 0u);
}

TEST(RandK, TheSparseDrawMakesRngChoosesSwaps) {
  for (size_t d : {1, 2, 17, 1000, 100000, 1000003})
    for (double ratio : {0.0001, 0.001, 0.01, 0.06, 0.07, 0.5, 1.0})
      for (uint64_t round : {0ull, 1ull, (1ull << 32) + 1}) {
        if (d > 100000 && ratio > 0.01) continue;  // quick
        const size_t k = randk_count(d, ratio);
        ASSERT_EQ(randk_indices(9, round, d, k), by_choose(9, round, d, k))
            << d << " " << ratio << " " << round;
      }
}

TEST(RandK, ClientsOfARoundShareTheIndicesAndRoundsDiffer) {
  const auto c = make_codec("randk", {.ratio = 0.01, .seed = 3});
  const size_t d = 20000;
  const std::vector<float> ones(d, 1.0f);
  std::vector<float> a(d), b(d);
  std::vector<uint8_t> bytes;
  round_trip(*c, ones, {.round = 7, .client = 0}, bytes, a);
  round_trip(*c, ones, {.round = 7, .client = 5}, bytes, b);
  EXPECT_TRUE(same_bits(a, b));
  EXPECT_EQ(std::count(a.begin(), a.end(), 1.0f), 200);
  std::set<std::vector<float>> rounds;
  for (uint64_t r = 0; r < 5; ++r) {
    round_trip(*c, ones, {.round = r, .client = 1}, bytes, a);
    rounds.insert(a);
  }
  EXPECT_EQ(rounds.size(), 5u);
  round_trip(*make_codec("randk", {.ratio = 0.01, .seed = 4}), ones, {.round = 7}, bytes, b);
  round_trip(*c, ones, {.round = 7}, bytes, a);
  EXPECT_FALSE(same_bits(a, b));  // another seed, other indices
}

TEST(RandK, DecodedSumIsTheDecodedEncodingOfTheSum) {
  const auto c = make_codec("randk", {.ratio = 0.05});
  const auto x = awkward_vector(3001, 1, false), y = awkward_vector(3001, 2, false);
  std::vector<float> sum(x.size()), dx(x.size()), dy(x.size()), dsum(x.size());
  for (size_t i = 0; i < x.size(); ++i) sum[i] = x[i] + y[i];
  std::vector<uint8_t> b;
  round_trip(*c, x, {.round = 2, .client = 0}, b, dx);
  round_trip(*c, y, {.round = 2, .client = 1}, b, dy);
  round_trip(*c, sum, {.round = 2, .client = 2}, b, dsum);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(dx[i] + dy[i], dsum[i]) << i;
}

TEST(RandK, TheCachedIndicesFollowTheLengthAndTheRound) {
  const auto c = make_codec("randk", {.ratio = 0.1, .seed = 8});
  for (auto [d, round] : {std::pair<size_t, uint64_t>{1000, 1}, {1000, 2}, {500, 2}, {1000, 1}}) {
    const auto v = awkward_vector(d, d + round, false);
    const auto idx = randk_indices(8, round, d, randk_count(d, 0.1));
    std::vector<uint8_t> want;
    for (uint32_t i : idx) append_f32(want, v[i]);
    EXPECT_EQ(encode(*c, v, {.round = round}), want) << d << " " << round;
  }
}

TEST(RandK, EncodedSizeIsFourBytesPerValueAndOtherLengthsAreRefused) {
  const auto c = make_codec("randk", {.ratio = 0.01});
  for (size_t d : {1, 99, 150, 1000}) {
    const auto b = encode(*c, awkward_vector(d, d, true), {});
    EXPECT_EQ(b.size(), 4 * randk_count(d, 0.01)) << d;
  }
  const auto b = encode(*c, awkward_vector(1000, 1, false), {});  // k = 10
  std::vector<float> out(1000);
  auto why = [&](std::vector<uint8_t> x) { return c->decode(x, {}, out); };
  EXPECT_TRUE(contains(why({b.begin(), b.end() - 1}),
                       "randk holds 39 bytes, expected 40 for 10 of 1000 values"));
  auto longer = b;
  longer.push_back(0);
  EXPECT_TRUE(contains(why(longer), "randk holds 41 bytes, expected 40"));
  EXPECT_TRUE(contains(why({}), "randk holds 0 bytes, expected 40"));
  std::vector<float> none;
  EXPECT_EQ(c->decode({}, {}, none), "");
  testing::fuzz_decoder(*c, b, 1000, {}, 200, 4);
}

// randk_unbiased: the same bytes, decoded times float(d / k); over many rounds the decodings
// average to the vector itself, where plain random-k's average to k / d of it.
TEST(RandK, TheUnbiasedFormScalesByDOverKAndAveragesToTheVector) {
  const auto c = make_codec("randk", {.ratio = 0.3, .seed = 5, .randk_unbiased = true});
  const std::vector<float> v = {0, 1.5f, -2, 3, 4, 5, 6, -7.25f, 8, 9};
  const auto bytes = encode(*c, v, {.round = 3});
  EXPECT_EQ(bytes, encode(*make_codec("randk", {.ratio = 0.3, .seed = 5}), v, {.round = 3}));
  const float s = float(10.0 / 3.0);
  EXPECT_EQ(randk_scale(10, 3, true), s);
  EXPECT_EQ(randk_scale(10, 3, false), 1.0f);
  std::vector<float> out(10);
  ASSERT_EQ(c->decode(bytes, {.round = 3}, out), "");
  EXPECT_TRUE(same_bits(out, {0, 1.5f * s, -2 * s, 0, 0, 0, 0, -7.25f * s, 0, 0}));
  std::vector<float> p = v, scratch;
  ASSERT_TRUE(c->subtract_decoded(bytes, {.round = 3}, p, scratch));
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(p[i], v[i] - out[i]) << i;

  const size_t d = 50, rounds = 3000;  // ratio 0.2: k = 10, each index kept in a fifth of rounds
  const auto x = awkward_vector(d, 2, false);
  for (bool unbiased : {true, false}) {
    const auto codec = make_codec("randk", {.ratio = 0.2, .seed = 6, .randk_unbiased = unbiased});
    std::vector<double> mean(d, 0.0);
    std::vector<uint8_t> b;
    std::vector<float> decoded(d);
    for (uint64_t r = 0; r < rounds; ++r) {
      round_trip(*codec, x, {.round = r}, b, decoded);
      for (size_t i = 0; i < d; ++i) mean[i] += decoded[i] / double(rounds);
    }
    // the expected share of x: 1 unbiased, k / d = 0.2 plain; a round's draw has relative standard
    // deviation sqrt(0.8 / 0.2) = 2 per index, so 3000 rounds' mean is within about 0.04
    const double share = unbiased ? 1.0 : 0.2;
    double err = 0, norm = 0;
    for (size_t i = 0; i < d; ++i) {
      err += (mean[i] - share * x[i]) * (mean[i] - share * x[i]);
      norm += share * x[i] * share * x[i];
    }
    EXPECT_LT(std::sqrt(err / norm), 0.06) << (unbiased ? "unbiased" : "plain");
  }
}

}  // namespace
}  // namespace fedpar
