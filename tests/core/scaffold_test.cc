// SCAFFOLD (option II) against steps computed by hand: the correction c - c_i is added to every
// local gradient, the client's control change is -c - delta / (K lr), and the server's control
// moves by the participants' changes weighted over all clients. On a two-client quadratic FedAvg
// ends where the closed form of its drift says, SCAFFOLD at the true minimiser (and NIID-Bench's
// form of it, with momentum, at a reweighted one).
#include "core/scaffold.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/fednova.h"
#include "core/local_update.h"
#include "tests/util/local_update_fixture.h"
#include "tests/util/run_results.h"

namespace fedpar {
namespace {

TEST(Scaffold, ControlArithmeticByHand) {
  const std::vector<float> c{0.5f, -1.0f}, ci{0.25f, 2.0f};
  EXPECT_EQ(scaffold_correction(c, ci), (std::vector<float>{0.25f, -3.0f}));
  // delta (-0.4, 0.8) after K = 2 steps of lr 0.1: (x - y) / (K lr) = (2, -4); dc = -c + that
  const std::vector<float> delta{-0.4f, 0.8f};
  const auto dc = scaffold_control_change(c, delta, 2.0, 0.1f);
  EXPECT_NEAR(dc[0], -0.5 + 2.0, 1e-6);
  EXPECT_NEAR(dc[1], 1.0 - 4.0, 1e-6);
  // uniform weights: c += (1 / N) sum dc over the participants, two of N = 4
  std::vector<float> server{1.0f, 1.0f};
  const std::vector<float> a{4.0f, -8.0f}, b{2.0f, 0.0f};
  const std::vector<ClientUpdate> changes{{0, 0, 10, a}, {3, 0, 90, b}};
  scaffold_server_control(changes, Weighting::kUniform, 4, server);
  EXPECT_EQ(server, (std::vector<float>{2.5f, -1.0f})) << "1 + 6 / 4 and 1 - 8 / 4";
  // by samples, of 200 in all: c += (10 a + 90 b) / 200
  server = {1.0f, 1.0f};
  scaffold_server_control(changes, Weighting::kBySamples, 200, server);
  EXPECT_EQ(server, (std::vector<float>{2.1f, 0.6f})) << "1 + (40 + 180) / 200, 1 - 80 / 200";
  std::vector<float> wrong(3);
  EXPECT_THROW(scaffold_server_control(changes, Weighting::kUniform, 4, wrong), Error);
}

using ScaffoldLocal = testing::LocalUpdateFixture;

// Two full-batch steps with a correction k: delta = -lr (g0 + k) - lr (g1 + k), w1 = w0 - lr (g0 +
// k).
TEST_F(ScaffoldLocal, TheCorrectionJoinsEveryLocalGradient) {
  const float lr = 0.2f;
  std::vector<float> k(w0.size());
  for (size_t i = 0; i < k.size(); ++i) k[i] = 0.01f * float(int(i % 7) - 3);
  const auto g0 = grad(w0);
  std::vector<float> w1(w0.size());
  for (size_t i = 0; i < w0.size(); ++i) w1[i] = w0[i] - lr * (g0[i] + k[i]);
  const auto g1 = grad(w1);
  std::vector<float> expect(w0.size());
  for (size_t i = 0; i < w0.size(); ++i) expect[i] = -lr * (g0[i] + k[i]) - lr * (g1[i] + k[i]);
  const LocalResult r = compute_update(
      model, data.train, shard, w0,
      {.kind = LocalWork::kLocalTrain, .local_steps = 2, .lr = lr, .correction = k}, 1, 0);
  EXPECT_EQ(r.local_steps, 2);
  EXPECT_LT(testing::relative_distance(r.values, expect), 1e-6);
  const LocalResult plain =
      compute_update(model, data.train, shard, w0,
                     {.kind = LocalWork::kLocalTrain, .local_steps = 2, .lr = lr}, 1, 0);
  EXPECT_GT(testing::relative_distance(plain.values, expect), 1e-3) << "the correction counts";
}

// NIID-Bench's form with momentum rho: v1 = g0, w1 = w0 - lr g0 - lr k; v2 = rho g0 + g1(w1),
// delta = -lr g0 - lr k - lr v2 - lr k: the correction never enters the momentum buffer.
TEST_F(ScaffoldLocal, AfterTheStepTheCorrectionStaysOutOfTheMomentum) {
  const float lr = 0.2f, rho = 0.9f;
  std::vector<float> k(w0.size());
  for (size_t i = 0; i < k.size(); ++i) k[i] = 0.01f * float(int(i % 7) - 3);
  const auto g0 = grad(w0);
  std::vector<float> w1(w0.size());
  for (size_t i = 0; i < w0.size(); ++i) w1[i] = w0[i] - lr * g0[i] - lr * k[i];
  const auto g1 = grad(w1);
  std::vector<float> expect(w0.size());
  for (size_t i = 0; i < w0.size(); ++i)
    expect[i] = -lr * g0[i] - lr * k[i] - lr * (rho * g0[i] + g1[i]) - lr * k[i];
  Task task{.kind = LocalWork::kLocalTrain,
            .local_steps = 2,
            .lr = lr,
            .sgd = {.momentum = rho},
            .correction = k,
            .correction_after_step = true};
  const LocalResult r = compute_update(model, data.train, shard, w0, task, 1, 0);
  EXPECT_LT(testing::relative_distance(r.values, expect), 1e-6);
  task.correction_after_step = false;  // through the momentum: rho k more in the second step
  const LocalResult inside = compute_update(model, data.train, shard, w0, task, 1, 0);
  EXPECT_GT(testing::relative_distance(inside.values, expect), 1e-4) << "where it enters counts";
}

// Two clients with F_i(w) = h_i / 2 (w - e_i)^2, h = (1, 10), e = (0, 1), K = 10 local GD steps
// of lr 0.05, both every round, the server adding the mean delta. FedAvg's fixed point solves
// sum_i q_i (w - e_i) = 0 with q_i = 1 - (1 - lr h_i)^K: the clients' unequal progress, not
// their curvature, weighs their optima. SCAFFOLD's controls remove that drift: it converges to
// the minimiser of F_1 + F_2, sum h_i e_i / sum h_i. Both checked against the closed forms.
// after_step: NIID-Bench's form (the correction outside the momentum, controls divided by K).
double train_quadratic(bool scaffold, float momentum = 0, bool after_step = false) {
  const double lr = 0.05;
  const int K = 10;
  const double h[2] = {1, 10}, e[2] = {0, 1};
  std::vector<float> x{3.0f}, c{0.0f};
  std::vector<std::vector<float>> ci(2, std::vector<float>{0.0f});
  for (int round = 0; round < 300; ++round) {
    std::vector<std::vector<float>> deltas(2), dcs(2);
    for (int i = 0; i < 2; ++i) {
      const float k = scaffold ? scaffold_correction(c, ci[size_t(i)])[0] : 0.0f;
      float y = x[0], v = 0;  // heavy-ball momentum, as the clients' SGD
      for (int s = 0; s < K; ++s) {
        v = momentum * v + (float(h[i]) * (y - float(e[i])) + (after_step ? 0.0f : k));
        y -= float(lr) * v;
        if (after_step) y -= float(lr) * k;
      }
      deltas[size_t(i)] = {y - x[0]};
      const double work = after_step ? K : fednova_work(K, momentum);
      dcs[size_t(i)] = scaffold_control_change(c, deltas[size_t(i)], work, float(lr));
      ci[size_t(i)][0] += dcs[size_t(i)][0];
    }
    x[0] += 0.5f * (deltas[0][0] + deltas[1][0]);
    const std::vector<ClientUpdate> changes{{0, 0, 1, dcs[0]}, {1, 0, 1, dcs[1]}};
    if (scaffold) scaffold_server_control(changes, Weighting::kUniform, 2, c);
  }
  return x[0];
}

TEST(Scaffold, RemovesTheDriftOfUnequalLocalProgress) {
  const double q1 = 1 - std::pow(1 - 0.05 * 1, 10), q2 = 1 - std::pow(1 - 0.05 * 10, 10);
  const double fedavg_fixed = q2 / (q1 + q2), minimiser = 10.0 / 11.0;
  ASSERT_GT(std::abs(fedavg_fixed - minimiser), 0.1) << "the case must tell them apart";
  EXPECT_NEAR(train_quadratic(false), fedavg_fixed, 1e-4);
  EXPECT_NEAR(train_quadratic(true), minimiser, 1e-4);
  // with local momentum (the controls divide by the steps' work, not their count): still the
  // minimiser
  for (float m : {0.5f, 0.9f}) EXPECT_NEAR(train_quadratic(true, m), minimiser, 1e-4) << m;
}

// K local steps of momentum rho from y = x with gradient h (y - e) and, after each step, the
// constant drift -lr k: linear in (x - e) and k, delta = -alpha (x - e) - beta k.
std::pair<double, double> local_response(double h, double rho) {
  auto delta = [&](double x_minus_e, double k) {
    double y = x_minus_e, v = 0;
    for (int s = 0; s < 10; ++s) {
      v = rho * v + h * y;
      y -= 0.05 * v + 0.05 * k;
    }
    return y - x_minus_e;
  };
  return {-delta(1, 0), -delta(0, 1)};
}

// NIID-Bench's form: without momentum it is the paper's; with momentum 0.9 its fixed point is
// not the minimiser. There every client's delta is 0 and sum_i c_i = 0, so
// sum_i (alpha_i / beta_i) (x - e_i) = 0: momentum amplifies the gradient's response (alpha)
// and not the drift's (beta), unequally for unequal curvatures.
TEST(Scaffold, AfterTheStepWithMomentumEndsAtAReweightedMinimiser) {
  const double minimiser = 10.0 / 11.0;
  EXPECT_NEAR(train_quadratic(true, 0, true), minimiser, 1e-4);
  const auto [a1, b1] = local_response(1, 0.9);
  const auto [a2, b2] = local_response(10, 0.9);
  const double r1 = a1 / b1, r2 = a2 / b2, fixed = r2 / (r1 + r2);  // e = (0, 1)
  ASSERT_GT(std::abs(fixed - minimiser), 0.1) << "the case must tell them apart";
  EXPECT_NEAR(train_quadratic(true, 0.9f, true), fixed, 1e-4);
}

}  // namespace
}  // namespace fedpar
