// The fact fedpar exists to show, on the strategies and local updates the server and clients run:
// with full-batch gradients, n_k/n weights and one local step, model averaging equals gradient
// averaging equals centralized gradient descent up to float rounding; more local steps, or
// unequal shards averaged uniformly, move away by orders of magnitude.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/backend.h"
#include "core/local_update.h"
#include "core/synthetic.h"
#include "core/trainer.h"
#include "partitioners/partition.h"
#include "server/diagnostics.h"
#include "server/strategy.h"

namespace fedpar {
namespace {

constexpr int kRounds = 30;
constexpr float kLr = 0.05f;

double rel_diff(const std::vector<float>& w, const std::vector<float>& ref) {
  return distance(w, ref).relative;
}

class Equivalence : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> be = make_backend("cpu");
  TrainTest data = generate_synthetic({.iid = true, .seed = 11});

  std::vector<float> centralized(int accumulate) {
    Model m(*be, {"logreg"}, data.train.shape, 10);
    TrainOptions o{
        .epochs = kRounds, .batch = 0, .accumulate = accumulate, .seed = 1, .shuffle = false};
    o.lr.base_lr = kLr;
    train(m, data.train, {}, o);
    return m.params_host();
  }

  // Federated rounds over `manifest` with every client participating.
  std::vector<float> federated(const Manifest& manifest, Strategy& strategy, Task task) {
    Model m(*be, {"logreg"}, data.train.shape, 10);
    m.init(1);
    std::vector<float> params = m.params_host();
    for (int r = 0; r < kRounds; ++r) {
      task.round = uint64_t(r);
      std::vector<LocalResult> results;
      for (const auto& c : manifest.clients)
        results.push_back(compute_update(m, data.train, c.indices, params, task, 1, c.id));
      std::vector<ClientUpdate> updates;
      for (size_t k = 0; k < results.size(); ++k)
        updates.push_back(
            {manifest.clients[k].id, uint64_t(r), results[k].num_samples, results[k].values});
      strategy.apply(updates, params);
    }
    return params;
  }

  Manifest split(const char* scheme) {
    return partition({"synthetic", "", data.train.y, data.train.user, 10},
                     {.scheme = scheme, .clients = 4, .beta = 0.5, .min_size = 50});
  }
};

TEST_F(Equivalence, FullBatchOneStepModelAveragingIsGradientDescent) {
  const std::vector<float> a = centralized(1);
  const double floor = std::max(rel_diff(centralized(3), a), 1e-9);  // summation order alone

  const Manifest iid = split("iid");
  LrSchedule lr{.base_lr = kLr};
  auto grad = make_gradient_averaging(Weighting::kBySamples, lr, {});
  const double b = rel_diff(federated(iid, *grad, {.kind = LocalWork::kGradient}), a);

  auto avg = make_model_averaging(Weighting::kBySamples, {.lr = 1.0f});
  const double c = rel_diff(
      federated(iid, *avg, {.kind = LocalWork::kLocalTrain, .local_steps = 1, .lr = kLr}), a);

  auto avg5 = make_model_averaging(Weighting::kBySamples, {.lr = 1.0f});
  const double d = rel_diff(
      federated(iid, *avg5, {.kind = LocalWork::kLocalTrain, .local_steps = 5, .lr = kLr}), a);

  const Manifest skewed = split("iid-quantity");
  auto uniform = make_model_averaging(Weighting::kUniform, {.lr = 1.0f});
  const double e = rel_diff(
      federated(skewed, *uniform, {.kind = LocalWork::kLocalTrain, .local_steps = 1, .lr = kLr}),
      a);

  RecordProperty("floor", fmt::format("{:.2e}", floor));
  std::printf(
      "relative difference to centralized GD after %d rounds: floor %.2e | gradient %.2e | "
      "model K=1 %.2e | model K=5 %.2e | unequal shards, uniform weights %.2e\n",
      kRounds, floor, b, c, d, e);
  EXPECT_LT(b, 1e-5);
  EXPECT_LT(c, 1e-5);
  EXPECT_LT(b, 10 * floor + 1e-7);
  EXPECT_LT(c, 10 * floor + 1e-7);
  EXPECT_GT(d, 100 * std::max(b, c));
  EXPECT_GT(e, 100 * std::max(b, c));
}

// With mini-batches, one local step is the gradient regime's step when it draws the gradient
// regime's batch (local.sampling = "independent"): the same rows, so only float rounding apart on
// equal shards (whose n_k/n weights are the batches' b/sum b). Reshuffled passes draw other
// batches: as far apart as two seeds.
TEST_F(Equivalence, MiniBatchOneStepOnTheGradientsBatchIsGradientAveraging) {
  const Manifest iid = split("iid");
  for (const auto& c : iid.clients) ASSERT_EQ(c.indices.size(), iid.clients[0].indices.size());
  const double floor = std::max(rel_diff(centralized(3), centralized(1)), 1e-9);
  LrSchedule lr{.base_lr = kLr};
  auto grad = make_gradient_averaging(Weighting::kBySamples, lr, {});
  const std::vector<float> g = federated(iid, *grad, {.kind = LocalWork::kGradient, .batch = 20});
  const auto one_step = [&](bool independent) {
    auto avg = make_model_averaging(Weighting::kBySamples, {.lr = 1.0f});
    Task t{.kind = LocalWork::kLocalTrain, .batch = 20, .local_steps = 1, .lr = kLr};
    t.independent_batches = independent;
    return rel_diff(federated(iid, *avg, t), g);
  };
  const double same = one_step(true), passes = one_step(false);
  std::printf("mini-batch K=1 from gradient averaging: its batches %.2e | reshuffled passes %.2e\n",
              same, passes);
  EXPECT_LT(same, 10 * floor + 1e-7);
  EXPECT_GT(passes, 100 * std::max(same, floor));
}

// Drift: the averaged K-step deltas against K steps of the gradient at the sent model, from the
// same start and the same first batch. K = 1 is the same arithmetic (exactly 0); it grows with K.
TEST_F(Equivalence, DriftIsZeroAtOneStepAndGrowsWithLocalSteps) {
  Model m(*be, {"logreg"}, data.train.shape, 10);
  m.init(1);
  const std::vector<float> w0 = m.params_host();
  const Manifest iid = split("iid");
  std::vector<double> drift;
  for (int k : {1, 2, 5, 20}) {
    std::vector<LocalResult> results;
    for (const auto& c : iid.clients)
      results.push_back(compute_update(
          m, data.train, c.indices, w0,
          {.kind = LocalWork::kLocalTrain, .batch = 20, .local_steps = k, .lr = kLr, .drift = true},
          1, c.id));
    std::vector<ClientUpdate> deltas, linear;
    for (size_t i = 0; i < results.size(); ++i) {
      ASSERT_EQ(results[i].linear.size(), results[i].values.size());
      deltas.push_back({iid.clients[i].id, 0, results[i].num_samples, results[i].values});
      linear.push_back({iid.clients[i].id, 0, results[i].num_samples, results[i].linear});
    }
    drift.push_back(update_drift(deltas, linear, Weighting::kBySamples));
  }
  std::printf("drift at K = 1, 2, 5, 20: %.2e %.2e %.2e %.2e\n", drift[0], drift[1], drift[2],
              drift[3]);
  EXPECT_EQ(drift[0], 0.0);
  EXPECT_GT(drift[1], 1e-3);
  EXPECT_GT(drift[2], drift[1]);
  EXPECT_GT(drift[3], drift[2]);
}

}  // namespace
}  // namespace fedpar
