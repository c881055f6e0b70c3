// FL algorithms end to end (real processes, synthetic data): the server optimizers of FedOpt
// change the model the run ends with and still train; robust aggregation holds against a
// simulated attacker the mean does not; SCAFFOLD and FedProx beat FedAvg on strongly non-IID
// data (and NIID-Bench's form of SCAFFOLD is another update that trains); FedNova is FedAvg under
// equal work and not under unequal; their keys are refused where they do not apply.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

constexpr const char* kFlRun =
    "seed = 4\nregime = 'model'\nrounds = 12\nprocesses = 2\neval_every = 12\n"
    "[data]\nname = 'synthetic'\niid = true\n[partition]\nclients = 4\n"
    "[local]\nsteps = 5\nbatch = 10\n[optimizer]\nlr = 0.05\n";

testing::CliRun run_fl(const TempDir& tmp, const std::string& name, const std::string& sets) {
  std::ofstream(tmp / "run.toml") << kFlRun;
  return testing::run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                                 (tmp / "res").string() + " --set name=" + name + " " + sets,
                             tmp.path());
}

double first_loss(const TempDir& tmp, const std::string& name) {
  return testing::jsonl(tmp / "res" / name / "metrics.jsonl").front()["train_loss"];
}
// The mean test accuracy of a run's last `last` evaluations.
double test_accuracy(const TempDir& tmp, const std::string& name, int last = 1) {
  double sum = 0;
  int n = 0;
  const auto rows = testing::jsonl(tmp / "res" / name / "metrics.jsonl");
  for (auto it = rows.rbegin(); it != rows.rend() && n < last; ++it)
    if (it->contains("test_accuracy") && !(*it)["test_accuracy"].is_null())
      sum += (*it)["test_accuracy"].get<double>(), ++n;
  return sum / n;
}
double last_loss(const TempDir& tmp, const std::string& name) {
  return testing::jsonl(tmp / "res" / name / "metrics.jsonl").back()["train_loss"];
}

TEST(ServerOptimizers, EachTrainsAndEndsElsewhereThanFedAvg) {
  TempDir tmp;
  auto r = run_fl(tmp, "fedavg", "");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto fedavg = testing::final_params(tmp / "res" / "fedavg");
  EXPECT_LT(last_loss(tmp, "fedavg"), 0.9 * first_loss(tmp, "fedavg"));
  for (const char* opt : {"avgm", "adagrad", "adam", "yogi"}) {
    // server lr 0.03 for the adaptive ones: their steps are about eta per coordinate
    const std::string lr = std::string(opt) == "avgm" ? "1" : "0.03";
    r = run_fl(tmp, opt,
               fmt::format("--set server_optimizer.name={} --set local.server_lr={}", opt, lr));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_GT(testing::relative_distance(testing::final_params(tmp / "res" / opt), fedavg), 1e-3)
        << opt;
    EXPECT_LT(last_loss(tmp, opt), 0.9 * first_loss(tmp, opt)) << opt << " trains";
  }
}

TEST(ServerOptimizers, RefusedOutsideTheModelRegime) {
  TempDir tmp;
  const auto r = run_fl(tmp, "x", "--set regime=gradient --set server_optimizer.name=adam");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("server_optimizer applies the clients' mean model delta: it needs regime "
                       "= \"model\""),
            std::string::npos)
      << r.err;
}

