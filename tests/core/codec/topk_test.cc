// top-k: hand-computed encodings (ties, buckets, NaN), the selection against a brute-force sort
// for many sizes, buckets, ratios and tie patterns (both selection methods), byte counts,
// determinism, and refusals of damaged encodings.
#include "core/codec/topk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/codec/wire_bytes.h"
#include "core/rng.h"
#include "tests/core/codec/codec_test_util.h"

namespace fedpar {
namespace {
using testing::append_f32;
using testing::awkward_vector;
using testing::bits_of;
using testing::contains;
using testing::encode;
using testing::same_bits;

TEST(TopK, HandComputedTiesGoToTheLowerIndex) {
  const std::vector<float> v = {0.5f, -3.0f, 1.0f, 3.0f, 0.0f};
  // ratio 0.4: k = 2, the two magnitudes 3: indices 1 and 3 (gaps 1, 2)
  std::vector<uint8_t> want = {0x02, 0x01, 0x02};
  append_f32(want, -3.0f);
  append_f32(want, 3.0f);
  const auto c = make_codec("topk", {.ratio = 0.4});
  EXPECT_EQ(encode(*c, v), want);
  std::vector<float> out(5, 9.0f);  // the decoder zeroes what is not sent
  ASSERT_EQ(c->decode(want, {}, out), "");
  EXPECT_TRUE(same_bits(out, {0.0f, -3.0f, 0.0f, 3.0f, 0.0f}));
  // ratio 0.2: k = 1; |-3| ties |3|: the lower index wins
  std::vector<uint8_t> one = {0x01, 0x01};
  append_f32(one, -3.0f);
  EXPECT_EQ(encode(*make_codec("topk", {.ratio = 0.2}), v), one);
}

TEST(TopK, HandComputedBucketsWithAShortLastBucket) {
  // buckets of 3: {1, -5, 2} {0.5, 0.25, -0.125} {7}; ratio 0.5: k = llround(1.5) = 2, 2, and
  // max(1, llround(0.5)) = 1 for the last one
  const std::vector<float> v = {1.0f, -5.0f, 2.0f, 0.5f, 0.25f, -0.125f, 7.0f};
  const auto c = make_codec("topk", {.ratio = 0.5, .topk_bucket = 3});
  std::vector<uint8_t> want = {0x05, 0x01, 0x01, 0x01, 0x01, 0x02};  // indices 1 2 3 4 6
  for (float x : {-5.0f, 2.0f, 0.5f, 0.25f, 7.0f}) append_f32(want, x);
  EXPECT_EQ(encode(*c, v), want);
  std::vector<float> out(7);
  ASSERT_EQ(c->decode(want, {}, out), "");
  EXPECT_TRUE(same_bits(out, {0.0f, -5.0f, 2.0f, 0.5f, 0.25f, 0.0f, 7.0f}));
  EXPECT_EQ(topk_bucket_k(3, 0.5), 2u);
  EXPECT_EQ(topk_bucket_k(1, 0.5), 1u);
  EXPECT_EQ(topk_bucket_k(1000, 0.0001), 1u);
  EXPECT_EQ(topk_bucket_k(1000, 0.0015), 2u);  // llround(1.5): half away from zero
  EXPECT_EQ(topk_total(7, 0.5, 3), 5u);
}

TEST(TopK, NanIsTheLargestMagnitudeAndTravels) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto c = make_codec("topk", {.ratio = 0.34});  // k = 1 of 3
  const std::vector<float> v = {std::numeric_limits<float>::infinity(), -nan, 2.0f};
  std::vector<float> out(3);
  std::vector<uint8_t> b;
  round_trip(*c, v, {}, b, out);
  EXPECT_EQ(b[1], 0x01);  // index 1
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[0], 0.0f);
}

// The k_b largest magnitudes of each bucket by a stable sort (ties: lower index first).
std::vector<uint8_t> brute_force(const std::vector<float>& v, double ratio, uint32_t bucket) {
  std::vector<uint32_t> all;
  const size_t b = bucket ? bucket : std::max<size_t>(v.size(), 1);
  for (size_t start = 0; start < v.size(); start += b) {
    const size_t len = std::min(b, v.size() - start);
    const size_t k = std::min(len, size_t(std::max(1LL, std::llround(ratio * double(len)))));
    std::vector<uint32_t> idx(len);
    std::iota(idx.begin(), idx.end(), uint32_t(start));
    std::stable_sort(idx.begin(), idx.end(), [&](uint32_t x, uint32_t y) {
      return (bits_of(v[x]) & 0x7FFFFFFF) > (bits_of(v[y]) & 0x7FFFFFFF);
    });
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    all.insert(all.end(), idx.begin(), idx.end());
  }
  std::vector<uint8_t> out;
  put_varint(out, all.size());
  for (size_t j = 0; j < all.size(); ++j) put_varint(out, all[j] - (j ? all[j - 1] : 0));
  for (uint32_t i : all) append_f32(out, v[i]);
  return out;
}

