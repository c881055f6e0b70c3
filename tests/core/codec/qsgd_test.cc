// QSGD: a hand-computed encoding, the order of the random draws, the vectorized codec against the
// plain reference (bytes, floats and refusals), unbiasedness and the variance bound over many
// draws, byte counts, determinism, and refusals of damaged encodings.
#include "core/codec/qsgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

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

TEST(Qsgd, HandComputedBucketsZeroBucketAndTail) {
  // bucket 4, s = 4: 4 bits per value (sign in bit 0, level in bits 1-3), two values per byte.
  // Bucket 0: norm 1, a = 0.5 * 4 = 2 exactly, so every level is 2 whatever the draw.
  // Bucket 1: norm 0: every field 0 (-0 is not < 0). Bucket 2: one value, a = s exactly.
  const auto c = make_codec("qsgd", {.levels = 4, .bucket = 4});
  const std::vector<float> v = {0.5f, -0.5f, 0.5f, -0.5f, 0.0f, -0.0f, 0.0f, 0.0f, -3.0f};
  std::vector<uint8_t> want;
  append_f32(want, 1.0f);
  want.insert(want.end(), {0x54, 0x54});  // fields 4 (+, level 2) and 5 (-, level 2)
  append_f32(want, 0.0f);
  want.insert(want.end(), {0x00, 0x00});
  append_f32(want, 3.0f);
  want.push_back(0x09);  // field 9 (-, level 4), then 4 zero padding bits
  EXPECT_EQ(encode(*c, v), want);
  std::vector<float> out(v.size());
  ASSERT_EQ(c->decode(want, {}, out), "");
  EXPECT_TRUE(same_bits(out, {0.5f, -0.5f, 0.5f, -0.5f, 0.0f, 0.0f, 0.0f, 0.0f, -3.0f}));

  // s = 1: 2 bits per value; a zero level with the sign bit set decodes to +0
  const auto c1 = make_codec("qsgd", {.levels = 1, .bucket = 8});
  std::vector<uint8_t> b1;
  append_f32(b1, 2.0f);
  b1.push_back(0b01'00'11'01);  // values 0-3: (-,0) (-,1) (+,0) (-,0)
  std::vector<float> out1(4);
  ASSERT_EQ(c1->decode(b1, {}, out1), "");
  EXPECT_TRUE(same_bits(out1, {0.0f, -2.0f, 0.0f, 0.0f}));
}

TEST(Qsgd, ValueIDrawsBytes2iAnd2iPlus1OfTheMessagesStream) {
  // Buckets of 3 (not a multiple of 8 or of Philox's 4 words), s = 1: level = floor(a) + (u < a -
  // floor(a)) with u = U / 2^16, U the little-endian 16-bit integer at bytes 2i, 2i + 1 of the
  // stream Rng(seed, "qsgd", client, round), word j of which is bytes 4j .. 4j + 3 (so value 2j
  // takes word j's low half, value 2j + 1 its high half).
  const CodecParams p{.levels = 1, .bucket = 3, .seed = 77};
  const auto c = make_codec("qsgd", p);
  const std::vector<float> v = awkward_vector(200, 5, false);
  for (const CodecContext ctx : {CodecContext{.round = 9, .client = 2},
                                 CodecContext{.round = (uint64_t{1} << 32) + 9, .client = 2}}) {
    const auto bytes = encode(*c, v, ctx);
    Rng rng(77, "qsgd", 2, 9);  // the round's low 32 bits
    std::vector<uint8_t> stream;
    while (stream.size() < 2 * v.size()) {
      const uint32_t word = rng.next_u32();
      for (int k = 0; k < 4; ++k) stream.push_back(uint8_t(word >> (8 * k)));
    }
    size_t at = 0;
    for (size_t start = 0; start < v.size(); start += 3) {
      const size_t len = std::min<size_t>(3, v.size() - start);
      const float n = qsgd_norm(std::span(v).subspan(start, len));
      ASSERT_EQ(bits_of(n),
                bits_of(testing::float_of(bytes[at] | bytes[at + 1] << 8 | bytes[at + 2] << 16 |
                                          uint32_t(bytes[at + 3]) << 24)));
      at += 4;
      const uint32_t fields = bytes[at];  // 3 values x 2 bits: one byte
      for (size_t i = 0; i < len; ++i) {
        const uint8_t* r = &stream[2 * (start + i)];
        const float u = float(r[0] | r[1] << 8) * 0x1p-16f;
        const float a = n == 0 ? 0 : std::fabs(v[start + i]) / n * 1.0f;
        const uint32_t level = uint32_t(std::floor(a)) + (u < a - std::floor(a));
        const uint32_t field = (fields >> (2 * i)) & 3;
        ASSERT_EQ(field >> 1, std::min(level, 1u)) << "value " << start + i;
        ASSERT_EQ(field & 1, uint32_t(v[start + i] < 0)) << "value " << start + i;
      }
      at += 1;
    }
  }
}

TEST(Qsgd, TheVectorizedStreamIsPhiloxAtAnyBlock) {
  // Word j of the stream is word j % 4 of Philox4x32-10 with counter {block low, block high,
  // client, round} (block = j / 4) and Rng's key; value i draws bytes 2i and 2i + 1.
  const CodecParams p{.seed = 12};
  const CodecContext ctx{.round = 6, .client = 3};
  const uint64_t k = splitmix64(splitmix64(12) ^ fnv1a64("qsgd"));
  auto byte_at = [&](uint64_t byte) {
    const uint64_t block = byte / 16;
    const auto w = philox4x32_10({uint32_t(block), uint32_t(block >> 32), 3, 6},
                                 {uint32_t(k), uint32_t(k >> 32)});
    return uint8_t(w[byte % 16 / 4] >> (8 * (byte % 4)));
  };
  Rng rng(12, "qsgd", 3, 6);  // the same stream from its start
  std::vector<uint8_t> start;
  while (start.size() < 2 * 5000) {
    const uint32_t w = rng.next_u32();
    for (int b = 0; b < 4; ++b) start.push_back(uint8_t(w >> (8 * b)));
  }
  start.resize(2 * 5000);
  EXPECT_EQ(qsgd_draw_bytes(p, ctx, 0, 5000), start);
  const uint64_t wrap = (uint64_t{1} << 32) * 16 / 2;  // the first value of block 2^32
  for (uint64_t first : {uint64_t{7}, uint64_t{12345}, wrap - 100, wrap - 37, wrap + 5}) {
    const auto got = qsgd_draw_bytes(p, ctx, first, 300);
    for (size_t j = 0; j < got.size(); ++j)
      ASSERT_EQ(got[j], byte_at(2 * first + j)) << "value " << first << " + byte " << j;
  }
}

TEST(Qsgd, TheCodecGivesTheReferencesBytesAndFloats) {
  int cases = 0;
  for (size_t d : {0, 1, 7, 8, 9, 63, 64, 65, 513, 1000, 4099, 70000})
    for (uint32_t bucket : {1u, 3u, 8u, 100u, 512u, 1000u})
      for (uint32_t s : {1u, 2u, 3u, 4u, 7u, 8u, 15u, 64u, 127u}) {
        if (d > 5000 && (bucket < 100 || s % 4 != 0)) continue;  // keep the test quick
        const CodecParams p{.levels = s, .bucket = bucket, .seed = 3 + d};
        const auto c = make_codec("qsgd", p);
        std::vector<float> v = awkward_vector(d, d * 131 + s, d % 2 == 1);
        if (d >= 600) std::fill(v.begin() + 100, v.begin() + 300, 0.0f);  // zero buckets
        if (d == 513) v[5] = 3e38f, v[6] = -3e38f;  // the norm overflows float: NaN bucket
        const CodecContext ctx{.round = d + s, .client = bucket};
        std::vector<uint8_t> want, got;
        qsgd_encode_reference(p, v, ctx, want);
        c->encode(v, ctx, got);
        ASSERT_EQ(got, want) << "d " << d << " bucket " << bucket << " s " << s;
        std::vector<float> a(d), b(d);
        ASSERT_EQ(qsgd_decode_reference(p, want, a), "");
        ASSERT_EQ(c->decode(want, ctx, b), "");
        ASSERT_TRUE(same_bits(b, a)) << "d " << d << " bucket " << bucket << " s " << s;
        // damaged: both refuse with the same reason (or both accept the same floats)
        Rng rng(d + s, "damage");
        for (int k = 0; k < 6 && !want.empty(); ++k) {
          std::vector<uint8_t> bad = want;
          bad[rng.below(bad.size())] ^= uint8_t(1u << rng.below(8));
          const std::string ra = qsgd_decode_reference(p, bad, a), rb = c->decode(bad, ctx, b);
          ASSERT_EQ(rb, ra) << "d " << d << " bucket " << bucket << " s " << s;
          if (ra.empty()) {
            ASSERT_TRUE(same_bits(b, a));
          }
        }
        ++cases;
      }
  EXPECT_GT(cases, 400);
}

TEST(Qsgd, NonFiniteInputsGiveNonFiniteBucketsAndOthersStayExact) {
  const auto c = make_codec("qsgd", {.levels = 4, .bucket = 4});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> v = {1, nan, 2, 3, 0.5f, -0.5f, 0.5f, -0.5f, 3e38f, 3e38f, 0, 0};
  std::vector<float> out(v.size());
  std::vector<uint8_t> b;
  round_trip(*c, v, {}, b, out);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
  EXPECT_TRUE(same_bits({out.begin() + 4, out.begin() + 8}, {0.5f, -0.5f, 0.5f, -0.5f}));
  for (int i = 8; i < 12; ++i) EXPECT_TRUE(std::isnan(out[i])) << i << ": norm overflowed";
}

// Mean of `rounds` decodes of one vector, and the mean squared error per bucket, against
// QSGD's guarantees: E[Q(v)] = v, and E||Q(v_b) - v_b||^2 = (n/s)^2 sum p_i (1 - p_i)
// <= min(len / s^2, sqrt(len) / s) ||v_b||^2 (Alistarh et al. 2017, Lemma 3.1).
TEST(Qsgd, UnbiasedWithinTheVarianceBoundOverManyDraws) {
  const uint32_t s = 4, bucket = 32;
  const CodecParams p{.levels = s, .bucket = bucket, .seed = 11};
  const auto c = make_codec("qsgd", p);
  const std::vector<float> v = testing::awkward_vector(100, 21, false);  // buckets 32, 32, 32, 4
  constexpr int kRounds = 4000;
  std::vector<double> mean(v.size()), mse(4);
  std::vector<float> out(v.size());
  std::vector<uint8_t> b;
  for (int r = 0; r < kRounds; ++r) {
    round_trip(*c, v, {.round = uint64_t(r), .client = 1}, b, out);
    for (size_t i = 0; i < v.size(); ++i) {
      mean[i] += out[i];
      mse[i / bucket] += (double(out[i]) - v[i]) * (double(out[i]) - v[i]);
    }
  }
  for (size_t q = 0; q < 4; ++q) {
    const size_t start = q * bucket, len = std::min<size_t>(bucket, v.size() - start);
    const double n = qsgd_norm(std::span(v).subspan(start, len)), step = n / s;
    double expected_mse = 0, norm2 = 0;
    for (size_t i = start; i < start + len; ++i) {
      const double a = std::fabs(v[i]) / n * s, frac = a - std::floor(a);
      expected_mse += step * step * frac * (1 - frac);
      norm2 += double(v[i]) * v[i];
      // per value: Var <= step^2 / 4, so the mean of kRounds draws is within 5 sigma of v_i
      const double sigma = step / 2 / std::sqrt(double(kRounds));
      EXPECT_NEAR(mean[i] / kRounds, v[i], 5 * sigma + 1e-6 * n) << "value " << i;
    }
    mse[q] /= kRounds;
    EXPECT_NEAR(mse[q], expected_mse, 0.1 * expected_mse + 1e-12) << "bucket " << q;
    const double bound = std::min(double(len) / (s * s), std::sqrt(double(len)) / s) * norm2;
    EXPECT_LE(mse[q], bound) << "bucket " << q;
  }
}

TEST(Qsgd, SameContextSameBytesOtherClientsAndRoundsOtherDraws) {
  const auto c = make_codec("qsgd", {});
  const std::vector<float> v = awkward_vector(5000, 8, false);
  const auto a = encode(*c, v, {.round = 4, .client = 1});
  EXPECT_EQ(encode(*c, v, {.round = 4, .client = 1}), a);
  EXPECT_EQ(encode(*make_codec("qsgd", {}), v, {.round = 4, .client = 1}), a);
  EXPECT_NE(encode(*c, v, {.round = 4, .client = 2}), a);
  EXPECT_NE(encode(*c, v, {.round = 5, .client = 1}), a);
  EXPECT_NE(encode(*make_codec("qsgd", {.seed = 2}), v, {.round = 4, .client = 1}), a);
}

TEST(Qsgd, EncodedSizeIsFourBytesPerBucketPlusThePaddedFields) {
  for (uint32_t s : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 63u, 64u, 127u}) {
    uint32_t log2_up = 0;  // ceil(log2(s + 1)), by counting
    while ((1u << log2_up) < s + 1) ++log2_up;
    EXPECT_EQ(qsgd_value_bits(s), 1 + log2_up) << s;
    for (size_t d : {0, 1, 5, 512, 1000, 2049})
      for (uint32_t bucket : {1u, 7u, 512u}) {
        size_t want = 0;
        for (size_t start = 0; start < d; start += bucket) {
          const size_t len = std::min<size_t>(bucket, d - start);
          want += 4 + (len * (1 + log2_up) + 7) / 8;
        }
        const auto c = make_codec("qsgd", {.levels = s, .bucket = bucket});
        EXPECT_EQ(encode(*c, awkward_vector(d, s, false)).size(), want) << d << " " << bucket;
        EXPECT_EQ(qsgd_bytes(d, bucket, s), want);
      }
  }
}