// One client of 7 adds N(0, 3^2) noise to its gradient: the mean takes a seventh of the noise
// into every step, the robust rules leave it out.
TEST(RobustAggregation, HoldsAgainstANoisyAttackerTheMeanDoesNot) {
  TempDir tmp;
  const std::string base =
      "--set regime=gradient --set partition.clients=7 --set sgd.batch=20 --set optimizer.lr=0.3 "
      "--set rounds=30 --set eval_every=30 ";
  const std::string attack = "--set attack.kind=noise --set attack.sigma=3 --set attack.clients=1 ";
  auto accuracy = [&](const std::string& name) { return test_accuracy(tmp, name); };
  ASSERT_EQ(run_fl(tmp, "clean", base).code, 0);
  ASSERT_EQ(run_fl(tmp, "mean", base + attack).code, 0);
  const double clean = accuracy("clean");
  RecordProperty("clean", std::to_string(clean));
  RecordProperty("mean", std::to_string(accuracy("mean")));
  EXPECT_GT(clean, 0.4);  // Synthetic(0, 0) IID after 30 steps (46.8% when written)
  EXPECT_LT(accuracy("mean"), clean - 0.1) << "the attacker drags the mean (29.0%)";
  for (const char* rule : {"median", "trimmed-mean", "krum", "multi-krum"}) {
    const auto r =
        run_fl(tmp, rule, base + attack + "--set robust.trim=0.2 --set robust.rule=" + rule);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_GT(accuracy(rule), clean - 0.04) << rule;  // median 46.3%, krum 48.4%
    RecordProperty(rule, std::to_string(accuracy(rule)));
  }
}

TEST(RobustAggregation, ConfigErrorsNameTheFix) {
  TempDir tmp;
  auto r = run_fl(tmp, "x", "--set robust.rule=krum --set robust.byzantine=1");
  EXPECT_NE(r.err.find("robust.rule = \"krum\" with byzantine = 1 needs more than 4 clients per "
                       "round, this run asks 4"),
            std::string::npos)
      << r.err;
  // a trim that cuts nothing from the round's updates is the mean under another name
  r = run_fl(tmp, "x", "--set robust.rule=trimmed-mean");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("robust.rule = \"trimmed-mean\" with trim = 0.1 cuts floor(0.1 x 4) = 0 of "
                       "the 4 updates a round from each end: it would be the plain mean; raise "
                       "robust.trim to 0.25 (1 / 4) or more"),
            std::string::npos)
      << r.err;
  r = run_fl(tmp, "x", "--set regime=gradient --set topology=allreduce --set robust.rule=median");
  EXPECT_NE(r.err.find("robust aggregation replaces the synchronous parameter server's mean"),
            std::string::npos)
      << r.err;
  r = run_fl(tmp, "x", "--set attack.kind=typo");
  EXPECT_NE(r.err.find("unknown attack 'typo' (valid: none, sign-flip, scale, noise, label-flip)"),
            std::string::npos)
      << r.err;
}

// FedProx's Synthetic(1, 1) setting (logistic regression, 30 devices, 10 per round, 20 local
// epochs at batch 10, lr 0.01): the devices' data differ so much that FedAvg's many local steps
// drift; FedProx (mu = 1) and SCAFFOLD end with better test accuracy after 30 rounds.
TEST(FlAlgorithms, ScaffoldAndFedProxBeatFedAvgOnStronglyNonIidData) {
  TempDir tmp;
  const std::string base =
      "--set seed=1 --set processes=2 --set rounds=30 --set eval_every=5 --set data.iid=false "
      "--set data.alpha=1 --set data.beta=1 --set partition.scheme=natural "
      "--set partition.clients=30 --set fraction=0.3333333333 --set model.name=logreg "
      "--set local.epochs=20 --set local.batch=10 --set optimizer.lr=0.01 ";
  // the mean test accuracy of the last three evaluations (rounds 20, 25, 30)
  auto accuracy = [&](const std::string& name) { return test_accuracy(tmp, name, 3); };
  auto r = run_fl(tmp, "fedavg", base);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_fl(tmp, "fedprox", base + "--set local.prox_mu=1");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_fl(tmp, "scaffold", base + "--set local.algorithm=scaffold");
  ASSERT_EQ(r.code, 0) << r.err;
  // when written: FedAvg 45.8%, FedProx 62.3%, SCAFFOLD 81.0%
  for (const char* name : {"fedavg", "fedprox", "scaffold"})
    RecordProperty(name, fmt::format("{:.3f}", accuracy(name)));
  EXPECT_GT(accuracy("fedprox"), accuracy("fedavg") + 0.05);
  EXPECT_GT(accuracy("scaffold"), accuracy("fedavg") + 0.1);
}

