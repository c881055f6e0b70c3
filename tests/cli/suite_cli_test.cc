// `fedpar suite iid-vs-noniid --smoke` as a user runs it (real processes, real MNIST): the report,
// the plots and the suite's qualitative claim: label skew lowers accuracy after the same rounds.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/util/run_fedpar.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

// Runs `fedpar suite NAME --smoke` into tmp/s and returns its runs by label (empty on failure).
std::map<std::string, nlohmann::json> smoke_runs(const std::string& name, const TempDir& tmp) {
  const auto r = testing::run_fedpar("suite " + name + " --smoke --out " + (tmp / "s").string(), tmp.path());
  EXPECT_EQ(r.code, 0) << r.err;
  std::map<std::string, nlohmann::json> runs;
  if (r.code != 0) return runs;
  const auto suite = nlohmann::json::parse(testing::slurp(tmp / "s/suite.json"));
  for (const auto& run : suite["runs"]) runs[run["label"]] = run;
  return runs;
}

TEST(Suite, IidVsNonIidSmokeShowsSkewCostsAccuracy) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  auto runs = smoke_runs("iid-vs-noniid", tmp);
  ASSERT_EQ(runs.size(), 8u);
  const double iid = runs["iid"]["final_accuracy"];
  EXPECT_GT(iid, 80.0);
  for (const char* skewed : {"shards-2", "labels-1", "labels-2", "dirichlet-0.1"}) {
    EXPECT_LT(runs[skewed]["final_accuracy"].get<double>(), iid - 10) << skewed;
    EXPECT_GT(runs[skewed]["median_emd"].get<double>(), 3 * runs["iid"]["median_emd"].get<double>()) << skewed;
  }
  EXPECT_LT(runs["labels-1"]["final_accuracy"].get<double>(), 20.0);  // one label per client
  // Updates agree less when labels are skewed.
  auto mean_cosine = [&](const char* label) {
    double s = 0;
    for (double c : runs[label]["mean_pairwise_cosine"]) s += c;
    return s / double(runs[label]["mean_pairwise_cosine"].size());
  };
  EXPECT_LT(mean_cosine("shards-2"), mean_cosine("iid"));
  const std::string report = testing::slurp(tmp / "s/report.md");
  EXPECT_NE(report.find("| dirichlet-0.1 |"), std::string::npos);
  EXPECT_NE(report.find("plots/accuracy-vs-round.svg"), std::string::npos) << report;
  EXPECT_NE(testing::slurp(tmp / "s/plots/accuracy-vs-bytes.svg").find("<svg"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(tmp / "s/runs/labels-3/metrics.jsonl"));
}

TEST(Suite, FedproxSyntheticSmokeShowsHeterogeneityCostsAccuracy) {
  TempDir tmp;
  std::map<std::string, double> acc;
  for (const auto& [label, run] : smoke_runs("fedprox-synthetic", tmp)) acc[label] = run["final_accuracy"];
  ASSERT_EQ(acc.size(), 4u);
  EXPECT_GT(acc["iid"], acc["synthetic-1-1"] + 10);
  EXPECT_GT(acc["synthetic-0-0"], acc["synthetic-1-1"]);
}

TEST(Suite, FedavgPaperSmokeCountsRoundsToTargetAndStopsThere) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  std::map<std::string, int> rounds;  // 0 = target not reached
  for (const auto& [label, run] : smoke_runs("fedavg-paper", tmp)) rounds[label] = run["rounds_to_target"];
  ASSERT_EQ(rounds.size(), 4u);
  ASSERT_GT(rounds["fedavg-iid"], 0);
  for (const char* slower : {"fedavg-noniid", "fedsgd-iid", "fedsgd-noniid"})
    EXPECT_TRUE(rounds[slower] == 0 || rounds[slower] > rounds["fedavg-iid"]) << slower;
  // The run stopped at the round it reached the target: no more rounds were logged.
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "s/runs/fedavg-iid/summary.json"));
  EXPECT_TRUE(summary["stopped_at_accuracy"].get<bool>());
  EXPECT_EQ(summary["rounds_run"], rounds["fedavg-iid"]);
  EXPECT_NE(testing::slurp(tmp / "s/report.md").find("rounds to 85%"), std::string::npos);
}

TEST(Suite, UnknownSuiteNamesTheShippedOnes) {
  TempDir tmp;
  const auto r = testing::run_fedpar("suite no-such-suite", tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("iid-vs-noniid"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fedpar
