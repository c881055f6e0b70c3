// The accountant's RDP against the Renyi divergence integrated numerically, and its (epsilon,
// delta) against the Gaussian mechanism's exact curve.
#include "core/privacy_accountant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace fedpar {
namespace {

// E_{x ~ N(0, z^2)} [((1 - q) + q N(1, z^2)(x) / N(0, z^2)(x))^alpha], Simpson's rule on a fine
// grid: the definition the closed form expands with the binomial theorem.
double integrated_moment(double q, double z, int alpha) {
  const double lo = -40 * z, hi = 40 * z + alpha;  // the integrand peaks near x = alpha
  const int n = 400000;                            // even
  const double h = (hi - lo) / n;
  auto f = [&](double x) {
    const double p0 = std::exp(-x * x / (2 * z * z)) / (z * std::sqrt(2 * M_PI));
    const double ratio = std::exp((2 * x - 1) / (2 * z * z));
    return p0 * std::pow((1 - q) + q * ratio, alpha);
  };
  double s = f(lo) + f(hi);
  for (int i = 1; i < n; ++i) s += f(lo + i * h) * (i % 2 ? 4 : 2);
  return s * h / 3;
}

// The exact delta of the Gaussian mechanism (sensitivity 1, noise z) at epsilon (Balle and Wang
// 2018, theorem 8).
double gaussian_delta(double eps, double z) {
  auto phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  return phi(0.5 / z - eps * z) - std::exp(eps) * phi(-0.5 / z - eps * z);
}

TEST(PrivacyAccountant, ClosedFormIsTheIntegratedRenyiDivergence) {
  for (double q : {0.01, 0.1, 0.5})
    for (double z : {0.8, 1.0, 2.0})
      for (int alpha : {2, 3, 5, 8}) {
        const double integrated = std::log(integrated_moment(q, z, alpha)) / (alpha - 1);
        EXPECT_NEAR(sampled_gaussian_rdp(q, z, alpha), integrated, 1e-9 + 1e-7 * integrated)
            << "q " << q << " z " << z << " order " << alpha;
      }
}

TEST(PrivacyAccountant, WholeSamplingIsTheGaussianMechanism) {
  for (double z : {0.5, 1.0, 3.0})
    for (int alpha : {2, 10, 64})
      EXPECT_DOUBLE_EQ(sampled_gaussian_rdp(1, z, alpha), alpha / (2 * z * z));
  EXPECT_EQ(sampled_gaussian_rdp(0, 1, 4), 0);
  // the binomial sum with q just below 1 meets the closed form
  EXPECT_NEAR(sampled_gaussian_rdp(1 - 1e-12, 1.5, 6), 6 / (2 * 1.5 * 1.5), 1e-9);
}

// One round at q = 1 is the Gaussian mechanism, whose exact epsilon for a delta is known: the
// accountant's must be an upper bound (its delta at that epsilon no larger) and not a loose one.
TEST(PrivacyAccountant, EpsilonBoundsTheGaussianMechanismsExactCurve) {
  const double delta = 1e-5;
  for (double z : {0.7, 1.0, 2.0, 5.0}) {
    const PrivacySpent p = privacy_spent(1, z, 1, delta);
    EXPECT_LE(gaussian_delta(p.epsilon, z), delta) << "z " << z;
    double lo = 0, hi = 100;  // the exact epsilon: gaussian_delta falls with epsilon
    for (int i = 0; i < 200; ++i) {
      const double mid = (lo + hi) / 2;
      (gaussian_delta(mid, z) > delta ? lo : hi) = mid;
    }
    EXPECT_LE(p.epsilon, 1.35 * hi) << "z " << z << ": exact " << hi;
    EXPECT_GE(p.epsilon, hi) << "z " << z;
  }
}

// Abadi et al.'s MNIST DP-SGD (q = 256 / 60000, z = 1.1, 60 epochs: 14,063 steps, delta 1e-5),
// whose epsilon TensorFlow Privacy's RDP accountant gives as 3.01 under the classic conversion
// eps = min_a T rdp_a + log(1 / delta) / (a - 1) (Mironov 2017): the per-order RDP against it;
// the conversion used here (Balle et al. 2020) is tighter.
TEST(PrivacyAccountant, MatchesAPublishedDpSgdEpsilon) {
  const double q = 256.0 / 60000.0, z = 1.1, delta = 1e-5;
  const uint64_t steps = 14063;
  double classic = 1e300;
  for (int a = 2; a <= 256; ++a)
    classic = std::min(
        classic, double(steps) * sampled_gaussian_rdp(q, z, a) + std::log(1 / delta) / (a - 1));
  EXPECT_NEAR(classic, 3.01, 0.01);
  const double tighter = privacy_spent(q, z, steps, delta).epsilon;
  EXPECT_LT(tighter, classic);
  EXPECT_NEAR(tighter, 2.597, 0.002);
}

TEST(PrivacyAccountant, SamplingAmplifiesAndRoundsCompose) {
  const double delta = 1e-5;
  EXPECT_EQ(privacy_spent(0.1, 1, 0, delta).epsilon, 0);
  const double one = privacy_spent(0.1, 1, 1, delta).epsilon;
  const double hundred = privacy_spent(0.1, 1, 100, delta).epsilon;
  const double four_hundred = privacy_spent(0.1, 1, 400, delta).epsilon;
  EXPECT_LT(one, hundred);
  EXPECT_LT(hundred, four_hundred);
  EXPECT_LT(four_hundred, 2.5 * hundred);  // RDP composes to about sqrt(T) growth, not T
  EXPECT_LT(privacy_spent(0.01, 1, 100, delta).epsilon, hundred);  // fewer clients a round
  EXPECT_LT(privacy_spent(0.1, 2, 100, delta).epsilon, hundred);   // more noise
  EXPECT_GT(privacy_spent(0.1, 1, 100, 1e-8).epsilon, hundred);    // a smaller delta
  const PrivacySpent p = privacy_spent(0.1, 1, 100, delta);
  EXPECT_GE(p.order, 2);
  EXPECT_LE(p.order, 256);
}

// The noise a budget calls for: the least z whose epsilon is within it.
TEST(PrivacyAccountant, NoiseForAnEpsilonIsTheLeastThatKeepsIt) {
  const double q = 0.1, delta = 1e-5;
  for (double z : {0.7, 1.0, 2.5, 6.0}) {
    const double eps = privacy_spent(q, z, 100, delta).epsilon;
    const double found = noise_for_epsilon(q, 100, delta, eps);
    EXPECT_NEAR(found, z, 2e-4 * z) << "z " << z;
    EXPECT_LE(privacy_spent(q, found, 100, delta).epsilon, eps);
    EXPECT_GT(privacy_spent(q, found * (1 - 1e-3), 100, delta).epsilon, eps);
  }
  EXPECT_THROW(noise_for_epsilon(1, 1000000, 1e-12, 1e-6), Error);
}

}  // namespace
}  // namespace fedpar
