// Philox4x32-10 and the stream wrapper; see rng.h.
#include "core/rng.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace fedpar {

namespace {
constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;
}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kPhiloxW0;
      k[1] += kPhiloxW1;
    }
    const uint64_t p0 = uint64_t{kPhiloxM0} * c[0];
    const uint64_t p1 = uint64_t{kPhiloxM1} * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1],
         uint32_t(p0)};
  }
  return c;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

Rng::Rng(uint64_t seed, std::string_view purpose, uint32_t id, uint32_t sub) {
  const uint64_t k = splitmix64(splitmix64(seed) ^ fnv1a64(purpose));
  key_ = {uint32_t(k), uint32_t(k >> 32)};
  counter_ = {0, 0, id, sub};  // words 0-1: block index; 2-3: the stream's id and sub
}

void Rng::refill() {
  block_ = philox4x32_10(counter_, key_);
  if (++counter_[0] == 0) ++counter_[1];
  used_ = 0;
}

uint32_t Rng::next_u32() {
  if (used_ == 4) refill();
  return block_[used_++];
}

uint64_t Rng::next_u64() {
  const uint64_t lo = next_u32();
  return lo | (uint64_t{next_u32()} << 32);
}

float Rng::uniform() { return float(next_u32() >> 8) * 0x1.0p-24f; }

double Rng::uniform_double() { return double(next_u64() >> 11) * 0x1.0p-53; }

float Rng::uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }

double Rng::normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double u1 = 0.0;
  while (u1 == 0.0) u1 = uniform_double();
  const double u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  spare_normal_ = r * std::sin(theta);
  has_spare_normal_ = true;
  return r * std::cos(theta);
}

uint64_t Rng::below(uint64_t n) {
  if (n <= 1) return 0;
  // Reject the top partial copy of [0, n) so every value is equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x = next_u64();
  while (x >= limit) x = next_u64();
  return x % n;
}

double Rng::gamma(double shape) {
  if (shape < 1.0) {
    // Boost: Gamma(a) = Gamma(a + 1) * U^(1/a). Kept in log space by dirichlet() for tiny a.
    const double u = std::max(uniform_double(), 0x1.0p-53);
    return gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform_double();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

std::vector<double> Rng::dirichlet(std::span<const double> alpha) {
  // Draw log-gammas: log Gamma(a) = log Gamma(a + 1) + log(U) / a, exact even when a is so small
  // that the gamma itself underflows; then normalize with the log-sum-exp trick.
  std::vector<double> logs(alpha.size());
  double top = -INFINITY;
  for (size_t i = 0; i < alpha.size(); ++i) {
    const double a = alpha[i];
    if (a < 1.0) {
      const double u = std::max(uniform_double(), 0x1.0p-53);
      logs[i] = std::log(gamma(a + 1.0)) + std::log(u) / a;
    } else {
      logs[i] = std::log(gamma(a));
    }
    top = std::max(top, logs[i]);
  }
  double sum = 0.0;
  for (double& l : logs) sum += (l = std::exp(l - top));
  for (double& l : logs) l /= sum;
  return logs;
}

}  // namespace fedpar
