// PowerSGD: one power step by hand on a 3x2 matrix, the codec's bytes written out from the
// definition, which tensors are factored, the warm start (a rank-r matrix recovered, clients kept
// apart, a zero gradient not sticking), strict lengths, and error feedback's contraction.
#include "core/codec/powersgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "core/codec/error_feedback.h"
#include "core/rng.h"
#include "tests/core/codec/codec_test_util.h"

namespace fedpar {
namespace {
using testing::append_f32;
using testing::contains;
using testing::encode;
using testing::fuzz_decoder;

std::unique_ptr<Codec> powersgd(std::vector<std::vector<int64_t>> shapes, uint32_t rank,
                                uint64_t seed = 1) {
  return make_codec("powersgd", {.seed = seed, .rank = rank, .shapes = std::move(shapes)});
}

double norm(std::span<const float> v) {
  double s = 0;
  for (float x : v) s += double(x) * double(x);
  return std::sqrt(s);
}

double distance(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s);
}

// Sum of `terms` outer products u v^T (rows x cols, row-major) from seeded normals.
std::vector<float> low_rank(size_t rows, size_t cols, int terms, uint64_t seed) {
  Rng rng(seed, "powersgd-test");
  std::vector<float> m(rows * cols, 0.0f);
  for (int t = 0; t < terms; ++t) {
    std::vector<float> u(rows), v(cols);
    for (float& x : u) x = float(rng.normal());
    for (float& x : v) x = float(rng.normal());
    for (size_t i = 0; i < rows; ++i)
      for (size_t k = 0; k < cols; ++k) m[i * cols + k] += u[i] * v[k];
  }
  return m;
}

// M = [[1, 2], [3, 4], [5, 6]], Q = (1, 0): P = (1, 3, 5), P^ = P / sqrt(35),
// Q' = M^T P^ = (35, 44) / sqrt(35), P^ Q'^T = [[1, 44/35], [3, 132/35], [5, 220/35]].
TEST(PowerSgd, OnePowerStepByHandOnA3x2Matrix) {
  const std::vector<float> m = {1, 2, 3, 4, 5, 6};
  std::vector<float> q = {1, 0}, p(3);
  powersgd_mq(m, 3, 2, q, 1, p);
  EXPECT_EQ(p, (std::vector<float>{1, 3, 5}));
  powersgd_orthonormalise(p, 3, 1);
  const double r35 = std::sqrt(35.0);
  EXPECT_EQ(p, (std::vector<float>{float(1 / r35), float(3 / r35), float(5 / r35)}));
  powersgd_mtp(m, 3, 2, p, 1, q);
  EXPECT_EQ(q[0], float(1.0 * p[0] + 3.0 * p[1] + 5.0 * p[2]));
  EXPECT_EQ(q[1], float(2.0 * p[0] + 4.0 * p[1] + 6.0 * p[2]));
  EXPECT_NEAR(q[0], r35, 1e-6);
  EXPECT_NEAR(q[1], 44 / r35, 1e-6);
  std::vector<float> out(6);
  powersgd_expand(p, q, 3, 2, 1, out);
  const std::vector<double> want = {1, 44 / 35.0, 3, 132 / 35.0, 5, 220 / 35.0};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(out[i], want[i], 1e-6 * want[i]) << i;
}

// The codec on a 3x2 weight (factored at rank 1: 5 < 6 floats) and a 2-value bias (raw): the bytes
// are P^ (3 floats), Q' (2), the bias (2), computed here from the definition and the seeded Q.
TEST(PowerSgd, TheCodecsBytesAreThePowerStepsFactorsThenTheRawBias) {
  const auto c = powersgd({{3, 2}, {2}}, 1, 9);
  const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7.5f, -8};
  std::vector<float> q0(2);
  powersgd_initial_q(9, 4, 0, q0);
  std::vector<double> p(3);
  for (int i = 0; i < 3; ++i) p[i] = float(double(v[2 * i]) * q0[0] + double(v[2 * i + 1]) * q0[1]);
  const double n = std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
  std::vector<float> ph(3);
  for (int i = 0; i < 3; ++i) ph[i] = float(p[i] / n);
  std::vector<uint8_t> want;
  for (float x : ph) append_f32(want, x);
  for (int k = 0; k < 2; ++k)
    append_f32(want,
               float(double(v[k]) * ph[0] + double(v[2 + k]) * ph[1] + double(v[4 + k]) * ph[2]));
  append_f32(want, 7.5f);
  append_f32(want, -8);
  EXPECT_EQ(encode(*c, v, {.round = 0, .client = 4}), want);
  std::vector<float> out(8);
  ASSERT_EQ(c->decode(want, {}, out), "");
  EXPECT_EQ(out[6], 7.5f);
  EXPECT_EQ(out[7], -8.0f);
  // P^ P^T M is M projected on P^'s span: ||M||^2 = ||P^ P^T M||^2 + ||M - P^ P^T M||^2
  const std::span<const float> got = std::span(out).first(6), m = std::span(v).first(6);
  EXPECT_NEAR(norm(got) * norm(got) + distance(got, m) * distance(got, m), 91.0, 1e-4);
  EXPECT_GT(norm(got), 9.0);  // most of ||M|| = 9.54 lies along the first power step
}

