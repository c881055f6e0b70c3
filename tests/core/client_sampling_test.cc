// The client sampling schemes against their definitions: over every draw a round can make (all
// K-subsets, or all ordered K-draws with their probabilities), Li et al.'s two schemes aggregate
// to the full-participation average sum_k p_k v_k in expectation and FedAvg's renormalised one
// does not when the n_k differ; the seeded sampler draws as each scheme says.
#include "core/client_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "core/check.h"
#include "core/weighted_average.h"

namespace fedpar {
namespace {

// Five clients of unequal sizes, each with a one-value update.
const std::vector<uint64_t> kSizes{10, 20, 30, 15, 25};
const std::vector<float> kValues{1.0f, -2.0f, 3.0f, 0.5f, 7.0f};

double full_average() {
  double sum = 0;
  for (size_t c = 0; c < kSizes.size(); ++c) sum += double(kSizes[c]) / 100.0 * kValues[c];
  return sum;
}

// The aggregate of the clients in `drawn` (sorted, each once) with `draws` each: a scheme's
// weights summed as given, or uniform's renormalised by samples.
double aggregate(ClientSampling s, const std::vector<uint32_t>& drawn,
                 const std::vector<uint32_t>& draws, size_t k) {
  std::vector<ClientUpdate> u;
  for (size_t i = 0; i < drawn.size(); ++i) {
    const uint32_t c = drawn[i];
    u.push_back({.client = c, .num_samples = kSizes[c], .values = {&kValues[c], 1}});
    if (s != ClientSampling::kUniform) u.back().scale = sampled_weight(s, kSizes, c, draws[i], k);
  }
  return weighted_average(
      u, s == ClientSampling::kUniform ? Weighting::kBySamples : Weighting::kSum)[0];
}

// Every K-subset of the five clients, each as likely as any other.
double expected_over_subsets(ClientSampling s, size_t k) {
  double sum = 0;
  int subsets = 0;
  for (uint32_t mask = 0; mask < 32; ++mask) {
    if (size_t(__builtin_popcount(mask)) != k) continue;
    std::vector<uint32_t> drawn;
    for (uint32_t c = 0; c < 5; ++c)
      if (mask >> c & 1) drawn.push_back(c);
    sum += aggregate(s, drawn, std::vector<uint32_t>(k, 1), k);
    ++subsets;
  }
  return sum / subsets;
}

TEST(ClientSampling, ScaledIsUnbiasedWhereRenormalisingIsNot) {
  for (size_t k : {1, 2, 3, 4}) {
    EXPECT_NEAR(expected_over_subsets(ClientSampling::kScaled, k), full_average(), 1e-6) << k;
    // FedAvg's renormalised average leans towards the small clients' updates in a small round
    EXPECT_GT(std::abs(expected_over_subsets(ClientSampling::kUniform, k) - full_average()), 0.02)
        << k;
  }
}

TEST(ClientSampling, ProportionalIsUnbiased) {
  for (size_t k : {1, 2, 3}) {
    double expected = 0, probability = 0;
    // every ordered sequence of k draws, with its probability prod p_c
    std::function<void(size_t, std::vector<uint32_t>&, double)> walk =
        [&](size_t d, std::vector<uint32_t>& times, double p) {
          if (d == k) {
            std::vector<uint32_t> drawn, draws;
            for (uint32_t c = 0; c < 5; ++c)
              if (times[c] > 0) drawn.push_back(c), draws.push_back(times[c]);
            expected += p * aggregate(ClientSampling::kProportional, drawn, draws, k);
            probability += p;
            return;
          }
          for (uint32_t c = 0; c < 5; ++c) {
            ++times[c];
            walk(d + 1, times, p * double(kSizes[c]) / 100.0);
            --times[c];
          }
        };
    std::vector<uint32_t> times(5, 0);
    walk(0, times, 1.0);
    EXPECT_NEAR(probability, 1.0, 1e-12);
    EXPECT_NEAR(expected, full_average(), 1e-6) << k;
  }
}

// Every subset S of the five clients, with its probability q^|S| (1 - q)^(5 - |S|).
TEST(ClientSampling, PoissonIsUnbiased) {
  for (size_t k : {1, 2, 3, 4}) {
    const double q = double(k) / 5.0;
    double expected = 0, probability = 0;
    for (uint32_t mask = 1; mask < 32; ++mask) {  // the empty round aggregates 0
      std::vector<uint32_t> drawn;
      for (uint32_t c = 0; c < 5; ++c)
        if (mask >> c & 1) drawn.push_back(c);
      const double p =
          std::pow(q, double(drawn.size())) * std::pow(1 - q, 5.0 - double(drawn.size()));
      expected += p * aggregate(ClientSampling::kPoisson, drawn, std::vector<uint32_t>(5, 1), k);
      probability += p;
    }
    EXPECT_NEAR(probability + std::pow(1 - q, 5.0), 1.0, 1e-12);
    EXPECT_NEAR(expected, full_average(), 1e-6) << k;
  }
  // under weighting = "uniform" (raw weights 1) each update weighs 1 / K: DP-FedAvg's fixed
  // denominator q N
  const std::vector<uint64_t> ones(5, 1);
  EXPECT_DOUBLE_EQ(sampled_weight(ClientSampling::kPoisson, ones, 3, 1, 2), 0.5);
}

TEST(ClientSampling, PoissonFlipsOneCoinPerClient) {
  constexpr int kRounds = 20000;
  constexpr size_t k = 2;  // q = 0.4
  std::vector<double> asked(5, 0);
  std::vector<int> counts(6, 0);
  for (int r = 0; r < kRounds; ++r) {
    const RoundSample p = sample_round(ClientSampling::kPoisson, kSizes, k, 7, r);
    EXPECT_TRUE(std::is_sorted(p.clients.begin(), p.clients.end()));
    EXPECT_EQ(p.draws, std::vector<uint32_t>(p.clients.size(), 1));
    ++counts[p.clients.size()];
    for (size_t i = 0; i < p.clients.size(); ++i) {
      ++asked[p.clients[i]];
      EXPECT_DOUBLE_EQ(p.weights[i], double(kSizes[p.clients[i]]) / 100.0 * 5.0 / 2.0);
    }
  }
  for (size_t c = 0; c < 5; ++c)
    EXPECT_NEAR(asked[c], kRounds * 0.4, 5 * std::sqrt(kRounds * 0.4 * 0.6)) << c;
  // a round's count is Binomial(5, 0.4): none in 7.8% of rounds, all five in 1%
  EXPECT_NEAR(counts[0], kRounds * 0.07776, 5 * std::sqrt(kRounds * 0.07776));
  EXPECT_NEAR(counts[5], kRounds * 0.01024, 5 * std::sqrt(kRounds * 0.01024));
}

TEST(ClientSampling, ScaledWithEveryClientAskedIsTheRenormalisedAverageBitForBit) {
  const std::vector<uint32_t> all{0, 1, 2, 3, 4}, once(5, 1);
  for (uint32_t c = 0; c < 5; ++c)
    EXPECT_EQ(sampled_weight(ClientSampling::kScaled, kSizes, c, 1, 5), double(kSizes[c]) / 100.0);
  EXPECT_EQ(aggregate(ClientSampling::kScaled, all, once, 5),
            aggregate(ClientSampling::kUniform, all, once, 5));
  EXPECT_THROW(sampled_weight(ClientSampling::kUniform, kSizes, 0, 1, 5), Error);
}

TEST(ClientSampling, TheSamplerDrawsAsTheSchemeSays) {
  constexpr int kRounds = 20000;
  constexpr size_t k = 3;
  std::vector<double> proportional(5, 0), uniform(5, 0);
  for (int r = 0; r < kRounds; ++r) {
    const RoundSample p = sample_round(ClientSampling::kProportional, kSizes, k, 7, r);
    EXPECT_EQ(std::accumulate(p.draws.begin(), p.draws.end(), 0u), k);
    ASSERT_EQ(p.clients.size(), p.draws.size());
    EXPECT_TRUE(std::is_sorted(p.clients.begin(), p.clients.end()));
    EXPECT_EQ(std::adjacent_find(p.clients.begin(), p.clients.end()), p.clients.end());
    for (size_t i = 0; i < p.clients.size(); ++i) proportional[p.clients[i]] += p.draws[i];
    const RoundSample u = sample_round(ClientSampling::kUniform, kSizes, k, 7, r);
    EXPECT_EQ(u.clients.size(), k);
    EXPECT_EQ(u.draws, std::vector<uint32_t>(k, 1));
    EXPECT_EQ(sample_round(ClientSampling::kScaled, kSizes, k, 7, r).clients, u.clients)
        << "scaled asks uniform's clients, so the two schemes pair round by round";
    for (uint32_t c : u.clients) ++uniform[c];
  }
  for (size_t c = 0; c < 5; ++c) {
    // draws of client c: Binomial(K rounds, p_c); asks under uniform: K/N a round
    const double p = double(kSizes[c]) / 100.0, n = double(k) * kRounds;
    EXPECT_NEAR(proportional[c], n * p, 5 * std::sqrt(n * p * (1 - p))) << c;
    EXPECT_NEAR(uniform[c], kRounds * 0.6, 5 * std::sqrt(kRounds * 0.6 * 0.4)) << c;
  }
  EXPECT_NE(sample_round(ClientSampling::kUniform, kSizes, k, 8, 0).clients,
            sample_round(ClientSampling::kUniform, kSizes, k, 7, 0).clients)
      << "another seed, another draw (this pair differs)";
}

// Among candidates (a round's available clients): the draw stays among them, p_k and N are
// theirs (so scaled is unbiased for their average), and with every client a candidate it is the
// plain draw.
TEST(ClientSampling, AmongCandidatesTheSchemeIsTheirs) {
  const std::vector<uint32_t> all{0, 1, 2, 3, 4}, some{1, 2, 4};
  for (ClientSampling s : {ClientSampling::kUniform, ClientSampling::kProportional,
                           ClientSampling::kScaled, ClientSampling::kPoisson})
    for (uint64_t r = 0; r < 50; ++r) {
      const RoundSample plain = sample_round(s, kSizes, 2, 3, r);
      const RoundSample among_all = sample_round(s, kSizes, all, 2, 3, r);
      EXPECT_EQ(among_all.clients, plain.clients);
      EXPECT_EQ(among_all.weights, plain.weights);
      for (uint32_t c : sample_round(s, kSizes, some, 2, 3, r).clients)
        EXPECT_TRUE(std::ranges::binary_search(some, c)) << c;
    }
  // scaled over every 2-subset of {1, 2, 4} (sizes 20, 30, 25): the candidates' average
  double expected = 0;
  for (uint64_t r = 0; r < 3000; ++r) {  // all three subsets come up; average their aggregates
    const RoundSample x = sample_round(ClientSampling::kScaled, kSizes, some, 2, 3, r);
    ASSERT_EQ(x.clients.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_DOUBLE_EQ(x.weights[i], double(kSizes[x.clients[i]]) / 75.0 * 3.0 / 2.0);
      expected += x.weights[i] * kValues[x.clients[i]] / 3000.0;
    }
  }
  const double theirs = (20.0 * -2.0 + 30.0 * 3.0 + 25.0 * 7.0) / 75.0;
  EXPECT_NEAR(expected, theirs, 0.1) << "sampling noise over 3000 rounds is about 0.03";
  // more draws than candidates: all of them, each at its share
  const RoundSample few = sample_round(ClientSampling::kScaled, kSizes, some, 4, 3, 0);
  EXPECT_EQ(few.clients, some);
  EXPECT_DOUBLE_EQ(few.weights[0], 20.0 / 75.0);
  EXPECT_TRUE(sample_round(ClientSampling::kUniform, kSizes, {}, 2, 3, 0).clients.empty());
}

}  // namespace
}  // namespace fedpar
