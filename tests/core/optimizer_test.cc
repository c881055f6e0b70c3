// SGD through the Sgd class (momentum state across steps) and the learning-rate schedules.
#include "core/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/check.h"
#include "core/optimizer_config.h"
#include "tests/util/test_util.h"

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

TEST(OptimizerConfig, ScalingRulesByHand) {
  EXPECT_EQ(scaled_lr(0.1f, LrScaling::kNone, 400, 50), 0.1f);
  EXPECT_FLOAT_EQ(scaled_lr(0.1f, LrScaling::kLinear, 400, 50), 0.8f);
  EXPECT_FLOAT_EQ(scaled_lr(0.1f, LrScaling::kSqrt, 400, 50), 0.1f * std::sqrt(8.0f));
  EXPECT_FLOAT_EQ(scaled_lr(0.4f, LrScaling::kLinear, 25, 100), 0.1f) << "a smaller batch too";
}

TEST(OptimizerConfig, ResolvesTheTableAndNamesEachFix) {
  auto make = [](std::vector<std::pair<std::string, std::string>> sets) {
    Config c(kOptimizerDefaults);
    for (const auto& [k, v] : sets) c.set(k, v);
    return c;
  };
  const OptimizerSpec o = resolve_optimizer(make({{"optimizer.lr", "0.05"},
                                                  {"optimizer.scaling", "linear"},
                                                  {"optimizer.reference_batch", "100"},
                                                  {"optimizer.schedule", "cosine"},
                                                  {"optimizer.warmup_steps", "5"},
                                                  {"optimizer.momentum", "0.9"},
                                                  {"optimizer.nesterov", "true"},
                                                  {"optimizer.accumulate", "4"},
                                                  {"optimizer.precision", "bf16"}}),
                                            400, 50);
  EXPECT_FLOAT_EQ(o.lr.base_lr, 0.2f) << "0.05 x 400 / 100";
  EXPECT_FLOAT_EQ(o.configured_lr, 0.05f);
  EXPECT_FLOAT_EQ(o.lr.at(0), 0.2f / 5) << "warm-up from the scaled rate";
  EXPECT_EQ(o.lr.total_steps, 50);
  EXPECT_TRUE(o.sgd.nesterov);
  EXPECT_FLOAT_EQ(o.sgd.momentum, 0.9f);
  EXPECT_EQ(o.accumulate, 4);
  EXPECT_EQ(o.precision, Precision::kBF16);
  using testing::error_of;
  EXPECT_NE(error_of([&] {
              resolve_optimizer(make({{"optimizer.scaling", "linear"}}), 400, 50);
            }).find("needs optimizer.reference_batch"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              resolve_optimizer(
                  make({{"optimizer.scaling", "sqrt"}, {"optimizer.reference_batch", "10"}}), 0,
                  50);
            }).find("does not fix (full-batch steps)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              resolve_optimizer(make({{"optimizer.scaling", "square"}}), 10, 5);
            }).find("must be none, linear or sqrt, got 'square'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              resolve_optimizer(make({{"optimizer.nesterov", "true"}}), 10, 5);
            }).find("nesterov needs optimizer.momentum > 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              resolve_optimizer(make({{"optimizer.precision", "fp8"}}), 10, 5);
            }).find("fp8"),
            std::string::npos);
}

}  // namespace
}  // namespace fedpar
