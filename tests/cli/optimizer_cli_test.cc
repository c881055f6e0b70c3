// The [optimizer] table in real runs (processes over ZeroMQ, synthetic data): the schedule counts
// global steps, so a one-client full-batch parameter server follows fedpar train's curve to the
// same model; each round records its rate; accumulation changes only the rounding; bf16 and fp16
// train; the linear rule multiplies the rate by the global batch over the reference; and each key
// is refused, with its fix, where it cannot apply.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/optimizer.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::jsonl;
using testing::TempDir;

constexpr const char* kData =
    "[data]\nname = 'synthetic'\niid = true\n[model]\nname = 'mlp'\nhidden = [32]\n"
    "[optimizer]\nlr = 0.3\nmomentum = 0.5\nschedule = 'cosine'\nwarmup_steps = 4\n";

testing::CliRun run_sgd(const TempDir& tmp, const std::string& name, const std::string& sets) {
  std::ofstream(tmp / "run.toml") << "seed = 3\nregime = 'gradient'\nrounds = 12\neval_every = 12\n"
                                  << kData << "[partition]\nclients = 1\n[sgd]\nbatch = 0\n";
  return testing::run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                                 (tmp / "res").string() + " --set name=" + name + " " + sets,
                             tmp.path());
}

TEST(Optimizer, TheScheduleCountsGlobalStepsAsCentralizedTrainingDoes) {
  TempDir tmp;
  auto r = run_sgd(tmp, "ps", "");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ofstream(tmp / "train.toml")
      << "seed = 3\n"
      << kData << "[train]\nepochs = 12\nbatch = 'full'\n";  // shuffle = true: a full batch is not
  r = testing::run_fedpar("train --config " + (tmp / "train.toml").string() +
                              " --set results_dir=" + (tmp / "res").string() + " --set name=train",
                          tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  // 12 full-batch steps of warm-up then cosine, on one machine or through the server
  EXPECT_EQ(testing::final_params(tmp / "res" / "ps"),
            testing::final_params(tmp / "res" / "train"));
  const LrSchedule expect{.kind = "cosine", .base_lr = 0.3f, .total_steps = 12, .warmup_steps = 4};
  const auto rounds = jsonl(tmp / "res" / "ps" / "metrics.jsonl");
  ASSERT_EQ(rounds.size(), 12u);
  for (size_t i = 0; i < rounds.size(); ++i)
    EXPECT_FLOAT_EQ(rounds[i]["lr"].get<float>(), expect.at(int64_t(i))) << "round " << i + 1;
}

TEST(Optimizer, AccumulationChangesOnlyTheRoundingAndPrecisionsTrain) {
  TempDir tmp;
  const std::string two = "--set partition.clients=2 --set processes=2 --set sgd.batch=24 ";
  auto r = run_sgd(tmp, "whole", two);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto whole = testing::final_params(tmp / "res" / "whole");
  r = run_sgd(tmp, "acc4", two + "--set optimizer.accumulate=4");
  ASSERT_EQ(r.code, 0) << r.err;
  const double d = testing::relative_distance(testing::final_params(tmp / "res" / "acc4"), whole);
  EXPECT_LT(d, 1e-5) << "the same mean gradient, summed in four parts";
  for (const char* p : {"bf16", "fp16"}) {
    r = run_sgd(tmp, p, two + "--set optimizer.precision=" + p);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto rounds = jsonl(tmp / "res" / p / "metrics.jsonl");
    EXPECT_LT(rounds.back()["train_loss"].get<double>(),
              0.8 * rounds.front()["train_loss"].get<double>())
        << p << " trains";
    EXPECT_GT(testing::relative_distance(testing::final_params(tmp / "res" / p), whole), 1e-5)
        << p << " rounds the products";
  }
}

// A diverged run's round (summary.json), after checking that the run kept and evaluated the
// last finite model, the one of the round before.
int64_t diverged_at_keeping_the_last_finite_model(const std::filesystem::path& run) {
  const auto summary = nlohmann::json::parse(std::ifstream(run / "summary.json"));
  const int64_t at = summary["diverged_at_round"].get<int64_t>();
  EXPECT_EQ(summary["rounds_run"].get<int64_t>(), at - 1);
  EXPECT_EQ(summary["final"]["round"].get<int64_t>(), at - 1) << "the last finite model, evaluated";
  for (const float w : testing::final_params(run)) EXPECT_TRUE(std::isfinite(w));
  if (at >= 2) {  // that round's record as metrics.jsonl has it (its bytes, its loss), not zeros
    const auto line = testing::jsonl(run / "metrics.jsonl").at(size_t(at - 2));
    for (const char* key : {"bytes_sent_total", "bytes_received_total", "train_loss", "lr"})
      EXPECT_EQ(summary["final"][key], line[key]) << key;
    EXPECT_GT(summary["final"]["bytes_sent_total"].get<double>(), 0);
  }
  // the run's README says where and why, naming the round once
  const std::string readme = testing::slurp(run / "README.md");
  EXPECT_NE(readme.find(fmt::format("- **diverged** at round {}: ", at)), std::string::npos)
      << readme;
  EXPECT_EQ(readme.find(fmt::format("round {}: round", at)), std::string::npos) << readme;
  return at;
}

// A rate far too large: the clients' gradients overflow to NaN. The run ends at that round with
// the last finite model kept and evaluated (exit 4), rather than waiting out the deadline for an
// update that cannot come.
TEST(Optimizer, ADivergedRunEndsAtItsFirstNonFiniteUpdateAndKeepsItsModel) {
  TempDir tmp;
  const auto r = run_sgd(tmp, "diverged",
                         "--set partition.clients=2 --set processes=2 --set sgd.batch=24 "
                         "--set optimizer.lr=1e6 --set optimizer.warmup_steps=0");
  ASSERT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("fedpar: the training diverged: round"), std::string::npos) << r.err;
  const int64_t at = diverged_at_keeping_the_last_finite_model(tmp / "res" / "diverged");
  EXPECT_GE(at, 1);
  EXPECT_LT(at, 12) << "it diverged before the last round";
  EXPECT_EQ(jsonl(tmp / "res" / "diverged" / "metrics.jsonl").size(), size_t(at - 1));
}

