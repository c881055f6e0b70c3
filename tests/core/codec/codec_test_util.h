// Helpers for the codec tests: float bytes, bitwise comparison of float vectors (NaN payloads and
// the sign of zero included), vectors with the values that break codecs, and a mutation fuzzer
// that feeds a decoder damaged encodings (AddressSanitizer builds catch any read past the input).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/codec/codec.h"
#include "core/rng.h"

namespace fedpar::testing {

inline uint32_t bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

inline float float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// c's encoding of v in context ctx.
inline std::vector<uint8_t> encode(const Codec& c, const std::vector<float>& v,
                                   CodecContext ctx = {}) {
  std::vector<uint8_t> b;
  c.encode(v, ctx, b);
  return b;
}

// The four little-endian bytes of f, appended to `out`.
inline void append_f32(std::vector<uint8_t>& out, float f) {
  const uint32_t x = bits_of(f);
  for (int k = 0; k < 4; ++k) out.push_back(uint8_t(x >> (8 * k)));
}

// a and b hold the same bits, element by element.
inline ::testing::AssertionResult same_bits(const std::vector<float>& a,
                                            const std::vector<float>& b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (bits_of(a[i]) != bits_of(b[i]))
      return ::testing::AssertionFailure()
             << "[" << i << "] " << a[i] << " (0x" << std::hex << bits_of(a[i]) << ") vs " << b[i]
             << " (0x" << bits_of(b[i]) << ")";
  return ::testing::AssertionSuccess();
}

// Normal values with some exact ties, zeros of both signs, subnormals, and, when `specials`, a NaN
// and infinities.
inline std::vector<float> awkward_vector(size_t n, uint64_t seed, bool specials) {
  Rng rng(seed, "codec-test");
  std::vector<float> v(n);
  for (float& x : v) {
    const uint32_t kind = rng.next_u32() % 16;
    if (kind == 0)
      x = float(int(rng.below(9)) - 4) * 0.25f;  // ties, +-0 among them
    else if (kind == 1)
      x = -0.0f;
    else if (kind == 2)
      x = float_of(uint32_t(rng.below(0x800000)) | (rng.next_u32() & 0x80000000u));  // subnormal
    else
      x = float(rng.normal());
  }
  if (specials && n >= 3) {
    v[rng.below(n)] = std::numeric_limits<float>::quiet_NaN();
    v[rng.below(n)] = std::numeric_limits<float>::infinity();
    v[rng.below(n)] = -std::numeric_limits<float>::infinity();
  }
  return v;
}

// Decodes `rounds` damaged copies of `good` (bytes flipped, dropped, added, truncated) into d
// floats: the decoder must return (a reason or "") without crashing or reading past the input,
// which it is given in an exactly sized heap buffer.
inline void fuzz_decoder(const Codec& c, const std::vector<uint8_t>& good, size_t d,
                         const CodecContext& ctx, int rounds, uint64_t seed) {
  Rng rng(seed, "codec-fuzz");
  std::vector<float> out(d);
  for (int r = 0; r < rounds; ++r) {
    std::vector<uint8_t> b = good;
    const uint32_t what = rng.next_u32() % 5;
    if (what == 0 && !b.empty()) {
      for (int k = 0; k < 3; ++k) b[rng.below(b.size())] ^= uint8_t(1u << rng.below(8));
    } else if (what == 1 && !b.empty()) {
      b.resize(rng.below(b.size()));
    } else if (what == 2) {
      b.push_back(uint8_t(rng.next_u32()));
    } else if (what == 3 && !b.empty()) {
      b[rng.below(b.size())] = uint8_t(rng.next_u32());
    } else {
      b.resize(rng.below(2 * good.size() + 16));
      for (auto& x : b) x = uint8_t(rng.next_u32());
    }
    auto exact = std::make_unique<uint8_t[]>(b.size() + 1);  // +1: a valid pointer when empty
    if (!b.empty()) std::memcpy(exact.get(), b.data(), b.size());
    (void)c.decode(std::span<const uint8_t>(exact.get(), b.size()), ctx, out);
  }
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace fedpar::testing
