// fp16 and bf16 codecs; see casts.h.
#include "core/codec/casts.h"

#include <fmt/format.h>

#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace fedpar {

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return uint16_t(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));  // NaN stays NaN
  if (abs >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to >= 65520: Inf
  if (abs < 0x38800000u) {                                  // below 2^-14: a half subnormal or 0
    if (abs < 0x33000000u) return uint16_t(sign);           // below 2^-25: rounds to 0
    const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - int(abs >> 23);  // 14..24: value = mant * 2^(e-150), half ulp 2^-24
    const uint32_t q = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    return uint16_t(sign | (q + (rest > half || (rest == half && (q & 1)))));
  }
  // normal: rebias the exponent (127 -> 15), round the 13 dropped bits to nearest even
  const uint32_t r = abs - 0x38000000u;
  return uint16_t(sign | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  uint32_t x;
  if (exp == 0x1F) {
    x = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {
    x = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    x = sign;
  } else {  // subnormal: mant * 2^-24, exact in float
    const float v = float(mant) * 0x1p-24f;
    std::memcpy(&x, &v, 4);
    x |= sign;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float bf16_to_float(uint16_t b) {
  const uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void floats_to_halves(std::span<const float> in, uint16_t* out) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= in.size(); i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in.data() + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < in.size(); ++i) out[i] = float_to_half(in[i]);
}

void halves_to_floats(const uint16_t* in, std::span<float> out) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= out.size(); i += 8)
    _mm256_storeu_ps(out.data() + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < out.size(); ++i) out[i] = half_to_float(in[i]);
}

namespace {

// Two bytes per value, nothing else: the length says everything.
template <CodecId kId>
class Cast16 final : public Codec {
 public:
  CodecId id() const override { return kId; }
  bool summable() const override { return true; }
  void encode(std::span<const float> v, const CodecContext&,
              std::vector<uint8_t>& out) const override {
    out.resize(2 * v.size());
    auto* h = reinterpret_cast<uint16_t*>(out.data());  // vector storage is aligned for uint16
    if constexpr (kId == CodecId::kF16) {
      floats_to_halves(v, h);
    } else {
      for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_bf16(v[i]);
    }
  }
  std::string decode(std::span<const uint8_t> bytes, const CodecContext&,
                     std::span<float> out) const override {
    if (bytes.size() != 2 * out.size())
      return fmt::format("{} holds {} bytes, expected {} for {} values", name(), bytes.size(),
                         2 * out.size(), out.size());
    const uint8_t* p = bytes.data();
    if (reinterpret_cast<uintptr_t>(p) % 2 == 0) {
      const auto* h = reinterpret_cast<const uint16_t*>(p);
      if constexpr (kId == CodecId::kF16) {
        halves_to_floats(h, out);
      } else {
        for (size_t i = 0; i < out.size(); ++i) out[i] = bf16_to_float(h[i]);
      }
      return "";
    }
    for (size_t i = 0; i < out.size(); ++i) {  // unaligned frame (ZeroMQ keeps small ones inline)
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = kId == CodecId::kF16 ? half_to_float(h) : bf16_to_float(h);
    }
    return "";
  }
};

}  // namespace

std::unique_ptr<Codec> make_f16_codec() { return std::make_unique<Cast16<CodecId::kF16>>(); }
std::unique_ptr<Codec> make_bf16_codec() { return std::make_unique<Cast16<CodecId::kBf16>>(); }

}  // namespace fedpar
