// Real MNIST as fetched by scripts/setup.sh: sizes, the known label counts, a quick fit, and the
// rows a client process reads in pieces.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/backend.h"
#include "core/check.h"
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

// A report that needs only the shape reads it from dataset_header, which does not load MNIST:
// its header is the loaded set's, and holds no rows; a generated set's header is its own.
TEST(Mnist, TheHeaderIsTheLoadedSetsShapeAndClassesWithoutItsRows) {
  const DataOptions synthetic{.name = "synthetic", .alpha = 1, .beta = 1};
  const Dataset generated = dataset_header(synthetic);
  EXPECT_EQ(generated.shape.size(), load_dataset(synthetic).train.dim());
  EXPECT_EQ(generated.num_classes, 10);
  EXPECT_EQ(generated.size() + generated.x.size(), 0u);
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST not fetched: run scripts/setup.sh";
  const Dataset header = dataset_header({.name = "mnist"});
  const TrainTest tt = load_dataset({.name = "mnist"});
  EXPECT_EQ(header.name, tt.train.name);
  EXPECT_EQ(header.shape.h, tt.train.shape.h);
  EXPECT_EQ(header.shape.w, tt.train.shape.w);
  EXPECT_EQ(header.shape.c, tt.train.shape.c);
  EXPECT_EQ(header.num_classes, tt.train.num_classes);
  EXPECT_EQ(header.size() + header.x.size(), 0u);
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

// A client's rows read in pieces are the rows of the whole set, and its hash is the whole set's,
// with and without a limit; a row past the end is an error that names it.
TEST(Mnist, TrainingRowsReadInPiecesAreTheWholeSetsRows) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST not fetched: run scripts/setup.sh";
  for (size_t limit : {size_t(0), size_t(5000)}) {
    const Dataset whole = load_dataset({.name = "mnist", .train_limit = limit}).train;
    const std::vector<uint32_t> rows = {0, 1, 1023, 1024, 1025, 2047, 4999};
    const TrainingRows part = load_training_rows({.name = "mnist", .train_limit = limit}, rows);
    EXPECT_EQ(part.full_size, whole.size());
    EXPECT_EQ(part.content_hash, whole.content_hash());
    ASSERT_EQ(part.data.size(), rows.size());
    Dataset expected = whole;
    expected.keep_rows(rows);
    EXPECT_EQ(part.data.x, expected.x);
    EXPECT_EQ(part.data.y, expected.y);
    EXPECT_EQ(part.data.shape.size(), whole.shape.size());
    const std::vector<uint32_t> past = {uint32_t(whole.size())};
    try {
      load_training_rows({.name = "mnist", .train_limit = limit}, past);
      ADD_FAILURE() << "a row past the end was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("sample {} was asked for", whole.size())),
                std::string::npos)
          << e.what();
    }
  }
}

// What a server loads: the whole set's labels and hash without its features, the test set whole.
TEST(Mnist, AServerLoadsLabelsAndHashWithoutTrainingFeatures) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST not fetched: run scripts/setup.sh";
  const DataOptions o{.name = "mnist", .train_limit = 7000, .test_limit = 500};
  const TrainTest whole = load_dataset(o);
  std::string hash;
  const TrainTest server = load_without_training_features(o, hash);
  EXPECT_EQ(hash, whole.train.content_hash());
  EXPECT_EQ(server.train.y, whole.train.y);
  EXPECT_TRUE(server.train.x.empty());
  EXPECT_EQ(server.train.dim(), whole.train.dim());
  EXPECT_EQ(server.test.x, whole.test.x);
  EXPECT_EQ(server.test.y, whole.test.y);
}

}  // namespace
}  // namespace fedpar
