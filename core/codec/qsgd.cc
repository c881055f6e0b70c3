// QSGD; see qsgd.h and docs/definitions.md#compression. Two implementations of one definition: the
// plain reference (one value, one bit at a time, Rng::next_u32) and, where the CPU has AVX2 and
// BMI2, the codec's own path (eight values at a time; Philox for twelve blocks at once; the fields
// packed and unpacked with pext/pdep). Tests check that both give the same bytes and floats.
#include "core/codec/qsgd.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "core/rng.h"

#if defined(__AVX2__) && defined(__BMI2__) && defined(__FMA__)
#include <immintrin.h>
#define FEDPAR_QSGD_AVX2 1
#endif

namespace fedpar {

uint32_t qsgd_value_bits(uint32_t levels) { return 1 + uint32_t(std::bit_width(levels)); }

size_t qsgd_bytes(size_t d, uint32_t bucket, uint32_t levels) {
  const size_t w = qsgd_value_bits(levels);
  auto one = [w](size_t len) { return 4 + (len * w + 7) / 8; };
  return d / bucket * one(bucket) + (d % bucket ? one(d % bucket) : 0);
}

namespace {

float plain_norm(std::span<const float> v) {
  double s[8] = {};
  for (size_t i = 0; i < v.size(); ++i) s[i % 8] += double(v[i]) * double(v[i]);
  return float(std::sqrt(((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))));
}

// One value's field, sign in bit 0 and level above it, for a bucket of norm n != 0 and the
// value's 16 random bits.
uint32_t quantize_one(float x, float n, uint32_t s, uint32_t bits16) {
  const float u = float(bits16) * 0x1p-16f;
  const float a = std::fabs(x) / n * float(s);
  const float fl = std::floor(a);
  float level = fl + (u < a - fl ? 1.0f : 0.0f);
  if (!(level <= float(s))) level = float(s);  // NaN too
  return uint32_t(x < 0) | uint32_t(level) << 1;
}

// A decoded magnitude: n * l / s rounded once to float (the double quotient is exact enough that
// rounding it again to float is the correct rounding: l <= 127, n has 24 bits).
float level_value(float n, uint32_t l, uint32_t s) {
  return l == 0 ? 0.0f : float(double(n) * double(l) / double(s));
}

std::string size_error(size_t got, size_t d, const CodecParams& p) {
  return fmt::format("qsgd holds {} bytes, expected {} for {} values", got,
                     qsgd_bytes(d, p.bucket, p.levels), d);
}

std::string norm_error(size_t q, float n) {
  return fmt::format("qsgd: bucket {} has a negative norm {}", q, n);
}

std::string level_error(size_t i, uint32_t l, uint32_t s) {
  return fmt::format("qsgd: value {} has level {} > s = {}", i, l, s);
}

std::string padding_error(size_t q) {
  return fmt::format("qsgd: bucket {} has nonzero padding bits", q);
}

bool negative_norm(float n) { return std::signbit(n) && !std::isnan(n); }

}  // namespace

float qsgd_norm(std::span<const float> v) {
#if defined(FEDPAR_QSGD_AVX2)
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 8 <= v.size(); i += 8) {
    const __m256 f = _mm256_loadu_ps(v.data() + i);
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
    a0 = _mm256_add_pd(a0, _mm256_mul_pd(lo, lo));  // squares of floats are exact in double
    a1 = _mm256_add_pd(a1, _mm256_mul_pd(hi, hi));
  }
  double s[8];
  _mm256_storeu_pd(s, a0);
  _mm256_storeu_pd(s + 4, a1);
  for (; i < v.size(); ++i) s[i % 8] += double(v[i]) * double(v[i]);
  return float(std::sqrt(((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))));
#else
  return plain_norm(v);
#endif
}

