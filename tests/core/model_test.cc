// Model presets: exact parameter counts, the flat layout, deterministic init, accumulation.
#include "core/model.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/backend.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::all_close;
using testing::random_vector;

class Models : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> be = make_backend("cpu");
  const Shape mnist{28, 28, 1};
};

TEST_F(Models, ParameterCountsMatchThePapers) {
  EXPECT_EQ(Model(*be, {"2nn"}, mnist, 10).num_params(), 199210u);
  EXPECT_EQ(Model(*be, {"cnn"}, mnist, 10).num_params(), 1663370u);
  // NIID-Bench's simple CNN: conv 6 and 16 5x5 'valid' (28 -> 24 -> 12 -> 8 -> 4), dense
  // 256-120-84-10: 156 + 2,416 + 30,840 + 10,164 + 850
  EXPECT_EQ(Model(*be, {"lenet"}, mnist, 10).num_params(), 44426u);
  EXPECT_EQ(Model(*be, {"logreg"}, mnist, 10).num_params(), 7850u);
  EXPECT_EQ(Model(*be, {"linreg"}, {1, 1, 60}, 10).num_params(), 610u);
  EXPECT_EQ(Model(*be, {"mlp", {100}}, mnist, 10).num_params(), 784u * 100 + 100 + 1010);
}

