// Real MNIST as fetched by scripts/setup.sh: sizes, the known label counts, and a quick fit.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/backend.h"
#include "core/dataset.h"
#include "core/trainer.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

TEST(Mnist, SizesAndLabelCounts) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST not fetched: run scripts/setup.sh";
  const TrainTest tt = load_dataset({.name = "mnist"});
  ASSERT_EQ(tt.train.size(), 60000u);
  ASSERT_EQ(tt.test.size(), 10000u);
  EXPECT_EQ(tt.train.dim(), 784u);
  std::vector<int> counts(10, 0);
  for (int32_t y : tt.train.y) ++counts[y];
  EXPECT_EQ(counts, (std::vector<int>{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}));
  float lo = 1, hi = 0;
  for (float v : tt.train.x) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
  EXPECT_EQ(tt.train.y[0], 5);  // the famous first training digit
}

TEST(Mnist, LogisticRegressionLearnsFromASubset) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST not fetched: run scripts/setup.sh";
  TrainTest tt = load_dataset({.name = "mnist", .train_limit = 6000, .test_limit = 2000});
  auto be = make_backend("cpu");
  Model m(*be, {"logreg"}, tt.train.shape, 10);
  TrainOptions opts{.epochs = 1, .batch = 10, .seed = 1};
  train(m, tt.train, tt.test, opts);
  const BatchStats st = evaluate(m, tt.test);
  EXPECT_GT(double(st.correct) / double(st.samples), 0.85);
}

TEST(Mnist, CnnLossFallsOnASubset) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST not fetched: run scripts/setup.sh";
  TrainTest tt = load_dataset({.name = "mnist", .train_limit = 100, .test_limit = 1});
  auto be = make_backend("cpu");
  Model m(*be, {"cnn"}, tt.train.shape, 10);
  m.init(1);
  const double before = evaluate(m, tt.train).loss_sum / 100;
  TrainOptions opts{.epochs = 10, .batch = 20, .seed = 1};
  opts.lr.base_lr = 0.1f;
  opts.sgd.momentum = 0.9f;
  train(m, tt.train, {}, opts, {}, /*init=*/false);
  const double after = evaluate(m, tt.train).loss_sum / 100;
  EXPECT_NEAR(before, std::log(10.0), 0.2);  // an untrained 10-way classifier
  EXPECT_LT(after, 0.7 * before);
}

}  // namespace
}  // namespace fedpar
