// top-k by magnitude per bucket; see topk.h and docs/definitions.md#compression.
#include "core/codec/topk.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "core/check.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace fedpar {

size_t topk_bucket_k(size_t len, double ratio) {
  if (len == 0) return 0;
  const long long k = std::llround(ratio * double(len));
  return std::min(len, size_t(std::max(1LL, k)));
}

size_t topk_total(size_t d, double ratio, uint32_t bucket) {
  if (d == 0) return 0;
  const size_t b = bucket ? bucket : d;
  const size_t full = d / b, tail = d % b;
  return full * topk_bucket_k(b, ratio) + topk_bucket_k(tail, ratio);
}

namespace {

// Buckets shorter than this take the nth_element path: a 2048-bin histogram costs more there.
constexpr size_t kSortBelow = 4096;
constexpr uint32_t kBins1 = 2048;  // level 1: bits 20..30 of the magnitude
constexpr uint32_t kBins2 = 1024;  // levels 2 and 3: bits 10..19, then 0..9

inline uint32_t key_at(const float* v, size_t i) {
  uint32_t x;
  std::memcpy(&x, v + i, 4);
  return x & 0x7FFFFFFFu;  // |v| as bits: monotone in |v|, NaN above Inf
}

struct Scratch {
  std::vector<uint32_t> hist;  // four interleaved level-1 histograms
  std::vector<uint32_t> cand;  // the keys still in the running
};

// The selection: every key above `key`, and the first `equal` (in index order) at `key`.
struct Threshold {
  uint32_t key;
  size_t equal;
};

// The digit holding the r-th largest (r >= 1) of the counts h[0..bins); r becomes its rank there.
uint32_t pick_digit(const uint32_t* h, uint32_t bins, size_t& r) {
  for (uint32_t dg = bins; dg-- > 1;) {
    if (h[dg] >= r) return dg;
    r -= h[dg];
  }
  return 0;
}

// Keeps in c the keys whose digit (key >> shift) & mask is `dg`.
void keep_digit(std::vector<uint32_t>& c, int shift, uint32_t mask, uint32_t dg) {
  size_t m = 0;
  for (uint32_t key : c) {
    c[m] = key;
    m += ((key >> shift) & mask) == dg;
  }
  c.resize(m);
}

// Radix select on the 31 magnitude bits of v[0..n), 0 < k < n.
Threshold radix_threshold(const float* v, size_t n, size_t k, Scratch& s) {
  s.hist.assign(4 * kBins1, 0);
  uint32_t* h = s.hist.data();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {  // four histograms: repeated bins do not wait on each other
    ++h[key_at(v, i) >> 20];
    ++h[kBins1 + (key_at(v, i + 1) >> 20)];
    ++h[2 * kBins1 + (key_at(v, i + 2) >> 20)];
    ++h[3 * kBins1 + (key_at(v, i + 3) >> 20)];
  }
  for (; i < n; ++i) ++h[key_at(v, i) >> 20];
  for (uint32_t b = 0; b < kBins1; ++b)
    h[b] += h[kBins1 + b] + h[2 * kBins1 + b] + h[3 * kBins1 + b];
  size_t r = k;
  const uint32_t d1 = pick_digit(h, kBins1, r);

  // the keys whose top digit is d1
  s.cand.resize(h[d1] + 1);
  uint32_t* c = s.cand.data();
  size_t m = 0;
  i = 0;
#if defined(__AVX2__)
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), want = _mm256_set1_epi32(int(d1));
  for (; i + 8 <= n; i += 8) {
    const __m256i key =
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i)), abs_mask);
    uint32_t hit = uint32_t(_mm256_movemask_ps(
        _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_srli_epi32(key, 20), want))));
    while (hit) {
      c[m++] = key_at(v, i + size_t(__builtin_ctz(hit)));
      hit &= hit - 1;
    }
  }
#endif
  for (; i < n; ++i) {
    const uint32_t key = key_at(v, i);
    c[m] = key;
    m += (key >> 20) == d1;
  }
  s.cand.resize(m);

  uint32_t h2[kBins2];
  std::fill(h2, h2 + kBins2, 0u);
  for (uint32_t key : s.cand) ++h2[(key >> 10) & 1023];
  const uint32_t d2 = pick_digit(h2, kBins2, r);
  keep_digit(s.cand, 10, 1023, d2);

  std::fill(h2, h2 + kBins2, 0u);
  for (uint32_t key : s.cand) ++h2[key & 1023];
  const uint32_t d3 = pick_digit(h2, kBins2, r);
  return {(d1 << 20) | (d2 << 10) | d3, r};
}

