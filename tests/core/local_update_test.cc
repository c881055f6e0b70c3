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

}  // namespace
}  // namespace fedpar
