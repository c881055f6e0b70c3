// The centralized trainer: one full-batch step is exactly w - lr * grad; runs are reproducible;
// accumulation matches big batches; training actually learns.
#include "core/trainer.h"

#include <gtest/gtest.h>

#include <numeric>

#include "core/backend.h"
#include "core/batch_buffer.h"
#include "core/synthetic.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::all_close;

class Trainer : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> be = make_backend("cpu");
  TrainTest data = generate_synthetic({.iid = true, .seed = 5});
};

TEST_F(Trainer, FullBatchStepIsGradientDescent) {
  Model m(*be, {"linreg"}, data.train.shape, 10);
  m.init(1);
  const auto w0 = m.params_host();
  // The gradient of the mean loss over the whole training set, computed by hand.
  std::vector<uint32_t> all(data.train.size());
  std::iota(all.begin(), all.end(), 0u);
  std::vector<float> x(all.size() * data.train.dim());
  std::vector<int32_t> y(all.size());
  data.train.gather(all, x.data(), y.data());
  m.zero_grads();
  m.forward_backward(x.data(), y.data(), int(all.size()), 1.0f / float(all.size()));
  const auto g = m.grads_host();

  TrainOptions opts{.epochs = 1, .batch = 0, .seed = 1, .shuffle = false};
  opts.lr.base_lr = 0.05f;
  m.set_params_host(w0);
  train(m, data.train, {}, opts, {}, /*init=*/false);
  std::vector<float> want(w0.size());
  for (size_t i = 0; i < w0.size(); ++i) want[i] = w0[i] - 0.05f * g[i];
  EXPECT_EQ(m.params_host(), want);  // bit for bit: same gradient, same update
}

TEST_F(Trainer, SameSeedSameBytes) {
  TrainOptions opts{.epochs = 2, .batch = 32, .seed = 9};
  Model a(*be, {"mlp", {16}}, data.train.shape, 10), b(*be, {"mlp", {16}}, data.train.shape, 10);
  train(a, data.train, data.test, opts);
  train(b, data.train, data.test, opts);
  EXPECT_EQ(a.params_host(), b.params_host());
  opts.seed = 10;
  train(b, data.train, data.test, opts);
  EXPECT_NE(a.params_host(), b.params_host());
}

TEST_F(Trainer, AccumulationMatchesOneBigBatch) {
  TrainOptions big{.epochs = 1, .batch = 64, .seed = 2};
  big.sgd.momentum = 0.9f;
  TrainOptions acc = big;
  acc.accumulate = 4;
  Model a(*be, {"mlp", {16}}, data.train.shape, 10), b(*be, {"mlp", {16}}, data.train.shape, 10);
  train(a, data.train, {}, big);
  train(b, data.train, {}, acc);
  EXPECT_TRUE(all_close(b.params_host(), a.params_host(), 1e-5, 1e-4));
}

TEST_F(Trainer, LearnsAndReportsEveryStepAndEpoch) {
  TrainOptions opts{.epochs = 3, .batch = 20, .seed = 3};
  opts.lr.base_lr = 0.05f;
  Model m(*be, {"logreg"}, data.train.shape, 10);
  int64_t steps = 0;
  std::vector<EpochInfo> epochs;
  train(m, data.train, data.test, opts,
        {.on_step = [&](const StepInfo& s) { steps = s.step; },
         .on_epoch = [&](const EpochInfo& e) { epochs.push_back(e); }});
  EXPECT_EQ(steps, 3 * steps_per_epoch(data.train.size(), 20));
  ASSERT_EQ(epochs.size(), 3u);
  EXPECT_EQ(epochs[0].train.samples, int64_t(data.train.size()));
  EXPECT_EQ(epochs[2].test.samples, int64_t(data.test.size()));
  const double first = epochs[0].train.loss_sum / epochs[0].train.samples;
  const double last = epochs[2].train.loss_sum / epochs[2].train.samples;
  EXPECT_LT(last, 0.8 * first);
  const double acc = double(epochs[2].test.correct) / double(epochs[2].test.samples);
  EXPECT_GT(acc, 0.6);  // 10 classes: chance is 0.1
}

TEST_F(Trainer, BatchBufferReloadsWhenRowsOrDatasetChange) {
  BatchBuffer buf(*be, data.train.dim());
  const size_t d = data.train.dim();
  auto row_is = [&](const Dataset& ds, size_t slot, uint32_t row) {
    return std::equal(buf.x_at(slot), buf.x_at(slot) + d, ds.x.begin() + ptrdiff_t(row * d)) &&
           *buf.y_at(slot) == ds.y[row];
  };
  const std::vector<uint32_t> a = {3, 1, 4}, b = {1, 5, 9};
  buf.load(data.train, a);
  buf.load(data.train, a);  // the same rows: kept
  EXPECT_TRUE(row_is(data.train, 0, 3) && row_is(data.train, 2, 4));
  buf.load(data.train, b);
  EXPECT_TRUE(row_is(data.train, 0, 1) && row_is(data.train, 1, 5) && row_is(data.train, 2, 9));
  buf.load(data.train, std::span(b).first(2));  // a prefix is other rows too
  buf.load(data.test, std::span(b).first(2));   // same indices, another dataset
  EXPECT_TRUE(row_is(data.test, 0, 1) && row_is(data.test, 1, 5));
  const std::vector<uint32_t> run = {7, 8, 9};  // consecutive rows: used in place on the CPU
  buf.load(data.train, run);
  EXPECT_EQ(buf.x(), data.train.x.data() + 7 * d);
  EXPECT_TRUE(row_is(data.train, 0, 7) && row_is(data.train, 2, 9));
  buf.load(data.train, b);  // and copied again for scattered rows
  EXPECT_NE(buf.x(), data.train.x.data() + 1 * d);
  EXPECT_TRUE(row_is(data.train, 0, 1) && row_is(data.train, 1, 5) && row_is(data.train, 2, 9));
}

TEST(StepsPerEpoch, CountsPartialBatches) {
  EXPECT_EQ(steps_per_epoch(60000, 10), 6000);
  EXPECT_EQ(steps_per_epoch(101, 10), 11);
  EXPECT_EQ(steps_per_epoch(60000, 0), 1);
  EXPECT_EQ(steps_per_epoch(5, 600), 1);
}

}  // namespace
}  // namespace fedpar