TEST(PowerSgd, FactorsOnlyWhatGetsSmallerAndReadsConvWeightsAsOutByRest) {
  const auto plan = powersgd_plan({{8, 3, 3, 3}, {8}, {3, 2}, {100, 10}}, 2);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_TRUE(plan[0].factored);  // 2 (8 + 27) = 70 < 216
  EXPECT_EQ(plan[0].rows, 8u);
  EXPECT_EQ(plan[0].cols, 27u);
  EXPECT_FALSE(plan[1].factored);  // a bias
  EXPECT_FALSE(plan[2].factored);  // 2 (3 + 2) = 10 >= 6
  EXPECT_TRUE(plan[3].factored);
  EXPECT_EQ(plan[3].offset, 216u + 8 + 6);
  EXPECT_EQ(powersgd_wire_floats(plan, 2), 70u + 8 + 6 + 2 * 110);
  const auto c = powersgd({{8, 3, 3, 3}, {8}, {3, 2}, {100, 10}}, 2);
  EXPECT_EQ(encode(*c, std::vector<float>(1230, 1.0f)).size(), 4 * (70u + 8 + 6 + 220));
}

TEST(PowerSgd, AnExactlyRankRMatrixIsRecoveredAfterAWarmStartedSecondRound) {
  const auto m = low_rank(40, 30, 2, 3);
  const auto c = powersgd({{40, 30}}, 2);
  const auto first = encode(*c, m, {.round = 0, .client = 1});
  const auto second = encode(*c, m, {.round = 1, .client = 1});
  EXPECT_NE(first, second);  // the second started from the first's Q
  std::vector<float> out(m.size());
  ASSERT_EQ(c->decode(second, {}, out), "");
  EXPECT_LT(distance(out, m), 1e-5 * norm(m));
  // another client starts from its own seeded Q, whatever client 1 did before
  EXPECT_EQ(encode(*c, m, {.round = 1, .client = 2}),
            encode(*powersgd({{40, 30}}, 2), m, {.round = 1, .client = 2}));
}

// A zero gradient leaves Q = M^T P = 0; the warm start would then give P = 0 forever.
TEST(PowerSgd, AZeroGradientDoesNotStickThroughTheWarmStart) {
  const auto c = powersgd({{10, 8}}, 1);
  std::vector<float> out(80, 1.0f);
  ASSERT_EQ(c->decode(encode(*c, std::vector<float>(80, 0.0f), {.round = 0}), {}, out), "");
  EXPECT_EQ(out, std::vector<float>(80, 0.0f));
  const auto m = low_rank(10, 8, 1, 5);
  ASSERT_EQ(c->decode(encode(*c, m, {.round = 1}), {}, out), "");
  EXPECT_LT(distance(out, m), 1e-5 * norm(m));
}