void qsgd_encode_reference(const CodecParams& p, std::span<const float> v, const CodecContext& ctx,
                           std::vector<uint8_t>& out) {
  const uint32_t s = p.levels, w = qsgd_value_bits(s);
  out.assign(qsgd_bytes(v.size(), p.bucket, s), 0);
  Rng rng(p.seed, "qsgd", ctx.client, uint32_t(ctx.round));
  uint32_t word = 0;  // the stream's word for values 2j (low half) and 2j + 1 (high half)
  bool high = false;
  auto draw16 = [&] {  // bits 16i .. 16i + 15 of the stream for value i
    if (!high) word = rng.next_u32();
    const uint32_t u = high ? word >> 16 : word & 0xFFFF;
    high = !high;
    return u;
  };
  size_t at = 0;
  for (size_t start = 0; start < v.size(); start += p.bucket) {
    const auto b = v.subspan(start, std::min<size_t>(p.bucket, v.size() - start));
    const float n = plain_norm(b);
    std::memcpy(&out[at], &n, 4);
    at += 4;
    for (size_t i = 0; i < b.size(); ++i) {
      const uint32_t u = draw16();  // one draw per value, zero buckets included
      const uint32_t field = n == 0 ? 0 : quantize_one(b[i], n, s, u);
      for (uint32_t k = 0; k < w; ++k) {
        const size_t bit = i * w + k;
        out[at + bit / 8] |= uint8_t(((field >> k) & 1) << (bit % 8));
      }
    }
    at += (b.size() * w + 7) / 8;
  }
}

std::string qsgd_decode_reference(const CodecParams& p, std::span<const uint8_t> bytes,
                                  std::span<float> out) {
  const uint32_t s = p.levels, w = qsgd_value_bits(s);
  if (bytes.size() != qsgd_bytes(out.size(), p.bucket, s))
    return size_error(bytes.size(), out.size(), p);
  size_t at = 0;
  for (size_t start = 0, q = 0; start < out.size(); start += p.bucket, ++q) {
    const size_t len = std::min<size_t>(p.bucket, out.size() - start);
    float n;
    std::memcpy(&n, &bytes[at], 4);
    at += 4;
    if (negative_norm(n)) return norm_error(q, n);
    for (size_t i = 0; i < len; ++i) {
      uint32_t field = 0;
      for (uint32_t k = 0; k < w; ++k) {
        const size_t bit = i * w + k;
        field |= uint32_t((bytes[at + bit / 8] >> (bit % 8)) & 1) << k;
      }
      const uint32_t l = field >> 1;
      if (l > s) return level_error(start + i, l, s);
      const float m = level_value(n, l, s);
      out[start + i] = !std::isfinite(n)       ? std::numeric_limits<float>::quiet_NaN()
                       : (field & 1) && l != 0 ? -m
                                               : m;
    }
    const size_t bits = len * w;
    at += (bits + 7) / 8;
    if (bits % 8 && (bytes[at - 1] >> (bits % 8)) != 0) return padding_error(q);
  }
  return "";
}

namespace {

#if defined(FEDPAR_QSGD_AVX2)

// The stream Rng(seed, "qsgd", client, round) as an array of bytes: word j (word j % 4 of Philox
// block j / 4, counter {block low, block high, client, round}, as Rng::next_u32 hands them out) is
// bytes 4j .. 4j + 3, little-endian; value i takes bytes 2i .. 2i + 1. Keeps about 1000 words,
// computed twelve blocks at a time.
class Words {
 public:
  Words(uint64_t seed, uint32_t client, uint32_t round) {
    const uint64_t k = splitmix64(splitmix64(seed) ^ fnv1a64("qsgd"));  // as Rng's constructor
    uint32_t k0 = uint32_t(k), k1 = uint32_t(k >> 32);
    for (int r = 0; r < 10; ++r, k0 += 0x9E3779B9u, k1 += 0xBB67AE85u) {
      k0_[r] = k0;
      k1_[r] = k1;
      key0_[r] = _mm256_set1_epi32(int(k0));
      key1_[r] = _mm256_set1_epi32(int(k1));
    }
    client_word_ = client;
    round_word_ = round;
    round_k1_ = _mm256_set1_epi64x(int64_t(round ^ k1_[0]));
  }
  // The bytes of value g and on, for `avail` (>= 8) values.
  const uint8_t* at(uint64_t g, size_t& avail) {
    const uint64_t byte = 2 * g;
    if (!filled_ || byte < 4 * base_ || byte + 16 > 4 * (base_ + kWords))
      fill(byte / 4 / (16 * kSets) * (16 * kSets));
    avail = size_t((4 * (base_ + kWords) - byte) / 2);
    return reinterpret_cast<const uint8_t*>(buf_) + (byte - 4 * base_);
  }

 private:
  static constexpr int kSets = 3;  // blocks per batch: 4 * kSets
  static constexpr size_t kWords = 16 * kSets * (1024 / (16 * kSets));

