// Every shipped suite plans at both sizes: each run's config (the base, the run's overrides,
// --smoke's) resolves, so a rule added to the run spec that a suite's full size breaks is caught
// here (a rule that needs the data, such as the natural scheme's count of users, is not).
#include <gtest/gtest.h>

#include "core/check.h"
#include "experiments/suite.h"

namespace fedpar {
namespace {

TEST(SuitePlan, EveryShippedSuiteResolvesEveryRunAtBothSizes) {
  const auto names = suite_names();
  ASSERT_GE(names.size(), 10u);
  for (const auto& name : names)
    for (const bool smoke : {false, true}) {
      SCOPED_TRACE(name + (smoke ? " --smoke" : ""));
      ::testing::internal::CaptureStderr();
      try {
        EXPECT_GE(check_suite({.name = name, .smoke = smoke}), 1u);
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
      }
      // and no run sets what it does not read
      const std::string err = ::testing::internal::GetCapturedStderr();
      EXPECT_EQ(err.find("do not read"), std::string::npos) << err;
    }
}

// A run that sets what it does not read is named at the plan: a K sweep run with local.epochs
// trained every K alike, its report's rows still saying local.steps = K.
TEST(SuitePlan, RunsThatSetWhatTheyDoNotReadAreNamed) {
  ::testing::internal::CaptureStderr();
  check_suite({.name = "grad-vs-model", .smoke = true, .sets = {"local.epochs=2"}});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fedpar suite: warning: run(s) iid-K5, shards-K5 do not read local.steps = "
                     "5: local.epochs = 2 replaces it"),
            std::string::npos)
      << err;
}

TEST(SuitePlan, ABadRunIsNamedBeforeAnythingRuns) {
  try {
    check_suite({.name = "robust", .smoke = true, .sets = {"processes=64"}});
    ADD_FAILURE() << "planned a suite whose runs cannot start";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("processes = 64"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("robust.toml, run 'none-mean': "), std::string::npos)
        << e.what();
  }
}

TEST(SuitePlan, ATargetAccuracyGivenAsAFractionIsRefused) {
  try {
    check_suite({.name = "topologies", .smoke = true, .sets = {"suite.target_accuracy=0.9"}});
    ADD_FAILURE() << "took 0.9 for a percent";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("suite.target_accuracy must be a percent in (1, 100] or "
                                         "0 (none), got 0.9: 90 for 90%"),
              std::string::npos)
        << e.what();
  }
  EXPECT_GE(check_suite({.name = "topologies", .smoke = true, .sets = {"suite.target_accuracy=0"}}),
            1u);
}

// A pair that names no run (here: a sweep relabelled every run LABEL@VALUE) lists the runs there
// are, so the pair can be written with their labels.
TEST(SuitePlan, APairOfUnknownRunsListsTheSuitesRuns) {
  try {
    check_suite(
        {.name = "grad-vs-model", .smoke = true, .sets = {"suite.sweep=optimizer.lr=0.1,0.2"}});
    ADD_FAILURE() << "planned pairs of runs the sweep renamed";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("is not \"run reference\" of two runs of the suite; its runs are "),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("iid-gradient@0.1, "), std::string::npos) << what;
    EXPECT_NE(what.find("labelled LABEL@VALUE"), std::string::npos) << what;
  }
}

// A --set holds for every run, a run's own value included: where that makes a run invalid (the
// equivalence suite's centralized run has one process), the error says which --set replaced what.
TEST(SuitePlan, ASetThatReplacedARunsOwnValueIsNamedInItsError) {
  try {
    check_suite({.name = "equivalence", .smoke = true, .sets = {"processes=2"}});
    ADD_FAILURE() << "planned a one-client run on two processes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(--set processes=2 replaced its own processes=1: a --set "
                                         "holds for every run of the suite"),
              std::string::npos)
        << e.what();
  }
}

// suite.only leaves out the pairs of the runs it left out (it once refused the suite's own pairs,
// to be restated by hand); a pair that names no run of the suite is still refused.
TEST(SuitePlan, OnlyKeepsThePairsOfTheRunsItKeeps) {
  EXPECT_EQ(check_suite({.name = "grad-vs-model",
                         .smoke = true,
                         .sets = {"suite.only=iid-gradient,iid-K1,iid-K5"}}),
            3u);
  try {
    check_suite({.name = "grad-vs-model",
                 .smoke = true,
                 .sets = {"suite.only=iid-gradient,iid-K1", "suite.pairs=iid-K1 iid-grad"}});
    ADD_FAILURE() << "planned a pair of a run the suite does not have";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("suite.pairs: 'iid-K1 iid-grad' is not"),
              std::string::npos)
        << e.what();
  }
}

// A run the suite's own section cannot compare is named before any run starts (the parallelism
// section's once failed the suite after all its runs had trained).
TEST(SuitePlan, ARunItsSectionCannotCompareIsRefusedBeforeAnythingRuns) {
  const std::pair<const char*, const char*> cases[] = {
      {"parallelism",
       "the parallelism section (suite.parallelism = true) compares allreduce, "
       "pipeline and tensor runs"},
      {"lr-scaling",
       "the lr-scaling section (suite.lr_scaling = true) compares data-parallel "
       "steps"}};
  for (const auto& [suite, message] : cases) {
    SCOPED_TRACE(suite);
    const std::string set =
        std::string(suite) == "parallelism" ? "topology=parameter-server" : "regime=model";
    try {
      check_suite({.name = suite, .smoke = true, .sets = {set}});
      ADD_FAILURE() << "planned runs the suite's section cannot compare";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(".toml, run '"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fedpar