TEST(Qsgd, RefusesDamagedEncodingsWithTheReason) {
  const auto c = make_codec("qsgd", {.levels = 4, .bucket = 4});
  const std::vector<float> v = {0.5f, -0.5f, 0.5f, -0.5f, 0.0f, -0.0f, 0.0f, 0.0f, -3.0f};
  const auto good = encode(*c, v);
  ASSERT_EQ(good.size(), 17u);
  std::vector<float> out(v.size());
  auto why = [&](std::vector<uint8_t> b) { return c->decode(b, {}, out); };
  auto with = [&](size_t at, uint8_t byte) {
    auto b = good;
    b[at] = byte;
    return b;
  };
  EXPECT_TRUE(contains(why({good.begin(), good.end() - 1}),
                       "qsgd holds 16 bytes, expected 17 for 9 values"));
  auto longer = good;
  longer.push_back(0);
  EXPECT_TRUE(contains(why(longer), "qsgd holds 18 bytes, expected 17 for 9 values"));
  EXPECT_TRUE(contains(why({}), "qsgd holds 0 bytes, expected 17"));
  EXPECT_TRUE(contains(why(with(4, 0x5E)), "qsgd: value 0 has level 7 > s = 4"));
  EXPECT_TRUE(contains(why(with(5, 0xA4)), "qsgd: value 3 has level 5 > s = 4"));
  EXPECT_TRUE(contains(why(with(16, 0x19)), "qsgd: bucket 2 has nonzero padding bits"));
  EXPECT_TRUE(contains(why(with(3, 0xBF)), "qsgd: bucket 0 has a negative norm -1"));
  std::vector<float> longer_out(11);
  EXPECT_TRUE(
      contains(c->decode(good, {}, longer_out), "qsgd holds 17 bytes, expected 18 for 11 values"));

  // the vectorized path: a bad level deep in a 512-value bucket
  const auto big = make_codec("qsgd", {.levels = 4, .bucket = 512});
  const auto w = awkward_vector(1000, 3, false);
  auto b = encode(*big, w);
  b[4 + 100] = 0xE0 | (b[4 + 100] & 0x0F);  // value 201: level 7
  std::vector<float> o(w.size());
  EXPECT_TRUE(contains(big->decode(b, {}, o), "qsgd: value 201 has level 7 > s = 4"));
}

TEST(Qsgd, DamagedAndRandomBytesNeverCrashTheDecoder) {
  for (uint32_t s : {1u, 4u, 127u}) {
    const auto c = make_codec("qsgd", {.levels = s, .bucket = 100});
    for (size_t d : {0, 1, 9, 250, 1000}) {
      const auto v = awkward_vector(d, d + s, true);
      testing::fuzz_decoder(*c, encode(*c, v), d, {}, 300, d * 7 + s);
    }
  }
}

}  // namespace
}  // namespace fedpar