TEST_F(Models, LayoutIsContiguousAndNamed) {
  Model m(*be, {"cnn"}, mnist, 10);
  size_t expect = 0;
  std::vector<std::string> names;
  for (const auto& v : m.layout().views()) {
    EXPECT_EQ(v.offset, expect) << v.name;
    expect += v.size;
    names.push_back(v.name);
  }
  EXPECT_EQ(expect, m.num_params());
  EXPECT_EQ(names,
            (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                      "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(m.layout().find("fc1.weight").shape, (std::vector<int64_t>{512, 3136}));
}

TEST_F(Models, InitIsDeterministicAndBounded) {
  Model a(*be, {"2nn"}, mnist, 10), b(*be, {"2nn"}, mnist, 10);
  a.init(7);
  b.init(7);
  EXPECT_EQ(a.params_host(), b.params_host());
  b.init(8);
  EXPECT_NE(a.params_host(), b.params_host());
  const auto p = a.params_host();
  const auto& fc1 = a.layout().find("fc1.weight");
  const float bound = 1.0f / 28.0f;  // 1/sqrt(784)
  double sum_sq = 0;
  for (size_t i = 0; i < fc1.size; ++i) {
    ASSERT_LE(std::abs(p[fc1.offset + i]), bound);
    sum_sq += double(p[fc1.offset + i]) * p[fc1.offset + i];
  }
  EXPECT_NEAR(sum_sq / double(fc1.size), bound * bound / 3.0, 0.02 * bound * bound);  // U(-b, b)
}

TEST_F(Models, UnknownNamesAndShapesAreClearErrors) {
  EXPECT_THROW(Model(*be, {"resnet"}, mnist, 10), Error);
  EXPECT_THROW(Model(*be, {"cnn"}, {1, 1, 60}, 10), Error);
  EXPECT_THROW(Model(*be, {"mlp"}, mnist, 10), Error);
  EXPECT_THROW(Model(*be, {"2nn", {5}}, mnist, 10), Error);
  try {
    Model(*be, {"resnet"}, mnist, 10);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logreg, linreg, mlp, 2nn, cnn"), std::string::npos);
  }
}

TEST_F(Models, MicroBatchAccumulationEqualsOneBigBatch) {
  for (const char* name : {"2nn", "cnn"}) {
    Model m(*be, {name}, mnist, 10);
    m.init(3);
    const int batch = 12;
    auto x = random_vector(batch * mnist.size(), 4, 0.0f, 1.0f);
    std::vector<int32_t> y(batch);
    for (int i = 0; i < batch; ++i) y[i] = i % 10;
    m.zero_grads();
    const BatchStats whole = m.forward_backward(x.data(), y.data(), batch, 1.0f / batch);
    const auto g_whole = m.grads_host();
    m.zero_grads();
    BatchStats parts;
    for (int start : {0, 5, 9})  // uneven micro-batches 5, 4, 3
      parts += m.forward_backward(x.data() + start * mnist.size(), y.data() + start,
                                  (start == 0   ? 5
                                   : start == 5 ? 4
                                                : 3),
                                  1.0f / batch);
    EXPECT_TRUE(all_close(m.grads_host(), g_whole, 1e-6, 1e-4)) << name;
    EXPECT_NEAR(parts.loss_sum, whole.loss_sum, 1e-4);
    EXPECT_EQ(parts.samples, whole.samples);
  }
}

TEST_F(Models, ActivationMemoryScalesWithBatch) {
  Model m(*be, {"2nn"}, mnist, 10);
  EXPECT_EQ(m.activation_bytes(20), 2 * m.activation_bytes(10));
}

// What the backend actually allocated for a pass (the memory accounting of the suites) halves with
// the batch.
TEST_F(Models, MeasuredActivationMemoryHalvesWithTheBatch) {
  for (const char* name : {"2nn", "cnn"}) {
    std::vector<size_t> held;
    for (int batch : {20, 10}) {
      Model m(*be, {name}, mnist, 10);
      m.init(1);
      const auto x = random_vector(size_t(batch) * mnist.size(), 3);
      const std::vector<int32_t> y(size_t(batch), 1);
      EXPECT_EQ(m.activation_bytes_held(), 0u);
      m.zero_grads();
      m.forward_backward(x.data(), y.data(), batch, 1.0f / float(batch));
      m.forward_backward(x.data(), y.data(), batch, 1.0f / float(batch));  // reuses, holds no more
      held.push_back(m.activation_bytes_held());
      EXPECT_EQ(m.parameter_bytes(), 2 * m.num_params() * sizeof(float)) << name;
    }
    EXPECT_EQ(held[0], 2 * held[1]) << name;
    // Dense layers allocate exactly what activation_bytes computes; the CNN's convolution may run
    // in a library (oneDNN) whose own scratch is not the core's allocation.
    if (std::string(name) == "2nn") {
      EXPECT_EQ(held[1], Model(*be, {name}, mnist, 10).activation_bytes(10));
    }
    std::printf("%s: activation memory held at batch 20: %zu bytes, at 10: %zu\n", name, held[0],
                held[1]);
  }
}

// The arithmetic of the `master` topology: workers forward their slices, the master takes the loss
// over all the gathered logits and hands each worker its slice of dlogits, workers backpropagate,
// the master sums their gradients: the whole batch's gradient, up to summation order.
TEST_F(Models, SplitPassesThroughTheLogitsGiveTheWholeBatchGradient) {
  for (const char* name : {"2nn", "cnn"}) {
    const int batch = 12, workers = 3, slice = batch / workers, classes = 10;
    const auto x = random_vector(size_t(batch) * mnist.size(), 4, 0.0f, 1.0f);
    std::vector<int32_t> y(static_cast<size_t>(batch));
    for (int i = 0; i < batch; ++i) y[size_t(i)] = (i * 7) % classes;
    Model whole(*be, {name}, mnist, classes);
    whole.init(5);
    whole.zero_grads();
    const BatchStats want = whole.forward_backward(x.data(), y.data(), batch, 1.0f / batch);

    std::vector<std::unique_ptr<Model>> replicas;
    std::vector<float> logits;  // gathered at the master, in worker order
    for (int w = 0; w < workers; ++w) {
      replicas.push_back(std::make_unique<Model>(*be, ModelSpec{name}, mnist, classes));
      replicas.back()->init(5);
      const float* l = replicas.back()->forward(x.data() + size_t(w) * slice * mnist.size(), slice);
      logits.insert(logits.end(), l, l + size_t(slice) * classes);
    }
    std::vector<float> dlogits(logits.size());
    const double loss =
        be->softmax_xent(dlogits.data(), logits.data(), y.data(), batch, classes, 1.0f / batch);
    std::vector<double> sum(whole.num_params(), 0.0);
    for (int w = 0; w < workers; ++w) {
      Model& m = *replicas[size_t(w)];
      m.zero_grads();
      m.backward(x.data() + size_t(w) * slice * mnist.size(),
                 dlogits.data() + size_t(w) * slice * classes, slice);
      const auto g = m.grads_host();
      for (size_t i = 0; i < g.size(); ++i) sum[i] += g[i];
    }
    EXPECT_NEAR(loss, want.loss_sum, 1e-9 * want.loss_sum) << name;
    EXPECT_TRUE(
        all_close(std::vector<float>(sum.begin(), sum.end()), whole.grads_host(), 1e-7, 1e-4))
        << name;
  }
}

}  // namespace
}  // namespace fedpar
