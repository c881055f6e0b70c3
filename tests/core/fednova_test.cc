// FedNova against hand-computed values: a client's work ||a||_1 (plain SGD: its steps; with
// momentum: what a constant gradient moves it, in units of lr), the rescaling tau_eff / a_k, the
// seeded draw of heterogeneous local work, and Wang et al.'s objective inconsistency on a
// quadratic: with unequal local steps FedAvg ends near the minimiser of sum p_i tau_i F_i, FedNova
// near that of sum p_i F_i, each at the fixed point its closed form gives.
#include "core/fednova.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/local_update.h"
#include "core/weighted_average.h"

namespace fedpar {
namespace {

TEST(FedNova, WorkIsStepsOrWhatMomentumMakesOfThem) {
  EXPECT_EQ(fednova_work(7, 0.0), 7.0);
  EXPECT_DOUBLE_EQ(fednova_work(2, 0.5), 2.5) << "(1 - 0.5) / 0.5 + (1 - 0.25) / 0.5";
  for (double rho : {0.5, 0.9}) {  // a constant gradient 1 through heavy-ball momentum
    double v = 0, moved = 0;
    for (int s = 0; s < 13; ++s) moved += (v = rho * v + 1);
    EXPECT_NEAR(fednova_work(13, rho), moved, 1e-9 * moved) << rho;
  }
}

TEST(FedNova, RescalesByTheEffectiveStepsOverEachClientsWork) {
  const std::vector<float> a{4.0f}, b{8.0f};
  const std::vector<ClientUpdate> u{{0, 0, 1, a}, {1, 0, 3, b}};
  // p = (1/4, 3/4), a = (1, 4): tau_eff = 1/4 + 3 = 3.25; factors 3.25 and 0.8125
  const auto out = fednova_normalize(u, std::vector<double>{1, 4}, Weighting::kBySamples);
  EXPECT_EQ(out[0][0], 13.0f);
  EXPECT_EQ(out[1][0], 6.5f);
  // uniform weights: tau_eff = 2.5
  const auto uni = fednova_normalize(u, std::vector<double>{1, 4}, Weighting::kUniform);
  EXPECT_EQ(uni[0][0], 10.0f);
  EXPECT_EQ(uni[1][0], 5.0f);
  // equal work: the updates unchanged (FedNova is FedAvg then)
  EXPECT_EQ(fednova_normalize(u, std::vector<double>{3, 3}, Weighting::kBySamples)[1][0], 8.0f);
}

// The steps are equal where no work is drawn and the shards give the same batches a pass; then
// FedNova is FedAvg (the server warns).
TEST(FedNova, EqualStepsAreFoundWhereNoWorkIsDrawnAndTheShardsAgree) {
  RunSpec s;
  s.local_steps = 5;
  const std::vector<size_t> unequal = {600, 300, 17};
  EXPECT_EQ(fednova_equal_steps(s, unequal), 5);  // local.steps: the shard's size does not count
  s.local_steps_max = 9;
  EXPECT_EQ(fednova_equal_steps(s, unequal), std::nullopt);
  s.local_steps_max = 0;
  s.local_epochs = 2;
  s.local_batch = 50;
  EXPECT_EQ(fednova_equal_steps(s, std::vector<size_t>{600, 600, 590}), 24);       // 2 x 12 batches
  EXPECT_EQ(fednova_equal_steps(s, std::vector<size_t>{600, 601}), std::nullopt);  // 12, 13
  EXPECT_EQ(fednova_steps(s, 601, 1, 3), 26);
  s.local_batch = 0;  // full batch: one step an epoch, whatever the size
  EXPECT_EQ(fednova_equal_steps(s, unequal), 2);
  s.local_epochs_max = 3;
  EXPECT_EQ(fednova_equal_steps(s, unequal), std::nullopt);
}

TEST(FedNova, HeterogeneousWorkIsSeededAndCoversItsRange) {
  Task t{.kind = LocalWork::kLocalTrain, .batch = 10, .local_steps = 2, .local_steps_max = 6};
  std::set<int64_t> seen;
  for (uint64_t round = 0; round < 200; ++round) {
    t.round = round;
    const int64_t k = local_steps_taken(t, 95, 7, 3);
    EXPECT_EQ(k, local_steps_taken(t, 95, 7, 3)) << "the same draw every time";
    seen.insert(k);
  }
  EXPECT_EQ(seen, (std::set<int64_t>{2, 3, 4, 5, 6}));
  t.local_steps_max = 0;
  EXPECT_EQ(local_steps_taken(t, 95, 7, 3), 2);
  // epochs: 95 samples in batches of 10 are 10 steps per pass
  Task e{.kind = LocalWork::kLocalTrain, .batch = 10, .local_epochs = 3};
  EXPECT_EQ(local_steps_taken(e, 95, 7, 3), 30);
  e.local_epochs_max = 5;
  for (uint64_t round = 0; round < 20; ++round) {
    e.round = round;
    const int64_t k = local_steps_taken(e, 95, 7, 3);
    EXPECT_TRUE(k == 30 || k == 40 || k == 50) << k;
  }
}

// Wang et al. 2020's setting: F_i(w) = 1/2 ||w - e_i||^2 on two coordinates, three clients with
// weights p = (0.5, 0.3, 0.2) and local GD steps tau = (1, 4, 16) of lr 0.002, the server adding
// the weighted mean (of the deltas, or of FedNova's rescaled deltas). With q_i = 1 -
// (1 - lr)^tau_i, FedAvg's fixed point is sum p_i q_i e_i / sum p_i q_i (about the minimiser of
// sum p_i tau_i F_i, since q_i ~ lr tau_i) and FedNova's sum p_i (q_i / tau_i) e_i / sum p_i
// (q_i / tau_i) (about the minimiser of sum p_i F_i, the true objective).
TEST(FedNova, RemovesTheObjectiveInconsistencyOfUnequalLocalSteps) {
  const double lr = 0.002;
  const uint64_t n[3] = {5, 3, 2};  // p = n / 10
  const int tau[3] = {1, 4, 16};
  const double e[3][2] = {{0, 0}, {1, 0}, {0, 1}};
  auto run = [&](bool nova) {
    std::vector<float> x{2.0f, -1.0f};
    for (int round = 0; round < 5000; ++round) {
      std::vector<std::vector<float>> deltas(3);
      std::vector<ClientUpdate> u;
      std::vector<double> work;
      for (int i = 0; i < 3; ++i) {
        std::vector<float> y = x;
        for (int s = 0; s < tau[i]; ++s)
          for (int d = 0; d < 2; ++d) y[size_t(d)] -= float(lr) * (y[size_t(d)] - float(e[i][d]));
        deltas[size_t(i)] = {y[0] - x[0], y[1] - x[1]};
        u.push_back({uint32_t(i), uint64_t(round), n[i], deltas[size_t(i)]});
        work.push_back(fednova_work(tau[i], 0.0));
      }
      std::vector<std::vector<float>> scaled;
      if (nova) {
        scaled = fednova_normalize(u, work, Weighting::kBySamples);
        for (size_t k = 0; k < u.size(); ++k) u[k].values = scaled[k];
      }
      const auto mean = weighted_average(u, Weighting::kBySamples);
      for (int d = 0; d < 2; ++d) x[size_t(d)] += mean[size_t(d)];
    }
    return x;
  };
  auto fixed_point = [&](bool nova) {
    double num[2] = {0, 0}, den = 0;
    for (int i = 0; i < 3; ++i) {
      const double q = 1 - std::pow(1 - lr, tau[i]), w = double(n[i]) * (nova ? q / tau[i] : q);
      den += w;
      for (int d = 0; d < 2; ++d) num[d] += w * e[i][d];
    }
    return std::pair{num[0] / den, num[1] / den};
  };
  auto minimiser = [&](bool steps_weighted) {
    double num[2] = {0, 0}, den = 0;
    for (int i = 0; i < 3; ++i) {
      const double w = double(n[i]) * (steps_weighted ? tau[i] : 1);
      den += w;
      for (int d = 0; d < 2; ++d) num[d] += w * e[i][d];
    }
    return std::pair{num[0] / den, num[1] / den};
  };
  for (bool nova : {false, true}) {
    const auto x = run(nova);
    const auto [f0, f1] = fixed_point(nova);
    EXPECT_NEAR(x[0], f0, 1e-4) << (nova ? "fednova" : "fedavg");
    EXPECT_NEAR(x[1], f1, 1e-4) << (nova ? "fednova" : "fedavg");
    // near its objective's minimiser, far from the other's
    const auto [m0, m1] = minimiser(!nova);
    const auto [o0, o1] = minimiser(nova);
    const double near = std::hypot(x[0] - m0, x[1] - m1), far = std::hypot(x[0] - o0, x[1] - o1);
    EXPECT_LT(near, 0.1 * far) << (nova ? "fednova" : "fedavg") << ": " << near << " vs " << far;
  }
}

}  // namespace
}  // namespace fedpar
