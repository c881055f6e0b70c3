// scaled_sign and sign; see sign.h and docs/definitions.md#compression.
#include "core/codec/sign.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>

#include "core/check.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace fedpar {

float sign_scale(std::span<const float> v) {
  if (v.empty()) return 0.0f;
  double s[8] = {};
  size_t i = 0;
#if defined(__AVX2__)
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  for (; i + 8 <= v.size(); i += 8) {
    const __m256 f = _mm256_and_ps(_mm256_loadu_ps(v.data() + i), abs_mask);
    a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
  }
  _mm256_storeu_pd(s, a0);
  _mm256_storeu_pd(s + 4, a1);
#endif
  for (; i < v.size(); ++i) s[i % 8] += std::fabs(double(v[i]));
  const double l1 = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  return float(l1 / double(v.size()));
}

void pack_signs(std::span<const float> v, uint8_t* out) {
  size_t i = 0;
#if defined(__AVX2__)
  const __m256 zero = _mm256_setzero_ps();
  for (; i + 32 <= v.size(); i += 32) {
    const float* p = v.data() + i;
    const uint32_t m0 =
        uint32_t(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), zero, _CMP_LT_OQ)));
    const uint32_t m1 =
        uint32_t(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + 8), zero, _CMP_LT_OQ)));
    const uint32_t m2 =
        uint32_t(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + 16), zero, _CMP_LT_OQ)));
    const uint32_t m3 =
        uint32_t(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + 24), zero, _CMP_LT_OQ)));
    const uint32_t word = m0 | m1 << 8 | m2 << 16 | m3 << 24;
    std::memcpy(out + i / 8, &word, 4);
  }
#endif
  for (; i < v.size(); i += 8) {  // whole bytes from here on (i is a multiple of 8)
    uint8_t byte = 0;
    for (size_t j = 0; j < 8 && i + j < v.size(); ++j) byte |= uint8_t(v[i + j] < 0) << j;
    out[i / 8] = byte;
  }
}

void unpack_signs(const uint8_t* bits, float m, std::span<float> out) {
  size_t i = 0;
#if defined(__AVX2__)
  const __m256 mv = _mm256_set1_ps(m);
  const __m256i to_top = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
  const __m256i sign = _mm256_set1_epi32(int(0x80000000u));
  for (; i + 8 <= out.size(); i += 8) {
    const __m256i b = _mm256_sllv_epi32(_mm256_set1_epi32(bits[i / 8]), to_top);  // bit j -> 31
    _mm256_storeu_ps(out.data() + i,
                     _mm256_xor_ps(mv, _mm256_castsi256_ps(_mm256_and_si256(b, sign))));
  }
#endif
  for (; i < out.size(); ++i) out[i] = (bits[i / 8] >> (i % 8)) & 1 ? -m : m;
}

float pack_signs_and_scale(std::span<const float> v, uint8_t* out) {
#if defined(__AVX2__)
  // one pass over v: the same partial sums as sign_scale, the same bits as pack_signs
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 zero = _mm256_setzero_ps();
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 8 <= v.size(); i += 8) {
    const __m256 f = _mm256_loadu_ps(v.data() + i);
    out[i / 8] = uint8_t(_mm256_movemask_ps(_mm256_cmp_ps(f, zero, _CMP_LT_OQ)));
    const __m256 a = _mm256_and_ps(f, abs_mask);
    a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
    a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
  }
  if (v.empty()) return 0.0f;
  double s[8];
  _mm256_storeu_pd(s, a0);
  _mm256_storeu_pd(s + 4, a1);
  if (i < v.size()) {
    uint8_t byte = 0;
    for (size_t j = 0; i + j < v.size(); ++j) {
      byte |= uint8_t(v[i + j] < 0) << j;
      s[(i + j) % 8] += std::fabs(double(v[i + j]));
    }
    out[i / 8] = byte;
  }
  const double l1 = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  return float(l1 / double(v.size()));
#else
  pack_signs(v, out);
  return sign_scale(v);
#endif
}

namespace {

template <bool kScaled>
class Sign final : public Codec {
 public:
  CodecId id() const override { return kScaled ? CodecId::kScaledSign : CodecId::kSign; }

  void encode(std::span<const float> v, const CodecContext&,
              std::vector<uint8_t>& out) const override {
    const size_t head = kScaled ? 4 : 0;
    out.resize(head + (v.size() + 7) / 8);
    if constexpr (kScaled) {
      const float scale = pack_signs_and_scale(v, out.data() + head);
      std::memcpy(out.data(), &scale, 4);
    } else {
      pack_signs(v, out.data() + head);
    }
  }

  std::string decode(std::span<const uint8_t> bytes, const CodecContext&,
                     std::span<float> out) const override {
    float m = 1.0f;
    if (std::string why = check(bytes, out.size(), m); !why.empty()) return why;
    unpack_signs(bytes.data() + (kScaled ? 4 : 0), m, out);
    return "";
  }

  // p - D(bytes) in one pass: every decoded value is +m or -m, so it is finite when m is.
  bool subtract_decoded(std::span<const uint8_t> bytes, const CodecContext&, std::span<float> p,
                        std::vector<float>&) const override {
    float m = 1.0f;
    const std::string why = check(bytes, p.size(), m);
    FEDPAR_CHECK(why.empty()) << name() << " cannot decode its own encoding: " << why;
    if (p.empty()) return true;
    if (!std::isfinite(m)) return false;
    const uint8_t* bits = bytes.data() + (kScaled ? 4 : 0);
    size_t i = 0;
#if defined(__AVX2__)
    const __m256 mv = _mm256_set1_ps(m);
    const __m256i to_top = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
    const __m256i sign = _mm256_set1_epi32(int(0x80000000u));
    for (; i + 8 <= p.size(); i += 8) {  // as unpack_signs, then the subtraction
      const __m256i b = _mm256_sllv_epi32(_mm256_set1_epi32(bits[i / 8]), to_top);
      const __m256 d = _mm256_xor_ps(mv, _mm256_castsi256_ps(_mm256_and_si256(b, sign)));
      _mm256_storeu_ps(p.data() + i, _mm256_sub_ps(_mm256_loadu_ps(p.data() + i), d));
    }
#endif
    for (; i < p.size(); ++i) p[i] -= (bits[i / 8] >> (i % 8)) & 1 ? -m : m;
    return true;
  }

 private:
  // Why `bytes` is not an encoding of d values, or "" (m: the scale, 1 for sign).
  std::string check(std::span<const uint8_t> bytes, size_t d, float& m) const {
    const size_t head = kScaled ? 4 : 0, want = head + (d + 7) / 8;
    if (bytes.size() != want)
      return fmt::format("{} holds {} bytes, expected {} for {} values", name(), bytes.size(), want,
                         d);
    if constexpr (kScaled) {
      std::memcpy(&m, bytes.data(), 4);
      if (std::signbit(m) && !std::isnan(m))
        return fmt::format("scaled_sign: negative scale {}", m);
    }
    if (d % 8 && (bytes.back() >> (d % 8)) != 0)
      return fmt::format("{}: nonzero padding bits in the last byte ({:#04x} for {} values)",
                         name(), bytes.back(), d);
    return "";
  }
};

}  // namespace

std::unique_ptr<Codec> make_scaled_sign_codec() { return std::make_unique<Sign<true>>(); }
std::unique_ptr<Codec> make_sign_codec() { return std::make_unique<Sign<false>>(); }

}  // namespace fedpar
