// The server optimizers of FedOpt against steps computed by hand from Reddi et al.'s Algorithm 2
// (and Hsu et al.'s FedAvgM): two steps each, so the state carried between rounds is checked too.
#include "core/fedopt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/check.h"

namespace fedpar {
namespace {

// x = [1, -2]; the mean deltas are [1, 0] twice; lr 0.5, beta1 0.5, beta2 0.75, tau 0.75
// (so v starts at 0.5625).
std::vector<float> two_steps(FedOptKind kind, std::vector<float>* after_first = nullptr) {
  FedOpt opt({.kind = kind, .lr = 0.5, .beta1 = 0.5, .beta2 = 0.75, .tau = 0.75});
  std::vector<float> x = {1.0f, -2.0f};
  const std::vector<float> delta = {1.0f, 0.0f};
  opt.step(x, delta);
  if (after_first) *after_first = x;
  opt.step(x, delta);
  return x;
}

TEST(FedOpt, SgdIsFedAvgWithTheServerLearningRate) {
  std::vector<float> first;
  const auto x = two_steps(FedOptKind::kSgd, &first);
  EXPECT_EQ(first, (std::vector<float>{1.5f, -2.0f}));  // x + 0.5 * 1
  EXPECT_EQ(x, (std::vector<float>{2.0f, -2.0f}));
}

TEST(FedOpt, AvgMKeepsServerMomentum) {
  std::vector<float> first;
  const auto x = two_steps(FedOptKind::kAvgM, &first);
  // m = 1, x = 1 + 0.5; then m = 0.5 * 1 + 1 = 1.5, x = 1.5 + 0.75
  EXPECT_EQ(first, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(x, (std::vector<float>{2.25f, -2.0f}));
}

TEST(FedOpt, AdagradAdamYogiFollowTheirSecondMoments) {
  // m: 0.5 * 0 + 0.5 * 1 = 0.5, then 0.5 * 0.5 + 0.5 = 0.75; a zero delta leaves its coordinate.
  struct Case {
    FedOptKind kind;
    double v1, v2;  // v after each step, by hand
  };
  for (const Case& c : {
           Case{FedOptKind::kAdagrad, 0.5625 + 1, 0.5625 + 2},  // v + d^2
           Case{FedOptKind::kAdam, 0.75 * 0.5625 + 0.25, 0.75 * (0.75 * 0.5625 + 0.25) + 0.25},
           Case{FedOptKind::kYogi, 0.5625 + 0.25, 0.5625 + 0.5},  // v < d^2: v + 0.25 d^2, twice
       }) {
    std::vector<float> first;
    const auto x = two_steps(c.kind, &first);
    const double x1 = 1 + 0.5 * 0.5 / (std::sqrt(c.v1) + 0.75);
    const double x2 = x1 + 0.5 * 0.75 / (std::sqrt(c.v2) + 0.75);
    EXPECT_NEAR(first[0], x1, 1e-6) << fedopt_name(c.kind);
    EXPECT_NEAR(x[0], x2, 1e-6) << fedopt_name(c.kind);
    EXPECT_EQ(x[1], -2.0f) << fedopt_name(c.kind);
  }
  // Adagrad at 1.5625 after one step: 1 + 0.25 / (1.25 + 0.75) = 1.125 exactly.
  std::vector<float> first;
  two_steps(FedOptKind::kAdagrad, &first);
  EXPECT_EQ(first[0], 1.125f);
}

TEST(FedOpt, YogiShrinksVWhenItExceedsTheSquaredDelta) {
  // v starts at tau^2 = 4 > d^2 = 1: v = 4 - 0.25 * 1 = 3.75 (Adam would give 0.75 * 4 + 0.25).
  FedOpt opt({.kind = FedOptKind::kYogi, .lr = 1, .beta1 = 0, .beta2 = 0.75, .tau = 2});
  std::vector<float> x = {0.0f};
  const std::vector<float> delta = {1.0f};
  opt.step(x, delta);
  EXPECT_NEAR(x[0], 1.0 / (std::sqrt(3.75) + 2), 1e-7);
}

TEST(FedOpt, NamesAndRangesAreChecked) {
  EXPECT_EQ(parse_fedopt("adam"), FedOptKind::kAdam);
  try {
    parse_fedopt("adamw");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "unknown server optimizer 'adamw'; did you mean 'adam'? (valid: sgd, avgm, adagrad, "
        "adam, yogi)");
  }
  EXPECT_THROW(FedOpt({.kind = FedOptKind::kAdam, .beta2 = 1.0}), Error);
  EXPECT_THROW(FedOpt({.kind = FedOptKind::kAdam, .tau = 0}), Error);
}

}  // namespace
}  // namespace fedpar
