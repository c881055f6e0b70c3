// Models run unchanged on either backend: one training step of the 2NN and the CNN on the GPU
// against the CPU, and a short training run that reaches the same accuracy. Skipped without a
// CUDA device.
#include <gtest/gtest.h>

#include "core/model.h"
#include "core/synthetic.h"
#include "core/trainer.h"
#include "tests/kernels/gpu_fixture.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::all_close;
using testing::random_vector;

class ModelParity : public testing::Gpu {};

TEST_F(ModelParity, OneTrainingStepOfThe2nnAndTheCnn) {
  const Shape mnist{28, 28, 1};
  for (const char* name : {"2nn", "cnn"})
    for (int batch : {1, 10, 50}) {
      const auto x = random_vector(size_t(batch) * mnist.size(), 1, 0.0f, 1.0f);
      std::vector<int32_t> y(static_cast<size_t>(batch));
      for (int i = 0; i < batch; ++i) y[size_t(i)] = i % 10;
      auto step = [&](Backend& be) {
        Model m(be, {name}, mnist, 10);
        m.init(7);
        auto dx = on(be, x);
        auto dy = on(be, y);
        m.zero_grads();
        const BatchStats st = m.forward_backward(dx.data(), dy.data(), batch, 1.0f / float(batch));
        Sgd sgd(be, m.num_params(), {.momentum = 0.9f});
        sgd.step(m.params(), m.grads(), 0.1f);
        return std::tuple{st, m.grads_host(), m.params_host()};
      };
      const auto [s0, g0, p0] = step(*cpu);
      const auto [s1, g1, p1] = step(*gpu);
      EXPECT_NEAR(s1.loss_sum, s0.loss_sum, 1e-4 * std::max(1.0, s0.loss_sum))
          << name << " batch " << batch;
      EXPECT_EQ(s1.correct, s0.correct) << name << " batch " << batch;
      EXPECT_TRUE(all_close(g1, g0, 1e-5, 1e-3)) << name << " gradient, batch " << batch;
      EXPECT_TRUE(all_close(p1, p0, 1e-6, 1e-4))
          << name << " parameters after the step, batch " << batch;
    }
}

TEST_F(ModelParity, ShortTrainingRunReachesTheSameAccuracy) {
  const TrainTest data = generate_synthetic({.iid = true, .seed = 3});
  TrainOptions o{.epochs = 5, .batch = 20, .seed = 1};
  o.lr.base_lr = 0.05f;
  auto run = [&](Backend& be) {
    Model m(be, {"mlp", {64}}, data.train.shape, data.train.num_classes);
    train(m, data.train, data.test, o);
    const BatchStats st = evaluate(m, data.test);
    return std::pair{100.0 * double(st.correct) / double(st.samples), m.params_host()};
  };
  const auto [acc_cpu, p_cpu] = run(*cpu);
  const auto [acc_gpu, p_gpu] = run(*gpu);
  std::printf("synthetic IID, MLP(64), 5 epochs: test accuracy CPU %.2f%%, GPU %.2f%%\n", acc_cpu,
              acc_gpu);
  EXPECT_GT(acc_cpu, 50.0);
  EXPECT_NEAR(acc_gpu, acc_cpu, 1.0);
  EXPECT_TRUE(all_close(p_gpu, p_cpu, 1e-3, 1e-2));
}

}  // namespace
}  // namespace fedpar