std::vector<float> tie_heavy(size_t n, uint64_t seed) {
  Rng rng(seed, "ties");
  std::vector<float> v(n);
  for (float& x : v) x = float(int(rng.below(5)) - 2) * 0.5f;  // -1 -0.5 0 0.5 1
  return v;
}

TEST(TopK, KeepsExactlyTheKLargestPerBucketAsABruteForceSortDoes) {
  int cases = 0;
  for (size_t d : {1, 2, 5, 100, 4095, 4096, 5000, 70000})
    for (uint32_t bucket : {0u, 1u, 64u, 333u, 4096u, 5000u})
      for (double ratio : {0.001, 0.01, 0.1, 0.5, 1.0})
        for (int kind = 0; kind < 3; ++kind) {
          if (d == 70000 && bucket < 333 && ratio != 0.01) continue;  // keep it quick
          const std::vector<float> v = kind == 0   ? awkward_vector(d, d + bucket, true)
                                       : kind == 1 ? tie_heavy(d, d * 3 + bucket)
                                                   : std::vector<float>(d, -0.25f);
          const auto c = make_codec("topk", {.ratio = ratio, .topk_bucket = bucket});
          const auto b = encode(*c, v);
          ASSERT_EQ(b, brute_force(v, ratio, bucket))
              << "d " << d << " bucket " << bucket << " ratio " << ratio << " kind " << kind;
          std::vector<float> out(d);
          ASSERT_EQ(c->decode(b, {}, out), "");
          ++cases;
        }
  EXPECT_GT(cases, 500);
}

TEST(TopK, BothSelectionMethodsAgreeWithTheSort) {
  for (size_t n : {2, 9, 100, 3000, 70000})
    for (int kind = 0; kind < 3; ++kind) {
      const std::vector<float> v = kind == 0   ? awkward_vector(n, n, true)
                                   : kind == 1 ? tie_heavy(n, n)
                                               : std::vector<float>(n, 0.0f);
      for (size_t k : {size_t{1}, n / 3 + 1, n - 1, n}) {
        const auto want_bytes = brute_force(v, double(k) / double(n), 0);
        for (TopkMethod m : {TopkMethod::kRadix, TopkMethod::kSort}) {
          std::vector<uint32_t> idx;
          topk_select(v, k, idx, m);
          ASSERT_EQ(idx.size(), k);
          std::vector<uint8_t> bytes;
          put_varint(bytes, idx.size());
          for (size_t j = 0; j < idx.size(); ++j) put_varint(bytes, idx[j] - (j ? idx[j - 1] : 0));
          for (uint32_t i : idx) append_f32(bytes, v[i]);
          ASSERT_EQ(bytes, want_bytes) << "n " << n << " k " << k << " kind " << kind;
        }
      }
    }
}

TEST(TopK, EncodedSizeIsTheCountTheGapsAndFourBytesPerValue) {
  for (size_t d : {0, 1, 1000, 123457})
    for (uint32_t bucket : {0u, 100u}) {
      const auto v = awkward_vector(d, d, false);
      const auto c = make_codec("topk", {.ratio = 0.01, .topk_bucket = bucket});
      const auto b = encode(*c, v);
      std::vector<float> out(d);
      ASSERT_EQ(c->decode(b, {}, out), "");
      // recover the indices from the bytes themselves, then recount
      ByteReader r(b);
      uint64_t count = 0, at = 0, want = 0;
      ASSERT_TRUE(r.varint(count));
      EXPECT_EQ(count, topk_total(d, 0.01, bucket));
      want += varint_bytes(count);
      for (uint64_t j = 0; j < count; ++j) {
        uint64_t gap = 0;
        ASSERT_TRUE(r.varint(gap));
        at += gap;
        want += varint_bytes(gap);
        EXPECT_EQ(bits_of(out[at]), bits_of(v[at]));
      }
      want += 4 * count;
      EXPECT_EQ(b.size(), want) << d;
      EXPECT_EQ(encode(*c, v), b);  // deterministic
    }
}

