// Counter-based random streams (Philox4x32-10) keyed by (seed, purpose, id, sub).
// Every random draw in fedpar comes from one of these, so the same seed gives the same bytes on
// any machine, whatever the thread count or the order in which streams are consumed.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace fedpar {

// The Philox4x32 bijection with 10 rounds (Salmon et al., SC'11). Pure: tested against the
// published known-answer vectors.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// 64-bit finalizer used to derive keys; stable across platforms.
uint64_t splitmix64(uint64_t x);
// FNV-1a over the bytes of `s`; names a stream's purpose ("init", "shuffle", ...).
uint64_t fnv1a64(std::string_view s);

class Rng {
 public:
  // `purpose` separates streams of different uses; `id` is a client, layer or sample index;
  // `sub` a round or epoch. Distinct tuples give independent streams.
  Rng(uint64_t seed, std::string_view purpose, uint32_t id = 0, uint32_t sub = 0);

  uint32_t next_u32();
  uint64_t next_u64();
  float uniform();                    // [0, 1), 24 random bits
  double uniform_double();            // [0, 1), 53 random bits
  float uniform(float lo, float hi);  // [lo, hi)
  double normal();                    // N(0, 1) by Box-Muller in double precision
  uint64_t below(uint64_t n);         // uniform on [0, n), unbiased (rejection)
  double gamma(double shape);         // Gamma(shape, 1), Marsaglia-Tsang; shape > 0
  // A draw from Dirichlet(alpha_1..alpha_n) (normalized gammas). Tiny alphas can underflow every
  // gamma to 0; then all mass goes to the largest gamma's log, so the result is still a simplex.
  std::vector<double> dirichlet(std::span<const double> alpha);

  // Moves a uniform random k-subset of v to its front (partial Fisher-Yates from the front,
  // drawing below(n - i) for i < k); the rest of v keeps what is left.
  template <typename T>
  void choose(std::span<T> v, size_t k) {
    for (size_t i = 0; i < k && i < v.size(); ++i) std::swap(v[i], v[i + below(v.size() - i)]);
  }

  // Fisher-Yates, drawing `below(i + 1)` for i from the end: a fixed, documented order.
  template <typename T>
  void shuffle(std::span<T> v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  void refill();
  std::array<uint32_t, 2> key_;
  std::array<uint32_t, 4> counter_;
  std::array<uint32_t, 4> block_{};
  int used_ = 4;
  bool has_spare_normal_ = false;
  double spare_normal_ = 0.0;
};

}  // namespace fedpar
