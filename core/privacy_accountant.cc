// The sampled Gaussian mechanism's RDP and its (epsilon, delta); see privacy_accountant.h.
#include "core/privacy_accountant.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"

namespace fedpar {
namespace {

constexpr int kLargestOrder = 256;

// log(exp(a) + exp(b)) without overflow
double log_add(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  const double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log1p(std::exp(lo - hi));
}

}  // namespace

double sampled_gaussian_rdp(double q, double z, int alpha) {
  FEDPAR_CHECK(q >= 0 && q <= 1 && z > 0 && alpha >= 2)
      << "q = " << q << ", z = " << z << ", order " << alpha;
  if (q == 0) return 0;
  if (q == 1) return double(alpha) / (2 * z * z);
  double log_a = -std::numeric_limits<double>::infinity();
  for (int k = 0; k <= alpha; ++k) {
    const double log_binomial =
        std::lgamma(alpha + 1.0) - std::lgamma(k + 1.0) - std::lgamma(alpha - k + 1.0);
    const double term = log_binomial + double(alpha - k) * std::log1p(-q) + k * std::log(q) +
                        (double(k) * k - k) / (2 * z * z);
    log_a = log_add(log_a, term);
  }
  return log_a / double(alpha - 1);
}

PrivacySpent privacy_spent(double q, double z, uint64_t rounds, double delta) {
  FEDPAR_CHECK(delta > 0 && delta < 1) << "delta = " << delta;
  if (rounds == 0 || q == 0) return {0, 0};
  PrivacySpent best{std::numeric_limits<double>::infinity(), 0};
  for (int a = 2; a <= kLargestOrder; ++a) {
    const double rdp = double(rounds) * sampled_gaussian_rdp(q, z, a);
    const double eps =
        rdp + std::log1p(-1.0 / a) - (std::log(delta) + std::log(double(a))) / (a - 1);
    if (eps < best.epsilon) best = {std::max(0.0, eps), a};
  }
  return best;
}

double noise_for_epsilon(double q, uint64_t rounds, double delta, double epsilon) {
  FEDPAR_CHECK(epsilon > 0) << "epsilon = " << epsilon;
  double lo = 1e-3, hi = 1e4;
  if (privacy_spent(q, hi, rounds, delta).epsilon > epsilon)
    throw Error(fmt::format(
        "no noise multiplier up to {:g} keeps epsilon at {:g} after {} rounds at q = {:g}, "
        "delta = {:g}: allow a larger epsilon or delta, or fewer rounds or clients a round",
        hi, epsilon, rounds, q, delta));
  if (privacy_spent(q, lo, rounds, delta).epsilon <= epsilon) return lo;
  while (hi - lo > 1e-4 * hi) {  // epsilon(lo) > target >= epsilon(hi)
    const double mid = std::sqrt(lo * hi);
    (privacy_spent(q, mid, rounds, delta).epsilon > epsilon ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace fedpar