// local.scaffold_correction reaches the clients: with momentum, NIID-Bench's form (the correction
// after the step, outside the momentum) ends with other bytes than the paper's, and still trains.
TEST(FlAlgorithms, ScaffoldsCorrectionAfterTheStepIsAnotherUpdateThatTrains) {
  TempDir tmp;
  const std::string base = "--set local.algorithm=scaffold --set optimizer.momentum=0.9 ";
  auto r = run_fl(tmp, "gradient", base);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_fl(tmp, "after-step", base + "--set local.scaffold_correction=after-step");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GT(testing::relative_distance(testing::final_params(tmp / "res" / "after-step"),
                                       testing::final_params(tmp / "res" / "gradient")),
            1e-4);
  EXPECT_LT(last_loss(tmp, "after-step"), 0.9 * first_loss(tmp, "after-step"));
}

// Equal work (IID equal shards, the same local steps): FedNova's rescaling is 1 and it trains
// FedAvg's model bit for bit. Heterogeneous local steps (local.steps_max): each client's draw
// shows in the samples it processed, and FedNova then ends elsewhere than FedAvg.
TEST(FlAlgorithms, FedNovaIsFedAvgUnderEqualWorkAndDiffersUnderUnequal) {
  TempDir tmp;
  auto r = run_fl(tmp, "fedavg", "");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_fl(tmp, "fednova", "--set local.algorithm=fednova");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(testing::final_params(tmp / "res" / "fednova"),
            testing::final_params(tmp / "res" / "fedavg"));
  const std::string same =
      "local.algorithm = \"fednova\" normalises each update by its client's "
      "local steps, and every client takes the same";
  EXPECT_NE(r.err.find("server: warning: " + same), std::string::npos) << r.err;
  const auto warned = [&](const std::string& run) {
    const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res" / run / "summary.json"));
    for (const auto& w : summary.value("warnings", nlohmann::json::array()))
      if (w.get<std::string>().starts_with(same)) return true;
    return false;
  };
  EXPECT_TRUE(warned("fednova"));
  EXPECT_FALSE(warned("fedavg"));
  const std::string uneven = "--set local.steps=1 --set local.steps_max=9 ";
  r = run_fl(tmp, "fedavg-uneven", uneven);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_fl(tmp, "fednova-uneven", uneven + "--set local.algorithm=fednova");
  ASSERT_EQ(r.code, 0) << r.err;
  std::set<int64_t> steps;
  for (const auto& rec : testing::jsonl(tmp / "res" / "fednova-uneven" / "metrics.jsonl"))
    for (const auto& c : rec["clients"]) {
      const int64_t k = c["samples_processed"].get<int64_t>() / 10;  // local.batch = 10
      EXPECT_TRUE(k >= 1 && k <= 9) << k;
      steps.insert(k);
    }
  EXPECT_GE(steps.size(), 5u) << "48 draws from 1..9";
  EXPECT_FALSE(warned("fednova-uneven"));
  EXPECT_GT(testing::relative_distance(testing::final_params(tmp / "res" / "fednova-uneven"),
                                       testing::final_params(tmp / "res" / "fedavg-uneven")),
            1e-3);
  EXPECT_LT(last_loss(tmp, "fednova-uneven"), 0.9 * first_loss(tmp, "fednova-uneven"));
}

// The model regime's train loss is the mean over the passes a client made, whatever their number:
// at a learning rate too small to move the model, one mini-batch step, five steps and two epochs
// all report the loss of the initial model, as a full-batch gradient round measures it.
TEST(FlAlgorithms, TrainLossIsAMeanOverThePassesMade) {
  TempDir tmp;
  const std::string still = "--set rounds=1 --set eval_every=1 --set optimizer.lr=1e-7 ";
  auto r = run_fl(tmp, "full", still + "--set regime=gradient");
  ASSERT_EQ(r.code, 0) << r.err;
  const double reference = first_loss(tmp, "full");
  for (const auto& [name, sets] :
       std::vector<std::pair<std::string, std::string>>{{"one-step", "--set local.steps=1"},
                                                        {"five-steps", "--set local.steps=5"},
                                                        {"two-epochs", "--set local.epochs=2"}}) {
    r = run_fl(tmp, name, still + sets);
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    EXPECT_NEAR(first_loss(tmp, name), reference, 0.1 * reference) << name;
  }
  // two epochs pass over every sample twice: the same mean as one full-batch pass
  EXPECT_NEAR(first_loss(tmp, "two-epochs"), reference, 1e-3 * reference);
}

