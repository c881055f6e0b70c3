// scaled_sign and sign: hand-computed encodings, the vector path against a plain loop, the
// preserved L1 norm, byte counts and refusals.
#include "core/codec/sign.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/core/codec/codec_test_util.h"

namespace fedpar {
namespace {
using testing::append_f32;
using testing::awkward_vector;
using testing::contains;
using testing::encode;
using testing::same_bits;

TEST(Sign, HandComputed) {
  // negative: indices 1, 5, 7 (0 and -0 are positive): byte 0 = 0b1010'0010, byte 1 = 0
  // ||v||_1 = 28, scale = 28 / 9 = 3.11111116 (float 0x40471C72)
  const std::vector<float> v = {1, -2, 0, -0.0f, 3, -4, 5, -6, 7};
  const std::vector<uint8_t> want = {0x72, 0x1C, 0x47, 0x40, 0xA2, 0x00};
  const auto scaled = make_codec("scaled_sign", {});
  EXPECT_EQ(encode(*scaled, v), want);
  const float s = testing::float_of(0x40471C72);
  std::vector<float> out(9);
  ASSERT_EQ(scaled->decode(want, {}, out), "");
  EXPECT_TRUE(same_bits(out, {s, -s, s, s, s, -s, s, -s, s}));

  const auto sign = make_codec("sign", {});
  EXPECT_EQ(encode(*sign, v), (std::vector<uint8_t>{0xA2, 0x00}));
  ASSERT_EQ(sign->decode(std::vector<uint8_t>{0xA2, 0x00}, {}, out), "");
  EXPECT_TRUE(same_bits(out, {1, -1, 1, 1, 1, -1, 1, -1, 1}));
  EXPECT_FALSE(sign->summable());
  EXPECT_FALSE(scaled->summable());
}

TEST(Sign, VectorPathMatchesAPlainLoop) {
  for (size_t d : {0, 1, 7, 8, 9, 31, 32, 33, 100, 1000, 4099}) {
    const auto v = awkward_vector(d, d, d % 2 == 1);
    std::vector<uint8_t> bits((d + 7) / 8);
    pack_signs(v, bits.data());
    double l1[8] = {};
    for (size_t i = 0; i < d; ++i) {
      ASSERT_EQ((bits[i / 8] >> (i % 8)) & 1, v[i] < 0 ? 1 : 0) << d << " " << i;
      l1[i % 8] += std::fabs(double(v[i]));
    }
    const double sum = ((l1[0] + l1[1]) + (l1[2] + l1[3])) + ((l1[4] + l1[5]) + (l1[6] + l1[7]));
    const float scale = d ? float(sum / double(d)) : 0.0f;
    EXPECT_EQ(testing::bits_of(sign_scale(v)), testing::bits_of(scale)) << d;
    std::vector<uint8_t> fused((d + 7) / 8, 0xAA);
    EXPECT_EQ(testing::bits_of(pack_signs_and_scale(v, fused.data())), testing::bits_of(scale));
    EXPECT_EQ(fused, bits) << d;
    std::vector<float> out(d);
    unpack_signs(bits.data(), -2.5f, out);
    for (size_t i = 0; i < d; ++i) ASSERT_EQ(out[i], v[i] < 0 ? 2.5f : -2.5f) << d << " " << i;
  }
}

TEST(Sign, ScaledSignKeepsTheL1Norm) {
  const auto c = make_codec("scaled_sign", {});
  for (size_t d : {1, 10, 1000, 65537}) {
    const auto v = awkward_vector(d, d + 1, false);
    std::vector<float> out(d);
    std::vector<uint8_t> b;
    round_trip(*c, v, {}, b, out);
    double in = 0, got = 0;
    for (size_t i = 0; i < d; ++i) in += std::fabs(v[i]), got += std::fabs(out[i]);
    EXPECT_NEAR(got, in, 1e-6 * in) << d;  // the scale's one float rounding
    for (size_t i = 0; i < d; ++i) ASSERT_EQ(std::signbit(out[i]), v[i] < 0) << i;
  }
  // a NaN input makes every decoded value NaN, so the receiver rejects the update
  std::vector<float> v = {1, std::numeric_limits<float>::quiet_NaN(), 2}, out(3);
  std::vector<uint8_t> b;
  round_trip(*c, v, {}, b, out);
  for (float x : out) EXPECT_TRUE(std::isnan(x));
}

TEST(Sign, EncodedSizesAndRefusals) {
  const auto scaled = make_codec("scaled_sign", {});
  const auto sign = make_codec("sign", {});
  for (size_t d : {0, 1, 8, 9, 1000}) {
    const auto v = awkward_vector(d, d, false);
    EXPECT_EQ(encode(*scaled, v).size(), 4 + (d + 7) / 8);
    EXPECT_EQ(encode(*sign, v).size(), (d + 7) / 8);
  }
  std::vector<float> out(9);
  auto s_why = [&](std::vector<uint8_t> b) { return scaled->decode(b, {}, out); };
  auto why = [&](std::vector<uint8_t> b) { return sign->decode(b, {}, out); };
  EXPECT_TRUE(contains(why({0xA2}), "sign holds 1 bytes, expected 2 for 9 values"));
  EXPECT_TRUE(contains(why({0xA2, 0, 0}), "sign holds 3 bytes, expected 2 for 9 values"));
  EXPECT_TRUE(contains(why({0xA2, 0x02}), "sign: nonzero padding bits in the last byte (0x02"));
  EXPECT_TRUE(contains(s_why({0, 0, 0x80, 0x3F, 0xA2}), "scaled_sign holds 5 bytes, expected 6"));
  EXPECT_TRUE(contains(s_why({0, 0, 0x80, 0x3F, 0xA2, 0x80}), "scaled_sign: nonzero padding"));
  EXPECT_TRUE(contains(s_why({0, 0, 0x80, 0xBF, 0xA2, 0}), "scaled_sign: negative scale -1"));
  EXPECT_EQ(s_why({0, 0, 0x80, 0x3F, 0xA2, 0x01}), "");  // bit 8 is value 8: no padding
  std::vector<float> eight(8);
  EXPECT_EQ(sign->decode(std::vector<uint8_t>{0xFF}, {}, eight), "");  // no padding at all
  for (const Codec* c : {scaled.get(), sign.get()})
    for (size_t d : {0, 1, 9, 100}) {
      const auto v = awkward_vector(d, d, true);
      testing::fuzz_decoder(*c, encode(*c, v), d, {}, 200, d);
    }
}

}  // namespace
}  // namespace fedpar