TEST(TopK, RefusesDamagedEncodingsWithTheReason) {
  const auto c = make_codec("topk", {.ratio = 0.4});
  const std::vector<float> v = {0.5f, -3.0f, 1.0f, 3.0f, 0.0f};
  const auto good = encode(*c, v);  // 02 01 02, then -3 and 3
  ASSERT_EQ(good.size(), 11u);
  std::vector<float> out(5);
  auto why = [&](std::vector<uint8_t> b) { return c->decode(b, {}, out); };
  auto head = [&](std::vector<uint8_t> h) {  // h, then the two values
    h.insert(h.end(), good.begin() + 3, good.end());
    return h;
  };
  EXPECT_EQ(why(good), "");
  EXPECT_TRUE(contains(why({good.begin(), good.end() - 1}),
                       "topk holds 10 bytes, expected 11 for 2 indices"));
  auto longer = good;
  longer.push_back(0);
  EXPECT_TRUE(contains(why(longer), "topk holds 12 bytes, expected 11 for 2 indices"));
  EXPECT_TRUE(contains(why({}), "topk: count: the bytes end inside a varint"));
  EXPECT_TRUE(contains(why({0x02, 0x01}), "topk: index 1 of 2: the bytes end inside a varint"));
  EXPECT_TRUE(contains(why(head({0x03, 0x01, 0x02})), "topk holds a count of 3, expected 2"));
  EXPECT_TRUE(contains(why(head({0x01, 0x01})), "topk holds a count of 1, expected 2 for 5"));
  EXPECT_TRUE(contains(why(head({0x02, 0x05, 0x02})), "topk: index 5 is past the 5 values"));
  EXPECT_TRUE(contains(why(head({0x02, 0x01, 0x04})), "topk: index gap 4 after 1 is past the 5"));
  EXPECT_TRUE(contains(why(head({0x02, 0x01, 0x00})), "topk: index 1 after 1: indices must"));
  EXPECT_TRUE(contains(why(head({0x82, 0x00, 0x01, 0x02})),
                       "topk: count: an over-long varint (a needless zero group)"));
  EXPECT_TRUE(contains(why(head({0x02, 0x81, 0x00, 0x02})), "topk: index 0 of 2: an over-long"));
  std::vector<uint8_t> huge = {0x02, 0x01};
  huge.insert(huge.end(), 9, 0xFF);
  huge.push_back(0x7F);  // bits past 64
  EXPECT_TRUE(contains(why(head(huge)), "topk: index 1 of 2: a varint longer than 64 bits"));
  std::vector<uint8_t> gap_max = {0x02, 0x01};
  gap_max.insert(gap_max.end(), 9, 0xFF);
  gap_max.push_back(0x01);  // 2^64 - 1: must not wrap around to a small index
  EXPECT_TRUE(contains(why(head(gap_max)), "is past the 5 values"));

  // buckets of 3, ratio 0.34: one index per bucket
  const auto cb = make_codec("topk", {.ratio = 0.34, .topk_bucket = 3});
  std::vector<float> six(6);
  auto bwhy = [&](std::vector<uint8_t> h) {
    append_f32(h, 1.0f);
    append_f32(h, 2.0f);
    return cb->decode(h, {}, six);
  };
  EXPECT_EQ(bwhy({0x02, 0x00, 0x03}), "");
  EXPECT_TRUE(contains(bwhy({0x02, 0x00, 0x01}), "topk: bucket 0 holds more than 1 indices"));
  EXPECT_TRUE(contains(bwhy({0x02, 0x03, 0x01}), "topk: bucket 0 holds 0 indices, expected 1"));
  std::vector<float> nine(9);
  std::vector<uint8_t> skip = {0x03, 0x00, 0x06, 0x01};
  for (int k = 0; k < 3; ++k) append_f32(skip, 1.0f);
  EXPECT_TRUE(contains(cb->decode(skip, {}, nine), "topk: bucket 1 holds 0 indices, expected 1"));
}

TEST(TopK, DamagedAndRandomBytesNeverCrashTheDecoder) {
  for (uint32_t bucket : {0u, 7u}) {
    const auto c = make_codec("topk", {.ratio = 0.1, .topk_bucket = bucket});
    for (size_t d : {0, 1, 10, 300, 5000}) {
      const auto v = awkward_vector(d, d + bucket, true);
      testing::fuzz_decoder(*c, encode(*c, v), d, {}, 400, d + 1);
    }
  }
}

}  // namespace
}  // namespace fedpar
