// FedProx's local steps against steps computed by hand: the first local step is FedAvg's (the
// proximal pull is zero at the sent model); with lr * mu = 1 the pull cancels the whole first
// step, so after two full-batch steps the delta is -lr g(w1), w1 = w0 - lr g(w0).
#include <gtest/gtest.h>

#include "tests/util/local_update_fixture.h"
#include "tests/util/run_results.h"

namespace fedpar {
namespace {

class FedProx : public testing::LocalUpdateFixture {
 protected:
  std::vector<float> local(int steps, float lr, float mu) {
    return compute_update(
               model, data.train, shard, w0,
               {.kind = LocalWork::kLocalTrain, .local_steps = steps, .lr = lr, .prox_mu = mu}, 1,
               0)
        .values;
  }
};

TEST_F(FedProx, OneStepIsFedAvgsAndMuZeroIsFedAvg) {
  EXPECT_EQ(local(1, 0.1f, 0.5f), local(1, 0.1f, 0.0f)) << "no pull at the sent model";
  EXPECT_NE(local(3, 0.1f, 0.5f), local(3, 0.1f, 0.0f)) << "the pull acts from the second step";
}

TEST_F(FedProx, LrTimesMuOneCancelsTheFirstStep) {
  const float lr = 0.5f, mu = 2.0f;
  const std::vector<float> g0 = grad(w0);
  std::vector<float> w1(w0.size()), expect(w0.size());
  for (size_t i = 0; i < w0.size(); ++i) w1[i] = w0[i] - lr * g0[i];
  const std::vector<float> g1 = grad(w1);
  // delta = -lr g0 - lr (g1 + mu (w1 - w0)) = -lr g0 - lr g1 + lr g0 = -lr g1
  for (size_t i = 0; i < w0.size(); ++i) expect[i] = -lr * g1[i];
  const std::vector<float> got = local(2, lr, mu);
  EXPECT_LT(testing::relative_distance(got, expect), 1e-5);
  // and it is not FedAvg's two steps (-lr g0 - lr g1)
  EXPECT_GT(testing::relative_distance(local(2, lr, 0.0f), expect), 0.1);
}

}  // namespace
}  // namespace fedpar
