// What the reports take as a step: its time (a master's loss between its exchanges included) and
// its rounds (the steady ones, after the first, without an evaluation).
#include "experiments/run_metrics.h"

#include <gtest/gtest.h>

#include "core/run_records.h"

namespace fedpar {
namespace {

// A master's wait_seconds leaves out its loss phase (the loss and the sends of its gradients):
// the step once read 12.5% short for logistic regression at full batch.
TEST(StepMs, AMastersStepCountsItsLossAndTheAggregation) {
  RoundRecord r;
  r.wait_seconds = 1.0;
  EXPECT_DOUBLE_EQ(step_ms(r), 1000.0);
  r.aggregate_seconds = 0.25;
  EXPECT_DOUBLE_EQ(step_ms(r), 1250.0);
  r.master_loss_seconds = 0.5;
  EXPECT_DOUBLE_EQ(step_ms(r), 1750.0);
}

// The first round (its TASKs bring a ring its model) and evaluated rounds (the model back to the
// server) are one-offs, left out where other rounds remain; kept where every round is one.
TEST(SteadyRounds, LeaveOutTheFirstAndTheEvaluatedWhereOthersRemain) {
  std::vector<RoundRecord> rounds(5);
  for (int i = 0; i < 5; ++i) rounds[size_t(i)].round = i + 1;
  rounds[2].test_accuracy = 0.5;  // round 3 evaluated
  std::vector<int64_t> kept;
  for (const RoundRecord& r : steady_rounds(rounds)) kept.push_back(r.round);
  EXPECT_EQ(kept, (std::vector<int64_t>{2, 4, 5}));
  std::vector<RoundRecord> evaluated(2);  // every round evaluated: the first still goes
  evaluated[0].round = 1, evaluated[1].round = 2;
  evaluated[0].test_accuracy = evaluated[1].test_accuracy = 0.5;
  kept.clear();
  for (const RoundRecord& r : steady_rounds(evaluated)) kept.push_back(r.round);
  EXPECT_EQ(kept, (std::vector<int64_t>{2}));
  kept.clear();
  for (const RoundRecord& r : steady_rounds({rounds[0]})) kept.push_back(r.round);
  EXPECT_EQ(kept, (std::vector<int64_t>{1}));
}

// A ring or a split model sends the server its model on the rounds that save or checkpoint it,
// evaluated or not (model_sent_up); a simulated split model's rounds each carry its timings, whose
// bytes differ from round to round by a few (their text), and say nothing of a model.
TEST(SteadyRounds, LeaveOutTheRoundsThatSentTheServerTheModel) {
  std::vector<RoundRecord> rounds(6);
  for (int i = 0; i < 6; ++i)
    rounds[size_t(i)].round = i + 1, rounds[size_t(i)].diagnostic_bytes_up = 400 + 3 * (i % 3);
  rounds[3].model_sent_up = true;  // round 4: a checkpoint
  rounds[3].diagnostic_bytes_up = 4400;
  std::vector<int64_t> kept;
  for (const RoundRecord& r : steady_rounds(rounds)) kept.push_back(r.round);
  EXPECT_EQ(kept, (std::vector<int64_t>{2, 3, 5, 6}));
  for (RoundRecord& r : rounds)
    r.model_sent_up = true;  // every round saved: all kept, but the first
  kept.clear();
  for (const RoundRecord& r : steady_rounds(rounds)) kept.push_back(r.round);
  EXPECT_EQ(kept, (std::vector<int64_t>{2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace fedpar