  // Philox4x32-10 of the 4 * kSets blocks from `block` (a multiple of 4 * kSets), written as
  // 16 * kSets words in stream order. kSets sets of four blocks, each 32-bit value in the low half
  // of a 64-bit lane (the high halves carry junk that _mm256_mul_epu32 ignores). Three sets: the
  // state stays in the 16 registers (four spill), and three chains of multiply, shift and xor
  // cover the multiply's latency. Rounds 0 and 1 skip the two multiplies whose inputs are the same
  // for all these blocks (the client, and word 0 after round 0: the block's high word does not
  // change within them).
  void batch(uint64_t block, uint32_t* out) const {
    if (uint32_t(block) > ~uint32_t{0} - (4 * kSets - 1)) {  // the high word changes within
      for (int b = 0; b < 4 * kSets; ++b) {  // (past 2^34 words): block by block, as Rng does
        const uint64_t at = block + uint64_t(b);
        const auto w = philox4x32_10({uint32_t(at), uint32_t(at >> 32), client_word_, round_word_},
                                     {k0_[0], k1_[0]});
        std::memcpy(out + 4 * b, w.data(), 16);
      }
      return;
    }
    const __m256i m0 = _mm256_set1_epi64x(0xD2511F53), m1 = _mm256_set1_epi64x(0xCD9E8D57);
    // round 0, shared part: M1 * client
    const uint64_t q1 = uint64_t{0xCD9E8D57u} * client_word_;
    const uint32_t c0_r1 = uint32_t(q1 >> 32) ^ uint32_t(block >> 32) ^ k0_[0];
    const uint32_t c1_r1 = uint32_t(q1);
    // round 1, shared part: M0 * (word 0 after round 0)
    const uint64_t q0 = uint64_t{0xD2511F53u} * c0_r1;
    const __m256i hi_q0 = _mm256_set1_epi64x(int64_t((q0 >> 32) ^ k1_[1]));
    const __m256i lo_q0 = _mm256_set1_epi64x(int64_t(uint32_t(q0)));
    const __m256i c1_r1_k = _mm256_set1_epi64x(int64_t(c1_r1 ^ k0_[1]));
    __m256i c0[kSets], c1[kSets], c2[kSets], c3[kSets];
    for (int t = 0; t < kSets; ++t) {
      const uint64_t b = block + 4 * uint64_t(t);
      const __m256i lo =
          _mm256_setr_epi64x(int64_t(b), int64_t(b + 1), int64_t(b + 2), int64_t(b + 3));
      // round 0: c = {lo, hi, client, round}
      const __m256i p0 = _mm256_mul_epu32(lo, m0);
      const __m256i c2_r1 = _mm256_xor_si256(_mm256_srli_epi64(p0, 32), round_k1_);
      const __m256i c3_r1 = p0;
      // round 1: c = {c0_r1 (shared), c1_r1 (shared), c2_r1, c3_r1}
      const __m256i p1 = _mm256_mul_epu32(c2_r1, m1);
      c0[t] = _mm256_xor_si256(_mm256_srli_epi64(p1, 32), c1_r1_k);
      c1[t] = p1;
      c2[t] = _mm256_xor_si256(hi_q0, c3_r1);
      c3[t] = lo_q0;
    }
    for (int r = 2; r < 10; ++r) {
      for (int t = 0; t < kSets; ++t) {
        const __m256i p0 = _mm256_mul_epu32(c0[t], m0), p1 = _mm256_mul_epu32(c2[t], m1);
        c0[t] = _mm256_xor_si256(_mm256_srli_epi64(p1, 32), _mm256_xor_si256(c1[t], key0_[r]));
        c2[t] = _mm256_xor_si256(_mm256_srli_epi64(p0, 32), _mm256_xor_si256(c3[t], key1_[r]));
        c1[t] = p1;
        c3[t] = p0;
      }
    }
    auto* o = reinterpret_cast<__m256i*>(out);
    for (int t = 0; t < kSets; ++t) {
      const __m256i w01 = _mm256_blend_epi32(c0[t], _mm256_slli_epi64(c1[t], 32), 0xAA);
      const __m256i w23 = _mm256_blend_epi32(c2[t], _mm256_slli_epi64(c3[t], 32), 0xAA);
      const __m256i even = _mm256_unpacklo_epi64(w01, w23), odd = _mm256_unpackhi_epi64(w01, w23);
      _mm256_storeu_si256(o + 2 * t, _mm256_permute2x128_si256(even, odd, 0x20));
      _mm256_storeu_si256(o + 2 * t + 1, _mm256_permute2x128_si256(even, odd, 0x31));
    }
  }

