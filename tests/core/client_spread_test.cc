// spread_of: the summary of per-client values that the log, README, plot and compare share.
#include "core/client_spread.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fedpar {
namespace {

TEST(ClientSpread, SummarizesEachClientOnceWhateverItsSize) {
  const Spread s = spread_of({0.5, 0.9, 0.1, 0.7});
  EXPECT_DOUBLE_EQ(s.mean, 0.55);
  EXPECT_DOUBLE_EQ(s.min, 0.1);
  EXPECT_EQ(s.min_at, 2u);
  EXPECT_DOUBLE_EQ(s.max, 0.9);
  EXPECT_DOUBLE_EQ(s.median, 0.6);
  EXPECT_NEAR(s.std, std::sqrt((0.0025 + 0.1225 + 0.2025 + 0.0225) / 4), 1e-15);
  EXPECT_DOUBLE_EQ(s.worst10, 0.1);  // 4 clients: the lowest one
}

TEST(ClientSpread, WorstTenPercentIsTheMeanOfTheLowestTenthRoundedUp) {
  std::vector<double> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);  // 20 clients: the lowest two
  EXPECT_DOUBLE_EQ(spread_of(v).worst10, 1.5);
  EXPECT_EQ(spread_of(v).min_at, 19u);
  v.push_back(0.5);  // 21: the lowest three
  EXPECT_DOUBLE_EQ(spread_of(v).worst10, (0.5 + 1 + 2) / 3);
  EXPECT_EQ(spread_of({0.3, 0.3}).min_at, 0u);  // the first, on ties
}

TEST(ClientSpread, AnEmptyListIsAllZero) {
  const Spread s = spread_of({});
  EXPECT_EQ(s.mean, 0);
  EXPECT_EQ(s.worst10, 0);
  EXPECT_EQ(s.min_at, 0u);
}

}  // namespace
}  // namespace fedpar