TEST(FlAlgorithms, ConfigErrorsNameTheFix) {
  TempDir tmp;
  auto r = run_fl(tmp, "x", "--set local.algorithm=scaffold --set compression.uplink=fp16");
  EXPECT_NE(r.err.find("local.algorithm = \"scaffold\" sends the control variates beside the "
                       "model and the delta"),
            std::string::npos)
      << r.err;
  r = run_fl(tmp, "x", "--set local.algorithm=fednova --set regime=gradient");
  EXPECT_NE(r.err.find("it needs regime = \"model\""), std::string::npos) << r.err;
  r = run_fl(tmp, "x", "--set local.algorithm=fednova --set local.prox_mu=0.1");
  EXPECT_NE(r.err.find("set local.prox_mu = 0"), std::string::npos) << r.err;
  r = run_fl(tmp, "x", "--set local.algorithm=scafold");
  EXPECT_NE(r.err.find("local.algorithm must be fedavg, scaffold or fednova, got 'scafold'"),
            std::string::npos)
      << r.err;
  r = run_fl(tmp, "x", "--set local.algorithm=scaffold --set local.scaffold_correction=before");
  EXPECT_NE(r.err.find("local.scaffold_correction must be gradient or after-step, got 'before'"),
            std::string::npos)
      << r.err;
  r = run_fl(
      tmp, "x",
      "--set local.algorithm=scaffold --set optimizer.momentum=0.9 --set optimizer.nesterov=true");
  EXPECT_NE(r.err.find("set optimizer.nesterov = false (or local.scaffold_correction"),
            std::string::npos)
      << r.err;
  r = run_fl(tmp, "x", "--set local.scaffold_correction=after-step");  // FedAvg has no correction
  EXPECT_NE(r.err.find("local.scaffold_correction is SCAFFOLD's: it needs local.algorithm = "
                       "\"scaffold\", got 'fedavg'"),
            std::string::npos)
      << r.err;
  r = run_fl(tmp, "x", "--set local.steps=5 --set local.steps_max=3");
  EXPECT_NE(r.err.find("local.steps_max must be 0"), std::string::npos) << r.err;
}

// A batch larger than the clients' shards runs as their whole shard: said, and kept in the README.
TEST(BatchBeyondShards, IsAWarningNamingTheSmallestShard) {
  TempDir tmp;
  const auto r = run_fl(tmp, "big", "--set local.batch=100000 --set rounds=1");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string warning =
      "local.batch = 100000 is more than each of the 4 clients holds (the smallest shard: ";
  EXPECT_NE(r.err.find("server: warning: " + warning), std::string::npos) << r.err;
  EXPECT_NE(testing::slurp(tmp / "res" / "big" / "README.md").find(warning), std::string::npos);
  const auto fits = run_fl(tmp, "fits", "--set rounds=1");  // batch 10
  ASSERT_EQ(fits.code, 0) << fits.err;
  EXPECT_EQ(fits.err.find("is more than"), std::string::npos) << fits.err;
  const auto sgd =
      run_fl(tmp, "sgd", "--set regime=gradient --set sgd.batch=100000 --set rounds=1");
  ASSERT_EQ(sgd.code, 0) << sgd.err;
  EXPECT_NE(sgd.err.find("server: warning: sgd.batch = 100000 is more than each of the 4 clients "
                         "holds"),
            std::string::npos)
      << sgd.err;
}

}  // namespace
}  // namespace fedpar
