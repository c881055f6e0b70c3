// `fedpar suite iid-vs-noniid --smoke` as a user runs it (real processes, real MNIST): the report,
// the plots and the suite's qualitative claim: label skew lowers accuracy after the same rounds.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/util/run_fedpar.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

TEST(Suite, IidVsNonIidSmokeShowsSkewCostsAccuracy) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  const auto r = testing::run_fedpar("suite iid-vs-noniid --smoke --out " + (tmp / "s").string(), tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(testing::slurp(tmp / "s/suite.json"));
  std::map<std::string, nlohmann::json> runs;
  for (const auto& run : j["runs"]) runs[run["label"]] = run;
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
  const auto r = testing::run_fedpar("suite fedprox-synthetic --smoke --out " + (tmp / "s").string(), tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(testing::slurp(tmp / "s/suite.json"));
  std::map<std::string, double> acc;
  for (const auto& run : j["runs"]) acc[run["label"]] = run["final_accuracy"];
  ASSERT_EQ(acc.size(), 4u);
  EXPECT_GT(acc["iid"], acc["synthetic-1-1"] + 10);
  EXPECT_GT(acc["synthetic-0-0"], acc["synthetic-1-1"]);
}

TEST(Suite, FedavgPaperSmokeCountsRoundsToTargetAndStopsThere) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  const auto r = testing::run_fedpar("suite fedavg-paper --smoke --out " + (tmp / "s").string(), tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(testing::slurp(tmp / "s/suite.json"));
  std::map<std::string, int> rounds;  // 0 = target not reached
  for (const auto& run : j["runs"]) rounds[run["label"]] = run["rounds_to_target"];
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
