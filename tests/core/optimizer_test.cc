// SGD through the Sgd class (momentum state across steps) and the learning-rate schedules.
#include "core/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/check.h"

namespace fedpar {
namespace {

TEST(Sgd, MomentumCarriesAcrossSteps) {
  auto be = make_backend("cpu");
  Sgd sgd(*be, 1, {.momentum = 0.5f});
  std::vector<float> w = {1.0f}, g = {1.0f};
  sgd.step(w.data(), g.data(), 0.1f);  // v = 1, w = 0.9
  sgd.step(w.data(), g.data(), 0.1f);  // v = 1.5, w = 0.75
  sgd.step(w.data(), g.data(), 0.1f);  // v = 1.75, w = 0.575
  EXPECT_FLOAT_EQ(w[0], 0.575f);
}

TEST(Sgd, WeightDecayShrinksWithoutGradient) {
  auto be = make_backend("cpu");
  Sgd sgd(*be, 2, {.weight_decay = 0.1f});
  std::vector<float> w = {2.0f, -4.0f}, g = {0.0f, 0.0f};
  sgd.step(w.data(), g.data(), 0.5f);
  EXPECT_FLOAT_EQ(w[0], 2.0f * (1 - 0.05f));
  EXPECT_FLOAT_EQ(w[1], -4.0f * (1 - 0.05f));
}

TEST(LrSchedule, ConstantStepCosineWarmup) {
  LrSchedule c{.kind = "constant", .base_lr = 0.1f};
  EXPECT_FLOAT_EQ(c.at(0), 0.1f);
  EXPECT_FLOAT_EQ(c.at(1000), 0.1f);

  LrSchedule s{.kind = "step", .base_lr = 1.0f, .step_size = 10, .gamma = 0.5f};
  EXPECT_FLOAT_EQ(s.at(9), 1.0f);
  EXPECT_FLOAT_EQ(s.at(10), 0.5f);
  EXPECT_FLOAT_EQ(s.at(25), 0.25f);

  LrSchedule cos{.kind = "cosine", .base_lr = 1.0f, .total_steps = 100, .min_lr = 0.0f};
  EXPECT_FLOAT_EQ(cos.at(0), 1.0f);
  EXPECT_NEAR(cos.at(50), 0.5f, 1e-6);
  EXPECT_NEAR(cos.at(100), 0.0f, 1e-6);
  EXPECT_NEAR(cos.at(25), 0.5 * (1 + std::cos(std::numbers::pi / 4)), 1e-6);

  LrSchedule w{.kind = "cosine", .base_lr = 1.0f, .total_steps = 110, .warmup_steps = 10};
  EXPECT_FLOAT_EQ(w.at(0), 0.1f);
  EXPECT_FLOAT_EQ(w.at(4), 0.5f);
  EXPECT_FLOAT_EQ(w.at(9), 1.0f);
  EXPECT_FLOAT_EQ(w.at(10), 1.0f);  // the cosine starts after warmup
  EXPECT_NEAR(w.at(60), 0.5f, 1e-6);
}

TEST(LrSchedule, ValidationNamesTheProblem) {
  EXPECT_THROW((LrSchedule{.kind = "linear"}).validate(), Error);
  EXPECT_THROW((LrSchedule{.base_lr = -1.0f}).validate(), Error);
  EXPECT_THROW((LrSchedule{.kind = "step", .step_size = 0}).validate(), Error);
  EXPECT_NO_THROW((LrSchedule{.kind = "step", .step_size = 3}).validate());
}

}  // namespace
}  // namespace fedpar
