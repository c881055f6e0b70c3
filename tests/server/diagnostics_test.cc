// Update diagnostics against hand-computed values.
#include "server/diagnostics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fedpar {
namespace {

TEST(Diagnostics, NormsCosineAndDiversityByHand) {
  const std::vector<float> a = {3, 4}, b = {4, 3}, c = {-3, -4};
  // a, b: cos = 24/25; a, c: -1; b, c: -24/25 -> mean (24/25 - 1 - 24/25) / 3 = -1/3
  const std::vector<ClientUpdate> u = {{0, 0, 1, a}, {1, 0, 1, b}, {2, 0, 1, c}};
  const UpdateDiagnostics d = diagnose_updates(u);
  EXPECT_EQ(d.norms, (std::vector<double>{5, 5, 5}));
  EXPECT_NEAR(d.mean_pairwise_cosine.value(), -1.0 / 3.0, 1e-12);
  // sum = (4, 3): ||.||^2 = 25; sum of squared norms 75 -> diversity 3
  EXPECT_NEAR(d.gradient_diversity, 3.0, 1e-12);
}

TEST(Diagnostics, IdenticalUpdatesHaveCosineOneAndDiversityOneOverK) {
  const std::vector<float> a = {1, -2, 2};
  const std::vector<ClientUpdate> u = {{0, 0, 1, a}, {1, 0, 1, a}, {2, 0, 1, a}, {3, 0, 1, a}};
  const UpdateDiagnostics d = diagnose_updates(u);
  EXPECT_NEAR(d.mean_pairwise_cosine.value(), 1.0, 1e-12);
  EXPECT_NEAR(d.gradient_diversity, 0.25, 1e-12);
}

TEST(Diagnostics, DegenerateCases) {
  const std::vector<float> z = {0, 0}, a = {1, 0}, na = {-1, 0};
  EXPECT_EQ(diagnose_updates({}).norms.size(), 0u);
  const std::vector<ClientUpdate> one = {{0, 0, 1, a}, {1, 0, 1, z}};
  EXPECT_FALSE(diagnose_updates(one).mean_pairwise_cosine);  // one non-zero update: no pair
  const std::vector<ClientUpdate> cancel = {{0, 0, 1, a}, {1, 0, 1, na}};
  EXPECT_EQ(diagnose_updates(cancel).gradient_diversity, 0.0);  // the sum is zero
  EXPECT_NEAR(diagnose_updates(cancel).mean_pairwise_cosine.value(), -1.0, 1e-12);
}

TEST(Diagnostics, DistanceAndDriftByHand) {
  const std::vector<float> w = {1, 2, 2}, a = {1, 0, 0};
  const Distance d = distance(w, a);
  EXPECT_DOUBLE_EQ(d.max_abs, 2.0);
  EXPECT_DOUBLE_EQ(d.relative, std::sqrt(8.0));
  EXPECT_DOUBLE_EQ(distance(w, std::vector<float>{0, 0, 0}).relative,
                   3.0);  // zero reference: absolute
  // Deltas (2, 0) with 1 sample and (0, 2) with 3 -> average (0.5, 1.5); linear (1, 1) both -> (1,
  // 1).
  const std::vector<float> d0 = {2, 0}, d1 = {0, 2}, l = {1, 1};
  const std::vector<ClientUpdate> deltas = {{0, 0, 1, d0}, {1, 0, 3, d1}},
                                  linear = {{0, 0, 1, l}, {1, 0, 3, l}};
  EXPECT_NEAR(update_drift(deltas, linear, Weighting::kBySamples), std::sqrt(0.5) / std::sqrt(2.0),
              1e-7);
  EXPECT_EQ(update_drift(linear, linear, Weighting::kUniform), 0.0);
}

}  // namespace
}  // namespace fedpar
