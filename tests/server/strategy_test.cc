// Strategies on plain vectors: weights, order, the optimizer step, and refusals.
#include "server/strategy.h"

#include <gtest/gtest.h>

#include "core/check.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

// The blocked reduction adds each element's terms in the same order as whole passes per update,
// in double, so it must give exactly the reference's bits, across block edges.
TEST(Strategy, WeightedAverageMatchesPassPerUpdateInDouble) {
  const size_t n = 1300;  // two full blocks and a tail
  std::vector<std::vector<float>> v;
  std::vector<ClientUpdate> u;
  for (uint32_t k = 0; k < 5; ++k) v.push_back(testing::random_vector(n, 7 + k, -3.0f, 3.0f));
  for (uint32_t k = 0; k < 5; ++k)
    u.push_back({.client = k, .num_samples = 100 + 37 * k, .values = v[k]});
  for (Weighting w : {Weighting::kBySamples, Weighting::kUniform, Weighting::kSum}) {
    double total = 0;
    for (const auto& x : u) total += w == Weighting::kBySamples ? double(x.num_samples) : 1.0;
    if (w == Weighting::kSum) total = 1.0;
    std::vector<double> acc(n, 0.0);
    for (const auto& x : u)
      for (size_t i = 0; i < n; ++i)
        acc[i] += ((w == Weighting::kBySamples ? double(x.num_samples) : 1.0) / total) *
                  double(x.values[i]);
    EXPECT_EQ(weighted_average(u, w), std::vector<float>(acc.begin(), acc.end()));
  }
}

TEST(WeightedAverage, BySamplesAndUniform) {
  const std::vector<float> a = {1, 2}, b = {3, 4};
  const std::vector<ClientUpdate> u = {{.client = 0, .num_samples = 1, .values = a},
                                       {.client = 5, .num_samples = 3, .values = b}};
  EXPECT_EQ(weighted_average(u, Weighting::kBySamples), (std::vector<float>{2.5f, 3.5f}));
  EXPECT_EQ(weighted_average(u, Weighting::kUniform), (std::vector<float>{2.0f, 3.0f}));
}

TEST(WeightedAverage, RefusesWhatTheServerMustNeverReduce) {
  const std::vector<float> a = {1, 2}, b = {3};
  EXPECT_THROW(
      weighted_average(std::vector<ClientUpdate>{{.client = 0, .num_samples = 1, .values = a},
                                                 {.client = 1, .num_samples = 1, .values = b}},
                       Weighting::kBySamples),
      Error);  // wrong size
  EXPECT_THROW(
      weighted_average(std::vector<ClientUpdate>{{.client = 2, .num_samples = 1, .values = a},
                                                 {.client = 1, .num_samples = 1, .values = a}},
                       Weighting::kBySamples),
      Error);  // arrival order instead of client order
  EXPECT_THROW(
      weighted_average(std::vector<ClientUpdate>{{.client = 0, .num_samples = 0, .values = a}},
                       Weighting::kBySamples),
      Error);  // no weight at all
}

TEST(Strategies, GradientAveragingStepsTheServerOptimizer) {
  LrSchedule lr{.base_lr = 0.5f};
  auto s = make_gradient_averaging(Weighting::kBySamples, lr, {.momentum = 0.5f});
  EXPECT_EQ(s->name(), "gradient");
  std::vector<float> params = {1.0f, 1.0f};
  const std::vector<float> g0 = {2.0f, 0.0f}, g1 = {0.0f, 4.0f};
  const std::vector<ClientUpdate> u = {{.client = 0, .num_samples = 1, .values = g0},
                                       {.client = 1, .num_samples = 1, .values = g1}};
  s->apply(u, params);  // avg g = (1, 2); v = g; w = 1 - 0.5 * g
  EXPECT_EQ(params, (std::vector<float>{0.5f, 0.0f}));
  s->apply(u, params);  // v = 0.5 v + g = (1.5, 3); w -= 0.5 v
  EXPECT_EQ(params, (std::vector<float>{-0.25f, -1.5f}));
}