// nth_element on a copy of the keys, 0 < k < n.
Threshold sort_threshold(const float* v, size_t n, size_t k, Scratch& s) {
  s.cand.resize(n);
  for (size_t i = 0; i < n; ++i) s.cand[i] = key_at(v, i);
  std::nth_element(s.cand.begin(), s.cand.begin() + ptrdiff_t(k - 1), s.cand.end(),
                   std::greater<uint32_t>());
  const uint32_t t = s.cand[k - 1];
  size_t above = 0;
  for (size_t i = 0; i < n; ++i) above += key_at(v, i) > t;
  return {t, k - above};
}

// Appends base + i for the k selected i of v[0..n), increasing.
void select_bucket(const float* v, size_t n, size_t k, uint32_t base, TopkMethod method, Scratch& s,
                   std::vector<uint32_t>& idx) {
  if (k == 0) return;
  if (k >= n) {
    for (size_t i = 0; i < n; ++i) idx.push_back(base + uint32_t(i));
    return;
  }
  const bool radix =
      method == TopkMethod::kRadix || (method == TopkMethod::kAuto && n >= kSortBelow);
  const Threshold t = radix ? radix_threshold(v, n, k, s) : sort_threshold(v, n, k, s);
  size_t equal = t.equal, taken = 0;
  size_t i = 0;
#if defined(__AVX2__)
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i below = _mm256_set1_epi32(int(t.key) - 1);  // key >= t.key as signed compare
  for (; i + 8 <= n && taken < k; i += 8) {
    const __m256i key =
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i)), abs_mask);
    uint32_t hit =
        uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(key, below))));
    while (hit) {
      const size_t j = i + size_t(__builtin_ctz(hit));
      hit &= hit - 1;
      const uint32_t kj = key_at(v, j);
      if (kj > t.key || (equal > 0 && (--equal, true))) {
        idx.push_back(base + uint32_t(j));
        ++taken;
      }
    }
  }
#endif
  for (; i < n && taken < k; ++i) {
    const uint32_t kj = key_at(v, i);
    if (kj > t.key || (kj == t.key && equal > 0 && (--equal, true))) {
      idx.push_back(base + uint32_t(i));
      ++taken;
    }
  }
}

uint8_t* write_varint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = uint8_t(v | 0x80);
    v >>= 7;
  }
  *p++ = uint8_t(v);
  return p;
}

// A LEB128 varint as this codec writes it: at most 64 bits, no needless trailing zero group.
// Returns null, or why the bytes from `p` are not one (p then is unspecified).
const char* read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0;; shift += 7) {
    if (p == end) return "the bytes end inside a varint";
    const uint8_t byte = *p++;
    if (shift == 63 && byte > 1) return "a varint longer than 64 bits";
    v |= uint64_t(byte & 0x7F) << shift;
    if (!(byte & 0x80)) {
      if (byte == 0 && shift > 0) return "an over-long varint (a needless zero group)";
      return nullptr;
    }
  }
}

class TopK final : public Codec {
 public:
  explicit TopK(const CodecParams& p) : ratio_(p.ratio), bucket_(p.topk_bucket) {}
  CodecId id() const override { return CodecId::kTopK; }

  void encode(std::span<const float> v, const CodecContext&,
              std::vector<uint8_t>& out) const override {
    const size_t d = v.size();
    FEDPAR_CHECK(d <= std::numeric_limits<uint32_t>::max())
        << "topk: " << d << " values: indices are 32-bit";
    const size_t total = topk_total(d, ratio_, bucket_);
    std::vector<uint32_t> idx;
    idx.reserve(total);
    Scratch s;
    const size_t b = bucket_ ? bucket_ : std::max<size_t>(d, 1);
    for (size_t start = 0; start < d; start += b) {
      const size_t len = std::min(b, d - start);
      select_bucket(v.data() + start, len, topk_bucket_k(len, ratio_), uint32_t(start),
                    TopkMethod::kAuto, s, idx);
    }
    FEDPAR_CHECK(idx.size() == total) << "topk: selected " << idx.size() << " of " << total;
    out.resize(10 + 9 * total);  // the most the varints and values can take
    uint8_t* p = write_varint(out.data(), total);
    for (size_t j = 0; j < total; ++j) p = write_varint(p, idx[j] - (j ? idx[j - 1] : 0));
    for (size_t j = 0; j < total; ++j, p += 4) std::memcpy(p, &v[idx[j]], 4);
    out.resize(size_t(p - out.data()));
  }

  std::string decode(std::span<const uint8_t> bytes, const CodecContext&,
                     std::span<float> out) const override {
    uint64_t count = 0;
    if (std::string why = check(bytes, out.size(), count); !why.empty()) return why;
    std::fill(out.begin(), out.end(), 0.0f);
    each(bytes, count, [&](uint64_t at, const uint8_t* val) { std::memcpy(&out[at], val, 4); });
    return "";
  }