// Finite updates, but the server's own step overflows: two clients send gradients scaled near
// float's limit ([attack] scale) and momentum 0.9 adds them up past it. The run ends there with
// the round before's model, finite, rather than saving an infinite one as its last.
TEST(Optimizer, AServerStepThatOverflowsEndsTheRunWithTheModelBeforeIt) {
  TempDir tmp;
  const auto r = run_sgd(tmp, "overflow",
                         "--set partition.clients=2 --set processes=2 --set sgd.batch=24 "
                         "--set attack.kind=scale --set attack.clients=2 --set attack.scale=1e39 "
                         "--set optimizer.momentum=0.9 --set optimizer.lr=1e-40 "
                         "--set optimizer.warmup_steps=0 --set optimizer.schedule=constant");
  ASSERT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("the server's step left a non-finite value"), std::string::npos) << r.err;
  EXPECT_GE(diverged_at_keeping_the_last_finite_model(tmp / "res" / "overflow"), 2)
      << "round 1's velocity is one gradient: finite";
}

TEST(Optimizer, LinearScalingMultipliesTheRateByTheGlobalBatch) {
  TempDir tmp;
  // 4 clients x 20 samples = 80 against a reference of 10: 8 x 0.3 (after the warm-up)
  auto r = run_sgd(tmp, "scaled",
                   "--set partition.clients=4 --set processes=2 --set sgd.batch=20 "
                   "--set optimizer.scaling=linear --set optimizer.reference_batch=10 "
                   "--set optimizer.schedule=constant --set optimizer.lr=0.03");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rounds = jsonl(tmp / "res" / "scaled" / "metrics.jsonl");
  EXPECT_FLOAT_EQ(rounds[0]["lr"].get<float>(), 0.24f / 4) << "warm-up step 1 of 4";
  EXPECT_FLOAT_EQ(rounds[5]["lr"].get<float>(), 0.24f);
  // and the server stepped at it: the same model as the rate 0.24 written without scaling
  r = run_sgd(tmp, "plain",
              "--set partition.clients=4 --set processes=2 --set sgd.batch=20 "
              "--set optimizer.schedule=constant --set optimizer.lr=0.24");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(testing::final_params(tmp / "res" / "scaled"),
            testing::final_params(tmp / "res" / "plain"));
}

TEST(Optimizer, KeysAreRefusedWhereTheyCannotApply) {
  TempDir tmp;
  auto r = run_sgd(tmp, "x",
                   "--set regime=model --set optimizer.scaling=linear "
                   "--set optimizer.reference_batch=10");
  EXPECT_NE(r.err.find("optimizer.scaling sets a data-parallel step's rate from its global "
                       "batch: it needs regime = \"gradient\" or \"async\""),
            std::string::npos)
      << r.err;
  r = run_sgd(tmp, "x", "--set optimizer.scaling=linear --set optimizer.reference_batch=10");
  EXPECT_NE(r.err.find("does not fix (full-batch steps)"), std::string::npos) << r.err;
  r = run_sgd(tmp, "x",
              "--set topology=pipeline --set processes=2 --set sgd.batch=8 "
              "--set optimizer.accumulate=2");
  EXPECT_NE(r.err.find("a pipeline splits its batch with pipeline.micro_batches"),
            std::string::npos)
      << r.err;
  r = run_sgd(tmp, "x", "--set regime=async --set sgd.batch=8 --set optimizer.precision=fp16");
  EXPECT_NE(r.err.find("use bf16 with regime = \"async\""), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fedpar
