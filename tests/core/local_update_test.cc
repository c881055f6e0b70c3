// Inside one client's gradient: accumulation over micro-batches gives the whole batch's mean
// within rounding, and fp16 loss scaling computes an overflowed gradient again at the scale it
// backs off to instead of returning infinities.
#include "core/local_update.h"

#include <gtest/gtest.h>

#include "core/loss_scaler.h"
#include "tests/util/local_update_fixture.h"
#include "tests/util/run_results.h"

namespace fedpar {
namespace {

using LossScaledGradient = testing::LocalUpdateFixture;

TEST_F(LossScaledGradient, MicroBatchesSumToTheBatchMean) {
  const auto whole = grad(w0);
  for (int acc : {2, 3, 40}) {
    const LocalResult r = compute_update(model, data.train, shard, w0,
                                         {.kind = LocalWork::kGradient, .accumulate = acc}, 1, 0);
    EXPECT_LT(testing::relative_distance(r.values, whole), 1e-6) << acc;
    EXPECT_EQ(r.num_samples, 40u);
  }
}

TEST_F(LossScaledGradient, AnOverflowIsComputedAgainAtALowerScale) {
  const auto fp32 = grad(w0);
  be->set_precision(Precision::kF16);
  LossScaler scaler({.init = 1e12f});  // fp16 products overflow far below this
  const LocalResult r = compute_update(model, data.train, shard, w0,
                                       {.kind = LocalWork::kGradient, .scaler = &scaler}, 1, 0);
  EXPECT_GT(scaler.skipped(), 0) << "the first tries overflowed";
  EXPECT_LT(scaler.scale(), 1e12f);
  for (float v : r.values) ASSERT_TRUE(std::isfinite(v));
  EXPECT_LT(testing::relative_distance(r.values, fp32), 1e-2) << "fp16 products, unscaled";
  EXPECT_GT(testing::relative_distance(r.values, fp32), 0) << "fp16 did round";
}

// Independent draws (local.sampling = "independent"): one step on the gradient task's very rows
// (the same gradient, bit for bit, as a step of SGD); an epoch is as many fresh draws of b as a
// pass has batches, each a full b (a pass's last batch is short).
using IndependentBatches = testing::LocalUpdateFixture;

TEST_F(IndependentBatches, OneStepTakesTheGradientTasksBatchAndEpochsCountThePassesBatches) {
  const float lr = 0.5f;
  const LocalResult g = compute_update(model, data.train, shard, w0,
                                       {.kind = LocalWork::kGradient, .batch = 15}, 1, 3);
  Task one{.kind = LocalWork::kLocalTrain, .batch = 15, .local_steps = 1, .lr = lr};
  one.independent_batches = true;
  const LocalResult step = compute_update(model, data.train, shard, w0, one, 1, 3);
  ASSERT_EQ(step.values.size(), g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) ASSERT_EQ(step.values[i], -lr * g.values[i]) << i;
  Task epoch{.kind = LocalWork::kLocalTrain, .batch = 15, .local_epochs = 1, .lr = lr};
  epoch.independent_batches = true;
  const LocalResult e = compute_update(model, data.train, shard, w0, epoch, 1, 3);
  EXPECT_EQ(e.local_steps, 3);  // 40 samples in batches of 15: 3 a pass
  EXPECT_EQ(e.samples_processed, 45);
  epoch.independent_batches = false;
  EXPECT_EQ(compute_update(model, data.train, shard, w0, epoch, 1, 3).samples_processed, 40);
}

}  // namespace
}  // namespace fedpar
