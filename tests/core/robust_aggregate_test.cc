// The robust aggregation rules on five updates computed by hand: four honest ones on a line,
// u_k = k [1, 10] (k = 1..4), and one attacker [100, -100].
#include "core/robust_aggregate.h"

#include <gtest/gtest.h>

#include "core/attack.h"
#include "core/check.h"

namespace fedpar {
namespace {

class Robust : public ::testing::Test {
 protected:
  std::vector<std::vector<float>> values = {{1, 10}, {2, 20}, {3, 30}, {4, 40}, {100, -100}};
  std::vector<ClientUpdate> updates(size_t n = 5) {
    std::vector<ClientUpdate> u;
    for (size_t k = 0; k < n; ++k) u.push_back({uint32_t(k), 0, 1, values[k]});
    return u;
  }
  std::vector<float> aggregate(const RobustOptions& o, size_t n = 5) {
    std::vector<float> out;
    robust_aggregate(updates(n), Weighting::kBySamples, o, out);
    return out;
  }
};

TEST_F(Robust, MeanIsMovedByTheAttackerTheOthersAreNot) {
  const auto mean = aggregate({});  // (1+2+3+4+100)/5, (10+20+30+40-100)/5 (weights 0.2 in double)
  EXPECT_FLOAT_EQ(mean[0], 22);
  EXPECT_NEAR(mean[1], 0, 1e-12);
  // median: sorted columns [1 2 3 4 100], [-100 10 20 30 40]
  EXPECT_EQ(aggregate({.rule = AggregateRule::kMedian}), (std::vector<float>{3, 20}));
  EXPECT_EQ(aggregate({.rule = AggregateRule::kMedian}, 4), (std::vector<float>{2.5, 25}));
  // trimmed mean, trim 0.2 of 5: one cut from each end: [2 3 4], [10 20 30]
  EXPECT_EQ(aggregate({.rule = AggregateRule::kTrimmedMean, .trim = 0.2}),
            (std::vector<float>{3, 20}));
  // trim 0.1 of 5 cuts nothing, so the median stands in for the mean the attacker moves
  EXPECT_EQ(aggregate({.rule = AggregateRule::kTrimmedMean, .trim = 0.1}),
            (std::vector<float>{3, 20}));
  // trim 0 is the plain mean by choice: the unweighted mean, summed in sorted order
  EXPECT_EQ(aggregate({.rule = AggregateRule::kTrimmedMean, .trim = 0}),
            (std::vector<float>{22, 0}));
}

TEST_F(Robust, KrumPicksTheUpdateNearestItsNeighbours) {
  // honest squared distances 101 (i - j)^2; f = 1 scores the 5 - 1 - 2 = 2 nearest:
  // u1: 101 + 404, u2: 101 + 101, u3: 101 + 101, u4: 101 + 404, attacker: > 20000
  const std::vector<double> s = krum_scores(updates(), 1);
  EXPECT_DOUBLE_EQ(s[0], 505);
  EXPECT_DOUBLE_EQ(s[1], 202);
  EXPECT_DOUBLE_EQ(s[2], 202);
  EXPECT_DOUBLE_EQ(s[3], 505);
  EXPECT_GT(s[4], 20000);
  // a tie between u2 and u3 goes to the lower client id
  EXPECT_EQ(aggregate({.rule = AggregateRule::kKrum}), (std::vector<float>{2, 20}));
  // multi-krum keeps the n - f = 4 lowest scores: the honest four, averaged
  EXPECT_EQ(aggregate({.rule = AggregateRule::kMultiKrum}), (std::vector<float>{2.5, 25}));
  EXPECT_EQ(aggregate({.rule = AggregateRule::kMultiKrum, .select = 2}),
            (std::vector<float>{2.5, 25}));  // u2 and u3
  try {
    krum_scores(updates(4), 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "krum with f = 1 needs more than 2 f + 2 = 4 updates, got 4");
  }
}

TEST_F(Robust, ClippingScalesLongUpdatesOnly) {
  values = {{3, 4}, {0.3f, 0.4f}};
  // [3, 4] (norm 5) scaled to norm 1: [0.6, 0.8]; [0.3, 0.4] (norm 0.5) kept; then the mean
  const auto out = aggregate({.clip_norm = 1}, 2);
  EXPECT_FLOAT_EQ(out[0], 0.45f);
  EXPECT_FLOAT_EQ(out[1], 0.6f);
}

TEST_F(Robust, KrumAndTrimmedMeanFallBackToTheMedianWhenClientsAreMissing) {
  // 4 updates cannot hold f = 1 (n <= 4): the round takes the median instead of stopping
  EXPECT_EQ(aggregate({.rule = AggregateRule::kKrum}, 4), (std::vector<float>{2.5, 25}));
  EXPECT_EQ(aggregate({.rule = AggregateRule::kMultiKrum}, 4), (std::vector<float>{2.5, 25}));
  // what the server's round record says (robust_fallback): Krum's rules at n <= 2f + 2
  EXPECT_TRUE(falls_back_to_median({.rule = AggregateRule::kKrum, .byzantine = 1}, 4));
  EXPECT_FALSE(falls_back_to_median({.rule = AggregateRule::kKrum, .byzantine = 1}, 5));
  EXPECT_TRUE(falls_back_to_median({.rule = AggregateRule::kMultiKrum, .byzantine = 0}, 2));
  EXPECT_FALSE(falls_back_to_median({.rule = AggregateRule::kMultiKrum, .byzantine = 0}, 3));
  EXPECT_FALSE(falls_back_to_median({.rule = AggregateRule::kMedian, .byzantine = 1}, 1));
  // trimmed-mean on updates so few that it cuts none (0.2 cuts one of 5, none of 4) would be the
  // plain mean, which one attacker moves at will
  EXPECT_EQ(aggregate({.rule = AggregateRule::kTrimmedMean, .trim = 0.2}, 4),
            (std::vector<float>{2.5, 25}));
  EXPECT_TRUE(falls_back_to_median({.rule = AggregateRule::kTrimmedMean, .trim = 0.2}, 4));
  EXPECT_FALSE(falls_back_to_median({.rule = AggregateRule::kTrimmedMean, .trim = 0.2}, 5));
  EXPECT_EQ(median_fallback({.rule = AggregateRule::kTrimmedMean, .trim = 0.2}).most, 4u);
  EXPECT_EQ(median_fallback({.rule = AggregateRule::kTrimmedMean, .trim = 0.1}).most, 9u);
  EXPECT_EQ(median_fallback({.rule = AggregateRule::kTrimmedMean, .trim = 0.334}).most, 2u);
  EXPECT_FALSE(falls_back_to_median({.rule = AggregateRule::kTrimmedMean, .trim = 0}, 2));
}

TEST(Attack, EachKindCorruptsOnlyTheAttackers) {
  const std::vector<float> honest = {1, -2};
  auto sent = [&](AttackSpec a, uint32_t client) {
    std::vector<float> u = honest;
    corrupt_update(a, client, 3, 7, u);
    return u;
  };
  EXPECT_EQ(sent({.kind = AttackKind::kSignFlip, .clients = 1}, 0), (std::vector<float>{-1, 2}));
  EXPECT_EQ(sent({.kind = AttackKind::kSignFlip, .clients = 1}, 1), honest) << "client 1 is honest";
  EXPECT_EQ(sent({.kind = AttackKind::kScale, .clients = 2, .scale = -4}, 1),
            (std::vector<float>{-4, 8}));
  const auto noisy = sent({.kind = AttackKind::kNoise, .clients = 1, .sigma = 1}, 0);
  EXPECT_NE(noisy, honest);
  EXPECT_EQ(noisy, sent({.kind = AttackKind::kNoise, .clients = 1, .sigma = 1}, 0)) << "seeded";
  EXPECT_EQ(sent({.kind = AttackKind::kLabelFlip, .clients = 1}, 0), honest)
      << "labels, not updates";
  std::vector<int32_t> y = {0, 3, 9, 4};
  const std::vector<uint32_t> rows = {0, 2};
  flip_labels(y, rows, 10);
  EXPECT_EQ(y, (std::vector<int32_t>{9, 3, 0, 4}));
}

TEST_F(Robust, NamesAreChecked) {
  EXPECT_EQ(parse_aggregate_rule("trimmed-mean"), AggregateRule::kTrimmedMean);
  try {
    parse_aggregate_rule("bulyan");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "unknown aggregation rule 'bulyan' (valid: mean, median, trimmed-mean, krum, "
                 "multi-krum)");
  }
}

}  // namespace
}  // namespace fedpar
