// random-k with indices shared by (seed, round); see randk.h.
#include "core/codec/randk.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <string>

#include "core/check.h"
#include "core/rng.h"

namespace fedpar {

size_t randk_count(size_t d, double ratio) {
  if (d == 0) return 0;
  return std::min(d, size_t(std::max(1LL, std::llround(ratio * double(d)))));
}

float randk_scale(size_t d, size_t k, bool unbiased) {
  return unbiased && k > 0 ? float(double(d) / double(k)) : 1.0f;
}

namespace {

// Sorts distinct 32-bit indices increasingly: least significant digit first, 11 bits a pass, only
// as many passes as the largest index needs (std::sort's comparisons mispredict on random keys).
void sort_indices(std::vector<uint32_t>& v) {
  if (v.size() < 256) {
    std::sort(v.begin(), v.end());
    return;
  }
  const uint32_t top = *std::max_element(v.begin(), v.end());
  std::vector<uint32_t> tmp(v.size());
  for (int shift = 0; shift < 32 && (top >> shift) != 0; shift += 11) {
    uint32_t count[2048] = {};
    for (uint32_t x : v) ++count[(x >> shift) & 2047];
    uint32_t sum = 0;
    for (uint32_t& c : count) {
      const uint32_t here = c;
      c = sum;
      sum += here;
    }
    for (uint32_t x : v) tmp[count[(x >> shift) & 2047]++] = x;
    v.swap(tmp);
  }
}

}  // namespace

std::vector<uint32_t> randk_indices(uint64_t seed, uint64_t round, size_t d, size_t k) {
  FEDPAR_CHECK(d <= std::numeric_limits<uint32_t>::max()) << "randk: indices are 32-bit";
  k = std::min(k, d);
  Rng rng(seed, "randk", 0, uint32_t(round));
  std::vector<uint32_t> idx;
  if (k * 16 >= d) {  // a dense draw: Rng::choose itself on 0..d-1
    idx.resize(d);
    std::iota(idx.begin(), idx.end(), 0u);
    rng.choose(std::span<uint32_t>(idx), k);
    idx.resize(k);
  } else {  // the same swaps on a virtual 0..d-1: only the displaced entries are stored
    // The draws first (they do not depend on the swaps), so the table's cache misses can be
    // prefetched. Positions below k (each step i reads position i) sit in a plain array; those
    // at or above k in a hash table (open addressing, linear probing), holding j unless it says
    // otherwise.
    std::vector<uint32_t> js(k);
    for (size_t i = 0; i < k; ++i) js[i] = uint32_t(i + rng.below(d - i));
    std::vector<uint32_t> front(k);
    std::iota(front.begin(), front.end(), 0u);
    size_t cap = 64;
    while (cap < 2 * k) cap *= 2;
    const uint32_t kEmpty = std::numeric_limits<uint32_t>::max();  // not an index: d < 2^32
    std::vector<std::pair<uint32_t, uint32_t>> table(cap, {kEmpty, 0});
    const int shift = 64 - std::countr_zero(cap);
    auto home = [&](uint32_t key) {
      return size_t((uint64_t(key) * 0x9E3779B97F4A7C15ull) >> shift);
    };
    idx.resize(k);
    constexpr size_t kAhead = 16;
    for (size_t i = 0; i < k; ++i) {
      if (i + kAhead < k && js[i + kAhead] >= k) __builtin_prefetch(&table[home(js[i + kAhead])]);
      const uint32_t j = js[i], vi = front[i];
      if (j < k) {
        idx[i] = front[j];  // position i is final after step i
        front[j] = vi;      // position j now holds what was at i
      } else {
        size_t h = home(j);
        while (table[h].first != kEmpty && table[h].first != j) h = (h + 1) & (cap - 1);
        idx[i] = table[h].first == kEmpty ? j : table[h].second;
        table[h] = {j, vi};
      }
    }
  }
  sort_indices(idx);
  return idx;
}

namespace {

// The index set of the last (d, round) asked for, shared by every call on this codec object: the
// server decodes many messages of one round. Guarded by a mutex, so concurrent calls are safe.
class RandK final : public Codec {
 public:
  explicit RandK(const CodecParams& p)
      : ratio_(p.ratio), seed_(p.seed), unbiased_(p.randk_unbiased) {}
  CodecId id() const override { return CodecId::kRandK; }
  bool summable() const override { return true; }

  void encode(std::span<const float> v, const CodecContext& ctx,
              std::vector<uint8_t>& out) const override {
    const auto idx = indices(v.size(), ctx.round);
    out.resize(4 * idx->size());
    uint8_t* p = out.data();
    for (uint32_t i : *idx) std::memcpy(p, &v[i], 4), p += 4;
  }

  std::string decode(std::span<const uint8_t> bytes, const CodecContext& ctx,
                     std::span<float> out) const override {
    const size_t d = out.size();
    if (d > std::numeric_limits<uint32_t>::max())
      return fmt::format("randk: {} values: indices are 32-bit", d);
    const size_t k = randk_count(d, ratio_);
    if (bytes.size() != 4 * k)
      return fmt::format("randk holds {} bytes, expected {} for {} of {} values", bytes.size(),
                         4 * k, k, d);
    const auto idx = indices(d, ctx.round);
    const float scale = randk_scale(d, k, unbiased_);
    std::fill(out.begin(), out.end(), 0.0f);
    const uint8_t* p = bytes.data();
    for (uint32_t i : *idx) {
      float x;
      std::memcpy(&x, p, 4);
      p += 4;
      out[i] = x * scale;
    }
    return "";
  }

  // p - D(bytes) at the round's indices only: elsewhere D is +0, and x - (+0) is x.
  bool subtract_decoded(std::span<const uint8_t> bytes, const CodecContext& ctx, std::span<float> p,
                        std::vector<float>&) const override {
    const auto idx = indices(p.size(), ctx.round);
    FEDPAR_CHECK(bytes.size() == 4 * idx->size())
        << "randk cannot decode its own encoding: " << bytes.size() << " bytes for " << idx->size()
        << " values";
    const float scale = randk_scale(p.size(), idx->size(), unbiased_);
    uint32_t nonfinite = 0;
    const uint8_t* b = bytes.data();
    for (uint32_t i : *idx) {
      float x;
      std::memcpy(&x, b, 4);
      b += 4;
      x *= scale;
      nonfinite |= uint32_t(!std::isfinite(x));
      p[i] -= x;
    }
    return nonfinite == 0;
  }

 private:
  std::shared_ptr<const std::vector<uint32_t>> indices(size_t d, uint64_t round) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cached_ || cached_d_ != d || cached_round_ != round) {
      cached_ = std::make_shared<const std::vector<uint32_t>>(
          randk_indices(seed_, round, d, randk_count(d, ratio_)));
      cached_d_ = d;
      cached_round_ = round;
    }
    return cached_;
  }

  double ratio_;
  uint64_t seed_;
  bool unbiased_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const std::vector<uint32_t>> cached_;
  mutable size_t cached_d_ = 0;
  mutable uint64_t cached_round_ = 0;
};

}  // namespace

std::unique_ptr<Codec> make_randk_codec(const CodecParams& p) {
  if (!(p.ratio > 0 && p.ratio <= 1))
    throw Error(fmt::format("compression.ratio must be in (0, 1] for randk, got {}", p.ratio));
  return std::make_unique<RandK>(p);
}

}  // namespace fedpar
