// FL algorithms end to end (real processes, synthetic data): the server optimizers of FedOpt
// change the model the run ends with and still train, and their keys are refused where they do
// not apply.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

constexpr const char* kRun =
    "seed = 4\nregime = 'model'\nrounds = 12\nprocesses = 2\neval_every = 12\n"
    "[data]\nname = 'synthetic'\niid = true\n[partition]\nclients = 4\n"
    "[local]\nsteps = 5\nbatch = 10\nlr = 0.05\n";

testing::CliRun run(const TempDir& tmp, const std::string& name, const std::string& sets) {
  std::ofstream(tmp / "run.toml") << kRun;
  return testing::run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                                 (tmp / "res").string() + " --set name=" + name + " " + sets,
                             tmp.path());
}

double first_loss(const TempDir& tmp, const std::string& name) {
  return testing::jsonl(tmp / "res" / name / "metrics.jsonl").front()["train_loss"];
}
double last_loss(const TempDir& tmp, const std::string& name) {
  return testing::jsonl(tmp / "res" / name / "metrics.jsonl").back()["train_loss"];
}

TEST(ServerOptimizers, EachTrainsAndEndsElsewhereThanFedAvg) {
  TempDir tmp;
  auto r = run(tmp, "fedavg", "");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto fedavg = testing::final_params(tmp / "res" / "fedavg");
  EXPECT_LT(last_loss(tmp, "fedavg"), 0.9 * first_loss(tmp, "fedavg"));
  for (const char* opt : {"avgm", "adagrad", "adam", "yogi"}) {
    // server lr 0.03 for the adaptive ones: their steps are about eta per coordinate
    const std::string lr = std::string(opt) == "avgm" ? "1" : "0.03";
    r = run(tmp, opt,
            fmt::format("--set server_optimizer.name={} --set local.server_lr={}", opt, lr));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_GT(testing::relative_distance(testing::final_params(tmp / "res" / opt), fedavg), 1e-3)
        << opt;
    EXPECT_LT(last_loss(tmp, opt), 0.9 * first_loss(tmp, opt)) << opt << " trains";
  }
}

TEST(ServerOptimizers, RefusedOutsideTheModelRegime) {
  TempDir tmp;
  const auto r = run(tmp, "x", "--set regime=gradient --set server_optimizer.name=adam");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("server_optimizer applies the clients' mean model delta: it needs regime "
                       "= \"model\""),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace fedpar