  void fill(uint64_t base) {
    base_ = base;
    filled_ = true;
    for (size_t b = 0; b < kWords / (16 * kSets); ++b)
      batch(base / 4 + 4 * kSets * b, buf_ + 16 * kSets * b);
  }

  __m256i key0_[10], key1_[10], round_k1_;
  uint32_t k0_[10], k1_[10], client_word_, round_word_;
  alignas(32) uint32_t buf_[kWords];
  uint64_t base_ = 0;
  bool filled_ = false;
};

// The norms of the (up to) four buckets of `bucket` values from `start`: four buckets' sums
// interleaved, since each sum is a chain of dependent additions.
void four_norms(std::span<const float> v, size_t start, size_t bucket, float* norms) {
  if (bucket < 8 || v.size() - start < 4 * bucket) {
    for (size_t k = 0; k < 4 && start + k * bucket < v.size(); ++k)
      norms[k] =
          qsgd_norm(v.subspan(start + k * bucket, std::min(bucket, v.size() - start - k * bucket)));
    return;
  }
  const float* p = v.data() + start;
  __m256d acc[8];
  for (auto& a : acc) a = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 8 <= bucket; i += 8)
    for (int k = 0; k < 4; ++k) {
      const __m256d lo = _mm256_cvtps_pd(_mm_loadu_ps(p + k * bucket + i));
      const __m256d hi = _mm256_cvtps_pd(_mm_loadu_ps(p + k * bucket + i + 4));
      acc[2 * k] = _mm256_fmadd_pd(lo, lo, acc[2 * k]);  // = add(mul): the square is exact
      acc[2 * k + 1] = _mm256_fmadd_pd(hi, hi, acc[2 * k + 1]);
    }
  for (int k = 0; k < 4; ++k) {
    double sum[8];
    _mm256_storeu_pd(sum, acc[2 * k]);
    _mm256_storeu_pd(sum + 4, acc[2 * k + 1]);
    for (size_t j = i; j < bucket; ++j)
      sum[j % 8] += double(p[k * bucket + j]) * double(p[k * bucket + j]);
    norms[k] = float(std::sqrt(((sum[0] + sum[1]) + (sum[2] + sum[3])) +
                               ((sum[4] + sum[5]) + (sum[6] + sum[7]))));
  }
}

// Packs a bucket's fields at p: (len * w + 7) / 8 bytes, and may write zeros up to 8 bytes past
// them (the caller leaves room). g0: the bucket's first value's index in the vector. `ahead`: null,
// or len values the caller reads next (prefetched meanwhile, so the read of the input overlaps
// the arithmetic).
void quantize_bucket(const float* v, size_t len, float n, uint32_t s, uint32_t w, uint64_t g0,
                     Words& words, uint8_t* p, const float* ahead) {
  if (n == 0) {
    std::memset(p, 0, (len * w + 7) / 8);
    return;
  }
  const __m256 nv = _mm256_set1_ps(n), s16 = _mm256_set1_ps(float(s) * 0x1p16f);
  const __m256i sv_int = _mm256_set1_epi32(int(s)), low16 = _mm256_set1_epi32(0xFFFF);
  const __m256 zero = _mm256_setzero_ps();
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i first_bytes =
      _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i gather = _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1);
  const uint64_t field_bits = 0x0101010101010101ull * ((1u << w) - 1);
  size_t i = 0, avail = 0;
  while (i + 8 <= len) {
    const uint8_t* draw = words.at(g0 + i, avail);
    const size_t stop = i + std::min(len - i, avail) / 8 * 8;
    for (; i < stop; i += 8, draw += 16) {
      if (ahead) _mm_prefetch(reinterpret_cast<const char*>(ahead + i), _MM_HINT_T0);
      const __m256 x = _mm256_loadu_ps(v + i);
      // A = a * 2^16 exactly (fl(q * s) * 2^16 = fl(q * (s * 2^16)): q * s is normal or exact),
      // so with C = ceil(A): floor(a) = C >> 16, and u < a - floor(a) <=> U < (C & 0xFFFF) (the
      // integer U is below the real (a - floor(a)) * 2^16 iff below its ceiling; a ceiling of
      // 2^16 carries into C >> 16, which then is the level already)
      const __m256 big_a = _mm256_mul_ps(_mm256_div_ps(_mm256_and_ps(x, abs_mask), nv), s16);
      const __m256i c = _mm256_cvttps_epi32(_mm256_ceil_ps(big_a));  // NaN: 0x80000000
      const __m256i r =  // bytes 2j .. 2j + 1 into lane j
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(draw)));
      const __m256i up = _mm256_cmpgt_epi32(_mm256_and_si256(c, low16), r);
      // floor + 1 where up (-1); NaN's 0x8000 is above s, which the unsigned min makes s
      const __m256i level =
          _mm256_min_epu32(_mm256_sub_epi32(_mm256_srli_epi32(c, 16), up), sv_int);
      const __m256i neg = _mm256_castps_si256(_mm256_cmp_ps(x, zero, _CMP_LT_OQ));
      const __m256i field = _mm256_sub_epi32(_mm256_slli_epi32(level, 1), neg);  // sign: + 1
      const __m256i bytes =
          _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(field, first_bytes), gather);
      const uint64_t packed =
          _pext_u64(uint64_t(_mm_cvtsi128_si64(_mm256_castsi256_si128(bytes))), field_bits);
      std::memcpy(p, &packed, 8);
      p += w;
    }
  }
  if (i < len) {  // the rest (< 8 values) from a byte boundary: at most 56 bits
    uint64_t acc = 0;
    const uint8_t* draw = words.at(g0 + i, avail);
    for (size_t j = 0; i + j < len; ++j, draw += 2) {
      const uint32_t u = draw[0] | uint32_t(draw[1]) << 8;
      acc |= uint64_t(quantize_one(v[i + j], n, s, u)) << (j * w);
    }
    std::memcpy(p, &acc, 8);
  }
}

