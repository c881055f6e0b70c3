// Synthetic(alpha, beta): the published shape, determinism, and heterogeneity growing with alpha.
#include "core/synthetic.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "core/dataset.h"

namespace fedpar {
namespace {

TEST(Synthetic, ShapeUsersAndSplit) {
  const TrainTest tt = generate_synthetic({.alpha = 1.0, .beta = 1.0, .seed = 3});
  EXPECT_EQ(tt.train.dim(), 60u);
  EXPECT_EQ(tt.train.num_classes, 10);
  EXPECT_EQ(tt.train.x.size(), tt.train.size() * 60);
  std::set<int32_t> users(tt.train.user.begin(), tt.train.user.end());
  EXPECT_EQ(users.size(), 30u);
  EXPECT_EQ(*users.begin(), 0);
  EXPECT_EQ(*users.rbegin(), 29);
  const double frac = double(tt.train.size()) / double(tt.train.size() + tt.test.size());
  EXPECT_NEAR(frac, 0.9, 0.01);
  std::vector<size_t> per_user(30, 0);
  for (int32_t u : tt.train.user) ++per_user[u];
  for (int32_t u : tt.test.user) ++per_user[u];
  for (size_t n : per_user) EXPECT_GE(n, 50u);  // floor(lognormal) + 50
  for (int32_t y : tt.train.y) ASSERT_TRUE(y >= 0 && y < 10);
}

TEST(Synthetic, DeterministicPerSeed) {
  const TrainTest a = generate_synthetic({.alpha = 0.5, .beta = 0.5, .seed = 1});
  const TrainTest b = generate_synthetic({.alpha = 0.5, .beta = 0.5, .seed = 1});
  const TrainTest c = generate_synthetic({.alpha = 0.5, .beta = 0.5, .seed = 2});
  EXPECT_EQ(a.train.x, b.train.x);
  EXPECT_EQ(a.train.y, b.train.y);
  EXPECT_NE(a.train.x, c.train.x);
}

// Mean over users of the total-variation distance between a user's label histogram and the
// global one: heterogeneous data (alpha = beta = 1) is far more skewed than the IID variant.
double label_skew(const Dataset& d) {
  std::vector<std::vector<double>> h(30, std::vector<double>(10, 0));
  std::vector<double> global(10, 0);
  for (size_t i = 0; i < d.size(); ++i) {
    h[d.user[i]][d.y[i]] += 1;
    global[d.y[i]] += 1;
  }
  double skew = 0;
  for (auto& row : h) {
    double n = 0;
    for (double v : row) n += v;
    double tv = 0;
    for (int c = 0; c < 10; ++c) tv += std::abs(row[c] / n - global[c] / double(d.size()));
    skew += 0.5 * tv / 30;
  }
  return skew;
}

TEST(Synthetic, HeterogeneityGrowsWithAlphaBeta) {
  const double iid = label_skew(generate_synthetic({.iid = true, .seed = 4}).train);
  const double het = label_skew(generate_synthetic({.alpha = 1.0, .beta = 1.0, .seed = 4}).train);
  EXPECT_LT(iid, 0.25);
  EXPECT_GT(het, 0.4);
}

// A limit above the set's size keeps the whole set, and says so (the run's settings still show
// the number asked for); a limit within it, or none, says nothing.
TEST(Synthetic, ALimitAboveTheSetSaysAllAreUsed) {
  DataOptions o{.name = "synthetic", .alpha = 1, .beta = 1};
  const TrainTest whole = load_dataset(o);
  o.train_limit = 100'000'000;
  const auto said = limits_above_the_data(o, load_dataset(o));
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], fmt::format("data.train_limit = 100000000 is more than the {} training "
                                 "samples: all are used",
                                 whole.train.size()));
  o.train_limit = 10, o.test_limit = 5;
  EXPECT_TRUE(limits_above_the_data(o, load_dataset(o)).empty());
  EXPECT_TRUE(limits_above_the_data({.name = "synthetic"}, whole).empty());
}

}  // namespace
}  // namespace fedpar