TEST(PowerSgd, GramSchmidtZeroesAZeroColumnAndKeepsNaN) {
  std::vector<float> p = {0, 3, 0, 4};  // 2 x 2: column 0 zero, column 1 (3, 4)
  powersgd_orthonormalise(p, 2, 2);
  EXPECT_EQ(p, (std::vector<float>{0, 0.6f, 0, 0.8f}));
  std::vector<float> bad = {std::numeric_limits<float>::quiet_NaN(), 1};
  powersgd_orthonormalise(bad, 2, 1);
  EXPECT_TRUE(std::isnan(bad[0]) && std::isnan(bad[1]));
}

TEST(PowerSgd, WrongLengthsAndMissingShapesAreRefused) {
  const auto c = powersgd({{6, 5}, {5}}, 1);
  const auto good = encode(*c, low_rank(7, 5, 1, 2));  // 35 values: 6 + 5 + 5 floats
  ASSERT_EQ(good.size(), 4u * 16);
  std::vector<float> out(35);
  EXPECT_EQ(c->decode(good, {}, out), "");
  for (size_t len : {size_t{0}, good.size() - 1, good.size() + 1, good.size() + 4}) {
    std::vector<uint8_t> b(len, 0);
    EXPECT_TRUE(contains(c->decode(b, {}, out), "expected 64")) << len;
  }
  std::vector<float> wrong(34);
  EXPECT_TRUE(contains(c->decode(good, {}, wrong), "34 values asked of tensors holding 35"));
  fuzz_decoder(*c, good, 35, {}, 300, 7);
  EXPECT_THROW(make_codec("powersgd", {}), Error);  // no shapes
  EXPECT_THROW(make_codec("powersgd", {.rank = 0, .shapes = {{4, 4}}}), Error);
}

// Error feedback on a fixed full-rank gradient g: the decoded updates sum to T g - e_T, and the
// residual stays bounded, so their mean tends to g; without it the mean stays a rank-1 guess.
TEST(PowerSgd, WithErrorFeedbackTheDecodedUpdatesAddUpToTheGradients) {
  const std::vector<std::vector<int64_t>> shapes = {{20, 16}, {16}};
  const auto g = low_rank(21, 16, 16, 8);  // 320 + 16 values, full rank
  const auto c = powersgd(shapes, 1);
  ErrorFeedback ef(*c);
  std::vector<float> sum(g.size(), 0.0f), plain(g.size(), 0.0f), out(g.size());
  std::vector<uint8_t> bytes;
  const int rounds = 400;
  double worst_residual = 0;
  const auto alone = powersgd(shapes, 1);
  for (int t = 0; t < rounds; ++t) {
    ef.encode(0, g, {.round = uint64_t(t)}, 1.0f, bytes);
    ASSERT_EQ(c->decode(bytes, {}, out), "");
    for (size_t i = 0; i < g.size(); ++i) sum[i] += out[i];
    worst_residual = std::max(worst_residual, norm(ef.residual(0)));
    alone->encode(g, {.round = uint64_t(t)}, bytes);
    ASSERT_EQ(alone->decode(bytes, {}, out), "");
    for (size_t i = 0; i < g.size(); ++i) plain[i] += out[i];
  }
  for (float& x : sum) x /= float(rounds);
  for (float& x : plain) x /= float(rounds);
  EXPECT_LT(worst_residual, 20 * norm(g));
  EXPECT_LT(distance(sum, g), 0.05 * norm(g));
  EXPECT_GT(distance(plain, g), 0.3 * norm(g));
}

}  // namespace
}  // namespace fedpar