// Unpacks a bucket at p into o. Returns false when some level exceeds s (o is then partly
// written). Reads at most (len * w + 7) / 8 bytes from p: 8-byte loads only where `end` allows.
bool dequantize_bucket(const uint8_t* p, const uint8_t* end, size_t len, float n, uint32_t s,
                       uint32_t w, float* o) {
  alignas(32) float table[128] = {};  // a field's level has w - 1 <= 7 bits
  for (uint32_t l = 0; l <= s; ++l) table[l] = level_value(n, l, s);
  const __m256 table8 = _mm256_load_ps(table);
  const __m256i sv = _mm256_set1_epi32(int(s)), zero = _mm256_setzero_si256();
  const uint64_t field_bits = 0x0101010101010101ull * ((1u << w) - 1);
  __m256i bad = zero;
  size_t i = 0;
  for (; i + 8 <= len; i += 8, p += w) {
    uint64_t raw = 0;
    std::memcpy(&raw, p, end - p >= 8 ? 8 : w);
    const __m256i field =
        _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(_pdep_u64(raw, field_bits))));
    const __m256i level = _mm256_srli_epi32(field, 1);
    bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(level, sv));
    const __m256 m =
        s <= 7 ? _mm256_permutevar8x32_ps(table8, level) : _mm256_i32gather_ps(table, level, 4);
    const __m256i neg =
        _mm256_and_si256(_mm256_slli_epi32(field, 31), _mm256_cmpgt_epi32(level, zero));
    _mm256_storeu_ps(o + i, _mm256_xor_ps(m, _mm256_castsi256_ps(neg)));
  }
  bool ok = _mm256_testz_si256(bad, bad);
  if (i < len) {
    uint64_t raw = 0;
    std::memcpy(&raw, p, ((len - i) * w + 7) / 8);
    for (size_t j = 0; i < len; ++i, ++j) {
      const uint32_t field = uint32_t(raw >> (j * w)) & ((1u << w) - 1), l = field >> 1;
      ok = ok && l <= s;
      const float m = l <= s ? table[l] : 0.0f;
      o[i] = (field & 1) && l != 0 ? -m : m;
    }
  }
  if (!std::isfinite(n)) std::fill(o, o + len, std::numeric_limits<float>::quiet_NaN());
  return ok;
}

#endif  // FEDPAR_QSGD_AVX2

}  // namespace

