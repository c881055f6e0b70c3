// fp16 and bf16: the scalar conversions against hand-computed values and against the CPU's own
// F16C conversion, and the codecs' byte counts and refusals.
#include "core/codec/casts.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/rng.h"

namespace fedpar {
namespace {

float bits_to_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

TEST(Casts, HalfRoundsToNearestEvenAtTheEdges) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);             // the largest half
  EXPECT_EQ(float_to_half(65519.99f), 0x7BFF);            // below the midpoint to 2^16
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);             // the midpoint: ties to even = Inf
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3C00);      // halfway 1 -> 1+2^-10: even (1)
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3C02);  // halfway, odd below: up
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);             // the smallest subnormal
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);             // half of it: ties to even (0)
  EXPECT_EQ(float_to_half(0x1.8p-25f), 0x0001);           // above half: up
  EXPECT_EQ(float_to_half(0x1p-14f - 0x1p-25f), 0x0400);  // rounds up into the normals
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_to_float(0x3555), 0x1.554p-2f);
}

TEST(Casts, EveryHalfSurvivesTheRoundTripAndTheVectorPathAgreesWithTheScalarOne) {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = uint16_t(h);
  std::vector<float> vec(65536);
  halves_to_floats(all.data(), vec);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(vec[h])) << h;
      continue;
    }
    ASSERT_EQ(std::memcmp(&f, &vec[h], 4), 0) << h;
    ASSERT_EQ(float_to_half(f), h) << h;
  }
  // random floats over the whole range, and every value near each half's midpoints
  Rng rng(7, "casts");
  std::vector<float> in;
  for (int i = 0; i < 200000; ++i) {
    const float f = bits_to_float(rng.next_u32());
    if (!std::isnan(f)) in.push_back(f);
  }
  for (uint32_t h = 0; h < 0x7C00; h += 37) {
    const float mid = (half_to_float(uint16_t(h)) + half_to_float(uint16_t(h + 1))) / 2;
    in.push_back(mid);
    in.push_back(std::nextafter(mid, 0.0f));
    in.push_back(std::nextafter(mid, 1e9f));
  }
  std::vector<uint16_t> fast(in.size());
  floats_to_halves(in, fast.data());
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(fast[i], float_to_half(in[i])) << in[i];
}

TEST(Casts, Bf16KeepsTheExponentAndRoundsTheMantissaToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);      // halfway: even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // halfway, odd below: up
  EXPECT_EQ(float_to_bf16(3.0e38f), 0x7F62);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to Inf
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_float(0xC040), -3.0f);
}

TEST(Casts, CodecsUseTwoBytesPerValueAndRefuseAnyOtherLength) {
  for (const char* name : {"fp16", "bf16"}) {
    const auto c = make_codec(name, {});
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->summable());
    const std::vector<float> v = {0.5f, -1.25f, 3.0f};
    std::vector<uint8_t> bytes;
    c->encode(v, {}, bytes);
    EXPECT_EQ(bytes.size(), 6u) << name;
    std::vector<float> out(3);
    EXPECT_EQ(c->decode(bytes, {}, out), "") << name;
    EXPECT_EQ(out, v) << name;  // all three are exact in both formats
    std::vector<float> four(4);
    EXPECT_NE(c->decode(bytes, {}, four).find("holds 6 bytes, expected 8"), std::string::npos);
    // an odd address (ZeroMQ's inline frames): the same values
    std::vector<uint8_t> shifted(bytes.size() + 1);
    std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
    std::fill(out.begin(), out.end(), 0.0f);
    EXPECT_EQ(c->decode(std::span(shifted).subspan(1), {}, out), "");
    EXPECT_EQ(out, v) << name;
  }
}

}  // namespace
}  // namespace fedpar