TEST(Strategies, MajorityVoteStepsAlongTheVotedSignsOneVoteEach) {
  auto s = make_majority_vote(LrSchedule{.base_lr = 0.25f}, {});
  EXPECT_EQ(s->name(), "majority");
  std::vector<float> params = {1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<float> a = {1, -1, 1, 1}, b = {1, -1, -1, 1}, c = {-1, 1, -1, 1};
  // n_k do not weigh: client 2's 1000 samples still count as one vote
  s->apply(std::vector<ClientUpdate>{{.client = 0, .num_samples = 1, .values = a},
                                     {.client = 1, .num_samples = 1, .values = b},
                                     {.client = 2, .num_samples = 1000, .values = c}},
           params);  // votes (1, -1, -1, 3) -> signs (1, -1, -1, 1)
  EXPECT_EQ(params, (std::vector<float>{0.75f, 1.25f, 1.25f, 0.75f}));
  s->apply(std::vector<ClientUpdate>{{.client = 0, .num_samples = 1, .values = a},
                                     {.client = 2, .num_samples = 1, .values = c}},
           params);  // votes (0, 0, 0, 2): a tie moves nothing
  EXPECT_EQ(params, (std::vector<float>{0.75f, 1.25f, 1.25f, 0.5f}));
}

TEST(Strategies, ModelAveragingAddsTheScaledMeanDelta) {
  auto s = make_model_averaging(Weighting::kBySamples, {.lr = 0.5f});
  EXPECT_EQ(s->name(), "model");
  std::vector<float> params = {1.0f, 1.0f};
  const std::vector<float> d0 = {-2.0f, 0.0f}, d1 = {2.0f, 4.0f};
  s->apply(std::vector<ClientUpdate>{{.client = 0, .num_samples = 3, .values = d0},
                                     {.client = 1, .num_samples = 1, .values = d1}},
           params);  // mean delta = (-1, 1); w += 0.5 * mean
  EXPECT_EQ(params, (std::vector<float>{0.5f, 1.5f}));
}

// DP-FedAvg's aggregate: each update clipped to S, weighed by its scale (1 / K) and summed, then
// N(0, stddev^2) on every coordinate from the run's seed and the round.
TEST(Strategies, NoisedAveragingClipsSumsAndAddsTheRoundsNoise) {
  constexpr size_t n = 100000;
  constexpr double stddev = 0.1;
  const std::vector<float> big(n, 0.01f), small(n, 0.001f);  // norms 3.16 and 0.316
  // unequal scales: a strategy that took the plain mean would miss
  const std::vector<ClientUpdate> u = {
      {.client = 0, .round = 7, .num_samples = 9, .values = big, .scale = 0.25},
      {.client = 1, .round = 7, .num_samples = 1, .values = small, .scale = 0.75}};
  auto noised = [&](uint64_t seed) {
    auto s = make_model_averaging(Weighting::kSum, {.lr = 1.0f},
                                  {.rule = AggregateRule::kMean, .clip_norm = 1.0},
                                  {.stddev = stddev, .seed = seed});
    std::vector<float> params(n, 0.0f);
    s->apply(u, params);
    return params;
  };
  const std::vector<float> a = noised(3);
  const double clean = 0.25 * 0.01 / (0.01 * std::sqrt(double(n))) + 0.75 * 0.001;
  double mean = 0, sq = 0;
  for (float x : a) mean += (x - clean) / n, sq += (x - clean) * (x - clean) / n;
  EXPECT_NEAR(mean, 0, 5 * stddev / std::sqrt(double(n)));
  EXPECT_NEAR(std::sqrt(sq - mean * mean), stddev, 0.01 * stddev);
  EXPECT_EQ(noised(3), a) << "the noise comes from the seed and the round";
  EXPECT_NE(noised(4), a);
  // a round with no update: the noise alone, the same draw as that round's with updates
  auto s = make_model_averaging(Weighting::kSum, {.lr = 1.0f}, {.clip_norm = 1.0},
                                {.stddev = stddev, .seed = 3});
  std::vector<float> alone(n, 0.0f);
  s->apply_noise_only(7, alone);
  for (size_t i = 0; i < n; i += 9973) EXPECT_NEAR(alone[i], a[i] - clean, 1e-6) << i;
  std::vector<float> next(n, 0.0f);
  s->apply_noise_only(8, next);
  EXPECT_NE(next, alone) << "another round, other noise";
  auto quiet = make_gradient_averaging(Weighting::kSum, LrSchedule{.base_lr = 1.0f}, {});
  EXPECT_THROW(quiet->apply_noise_only(1, next), Error);
}

}  // namespace
}  // namespace fedpar