  // p - D(bytes) at the sent indices only: elsewhere D is +0, and x - (+0) is x.
  bool subtract_decoded(std::span<const uint8_t> bytes, const CodecContext&, std::span<float> p,
                        std::vector<float>&) const override {
    uint64_t count = 0;
    const std::string why = check(bytes, p.size(), count);
    FEDPAR_CHECK(why.empty()) << "topk cannot decode its own encoding: " << why;
    uint32_t nonfinite = 0;
    each(bytes, count, [&](uint64_t at, const uint8_t* val) {
      float x;
      std::memcpy(&x, val, 4);
      nonfinite |= uint32_t(!std::isfinite(x));
      p[at] -= x;
    });
    return nonfinite == 0;
  }

 private:
  // Why `bytes` is not an encoding of d values, or "" (count: the number of indices).
  std::string check(std::span<const uint8_t> bytes, size_t d, uint64_t& count) const {
    const uint64_t expected = topk_total(d, ratio_, bucket_);
    const uint8_t* const begin = bytes.data();
    const uint8_t* const end = begin + bytes.size();
    const uint8_t* p = begin;
    if (const char* why = read_varint(p, end, count)) return fmt::format("topk: count: {}", why);
    if (count != expected)
      return fmt::format("topk holds a count of {}, expected {} for {} values", count, expected, d);
    // First pass: the indices are valid and each bucket has its k; nothing is written yet.
    const uint64_t b = bucket_ ? bucket_ : std::max<uint64_t>(d, 1);
    const uint64_t buckets = d ? (d + b - 1) / b : 0;
    auto bucket_k = [&](uint64_t q) {
      return topk_bucket_k(size_t(std::min(b, d - q * b)), ratio_);
    };
    uint64_t prev = 0, cur = 0, in_cur = 0;
    for (uint64_t j = 0; j < count; ++j) {
      uint64_t gap = 0;
      if (const char* why = read_varint(p, end, gap))
        return fmt::format("topk: index {} of {}: {}", j, count, why);
      if (j > 0 && gap == 0)
        return fmt::format("topk: index {} after {}: indices must increase", prev, prev);
      if (j == 0 ? gap >= d : gap > d - 1 - prev)  // prev < d: checked on the way
        return j == 0
                   ? fmt::format("topk: index {} is past the {} values", gap, d)
                   : fmt::format("topk: index gap {} after {} is past the {} values", gap, prev, d);
      const uint64_t at = j == 0 ? gap : prev + gap;
      const uint64_t q = at / b;
      if (q != cur) {
        if (in_cur != bucket_k(cur))
          return fmt::format("topk: bucket {} holds {} indices, expected {}", cur, in_cur,
                             bucket_k(cur));
        if (q != cur + 1)
          return fmt::format("topk: bucket {} holds 0 indices, expected {}", cur + 1,
                             bucket_k(cur + 1));
        cur = q;
        in_cur = 0;
      }
      if (++in_cur > bucket_k(cur))
        return fmt::format("topk: bucket {} holds more than {} indices", cur, bucket_k(cur));
      prev = at;
    }
    if (count > 0 && (cur + 1 != buckets || in_cur != bucket_k(cur)))
      return fmt::format("topk: bucket {} holds {} indices, expected {}", cur, in_cur,
                         bucket_k(cur));
    const size_t want = size_t(p - begin) + 4 * count;
    if (bytes.size() != want)
      return fmt::format("topk holds {} bytes, expected {} for {} indices", bytes.size(), want,
                         count);
    return "";
  }

  // Calls f(index, its value's 4 bytes) for the `count` indices of a checked encoding, in order.
  template <class F>
  static void each(std::span<const uint8_t> bytes, uint64_t count, F f) {
    const uint8_t* const end = bytes.data() + bytes.size();
    const uint8_t* p = bytes.data();
    uint64_t skip = 0;
    read_varint(p, end, skip);
    const uint8_t* val = end - 4 * count;
    uint64_t at = 0;
    for (uint64_t j = 0; j < count; ++j, val += 4) {
      uint64_t gap = 0;
      read_varint(p, end, gap);
      at = j == 0 ? gap : at + gap;
      f(at, val);
    }
  }

  double ratio_;
  uint32_t bucket_;
};

}  // namespace

void topk_select(std::span<const float> v, size_t k, std::vector<uint32_t>& idx,
                 TopkMethod method) {
  FEDPAR_CHECK(v.size() <= std::numeric_limits<uint32_t>::max()) << "topk: indices are 32-bit";
  Scratch s;
  select_bucket(v.data(), v.size(), std::min(k, v.size()), 0, method, s, idx);
}

std::unique_ptr<Codec> make_topk_codec(const CodecParams& p) {
  if (!(p.ratio > 0 && p.ratio <= 1))
    throw Error(fmt::format("compression.ratio must be in (0, 1] for topk, got {}", p.ratio));
  return std::make_unique<TopK>(p);
}

}  // namespace fedpar