std::vector<uint8_t> qsgd_draw_bytes(const CodecParams& p, const CodecContext& ctx, uint64_t first,
                                     size_t n) {
  std::vector<uint8_t> out(2 * n);
#if defined(FEDPAR_QSGD_AVX2)
  Words words(p.seed, ctx.client, uint32_t(ctx.round));
  for (size_t i = 0; i < n;) {
    size_t avail = 0;
    const uint8_t* b = words.at(first + i, avail);
    const size_t take = std::min(avail, n - i);
    std::memcpy(out.data() + 2 * i, b, 2 * take);
    i += take;
  }
#else
  const uint64_t k = splitmix64(splitmix64(p.seed) ^ fnv1a64("qsgd"));
  for (size_t j = 0; j < 2 * n; ++j) {
    const uint64_t byte = 2 * first + j, block = byte / 16;
    const auto w =
        philox4x32_10({uint32_t(block), uint32_t(block >> 32), ctx.client, uint32_t(ctx.round)},
                      {uint32_t(k), uint32_t(k >> 32)});
    out[j] = uint8_t(w[byte % 16 / 4] >> (8 * (byte % 4)));
  }
#endif
  return out;
}

namespace {

class Qsgd final : public Codec {
 public:
  explicit Qsgd(const CodecParams& p) : p_(p) {}
  CodecId id() const override { return CodecId::kQsgd; }

  void encode(std::span<const float> v, const CodecContext& ctx,
              std::vector<uint8_t>& out) const override {
#if defined(FEDPAR_QSGD_AVX2)
    const uint32_t s = p_.levels, w = qsgd_value_bits(s);
    const size_t total = qsgd_bytes(v.size(), p_.bucket, s);
    out.resize(total + 8);  // room for the last 8-byte store
    Words words(p_.seed, ctx.client, uint32_t(ctx.round));
    uint8_t* at = out.data();
    float norms[4];
    for (size_t start = 0, q = 0; start < v.size(); start += p_.bucket, ++q) {
      const size_t len = std::min<size_t>(p_.bucket, v.size() - start);
      if (q % 4 == 0) four_norms(v, start, p_.bucket, norms);
      const float n = norms[q % 4];
      std::memcpy(at, &n, 4);
      const size_t next = start + 4 * size_t(p_.bucket);  // the same place four buckets on
      quantize_bucket(v.data() + start, len, n, s, w, start, words, at + 4,
                      next + len <= v.size() ? v.data() + next : nullptr);
      at += 4 + (len * w + 7) / 8;
    }
    out.resize(total);
#else
    qsgd_encode_reference(p_, v, ctx, out);
#endif
  }

  std::string decode(std::span<const uint8_t> bytes, const CodecContext&,
                     std::span<float> out) const override {
#if defined(FEDPAR_QSGD_AVX2)
    const uint32_t s = p_.levels, w = qsgd_value_bits(s);
    if (bytes.size() != qsgd_bytes(out.size(), p_.bucket, s))
      return size_error(bytes.size(), out.size(), p_);
    const uint8_t* at = bytes.data();
    const uint8_t* const end = at + bytes.size();
    for (size_t start = 0, q = 0; start < out.size(); start += p_.bucket, ++q) {
      const size_t len = std::min<size_t>(p_.bucket, out.size() - start);
      float n;
      std::memcpy(&n, at, 4);
      if (negative_norm(n)) return norm_error(q, n);
      const size_t bits = len * w, nbytes = (bits + 7) / 8;
      if (!dequantize_bucket(at + 4, end, len, n, s, w, out.data() + start)) {
        for (size_t i = 0; i < len; ++i) {  // find the first bad level, as the reference does
          const size_t bit = i * w + 1;
          uint32_t l = 0;
          for (uint32_t k = 0; k + 1 < w; ++k)
            l |= uint32_t((at[4 + (bit + k) / 8] >> ((bit + k) % 8)) & 1) << k;
          if (l > s) return level_error(start + i, l, s);
        }
      }
      at += 4 + nbytes;
      if (bits % 8 && (at[-1] >> (bits % 8)) != 0) return padding_error(q);
    }
    return "";
#else
    return qsgd_decode_reference(p_, bytes, out);
#endif
  }

 private:
  CodecParams p_;
};

}  // namespace

std::unique_ptr<Codec> make_qsgd_codec(const CodecParams& p) {
  if (p.levels < 1 || p.levels > 127)
    throw Error(fmt::format("qsgd levels must be in 1..127, got {}", p.levels));
  if (p.bucket < 1) throw Error("qsgd bucket must be >= 1");
  return std::make_unique<Qsgd>(p);
}

}  // namespace fedpar
