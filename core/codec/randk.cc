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
    // open addressing, linear probing; position j holds j unless the table says otherwise
    size_t cap = 64;
    while (cap < 4 * k) cap *= 2;
    const uint32_t kEmpty = std::numeric_limits<uint32_t>::max();  // not an index: d < 2^32
    std::vector<std::pair<uint32_t, uint32_t>> table(cap, {kEmpty, 0});
    const int shift = 64 - std::countr_zero(cap);
    auto slot = [&](uint32_t key) -> std::pair<uint32_t, uint32_t>& {
      size_t h = size_t((uint64_t(key) * 0x9E3779B97F4A7C15ull) >> shift);
      while (table[h].first != kEmpty && table[h].first != key) h = (h + 1) & (cap - 1);
      return table[h];
    };
    idx.resize(k);
    for (size_t i = 0; i < k; ++i) {
      const uint32_t j = uint32_t(i + rng.below(d - i));
      auto& si = slot(uint32_t(i));
      const uint32_t vi = si.first == kEmpty ? uint32_t(i) : si.second;
      auto& sj = slot(j);
      idx[i] = sj.first == kEmpty ? j : sj.second;  // position i is final after step i
      sj = {j, vi};                                 // position j now holds what was at i
    }
  }
  std::sort(idx.begin(), idx.end());
  return idx;
}

namespace {

// The index set of the last (d, round) asked for, shared by every call on this codec object: the
// server decodes many messages of one round. Guarded by a mutex, so concurrent calls are safe.
class RandK final : public Codec {
 public:
  explicit RandK(const CodecParams& p) : ratio_(p.ratio), seed_(p.seed) {}
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
    std::fill(out.begin(), out.end(), 0.0f);
    const uint8_t* p = bytes.data();
    for (uint32_t i : *idx) std::memcpy(&out[i], p, 4), p += 4;
    return "";
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
  mutable std::mutex mu_;
  mutable std::shared_ptr<const std::vector<uint32_t>> cached_;
  mutable size_t cached_d_ = 0;
  mutable uint64_t cached_round_ = 0;
};

}  // namespace

std::unique_ptr<Codec> make_randk_codec(const CodecParams& p) {
  if (!(p.ratio > 0 && p.ratio <= 1))
    throw Error(fmt::format("compression ratio must be in (0, 1] for randk, got {}", p.ratio));
  return std::make_unique<RandK>(p);
}

}  // namespace fedpar
