// The equivalence experiment as README's quickstart runs it (real server and 4 client processes
// per variant, real MNIST), shortened: gradient averaging and one-step model averaging land at
// the rounding floor of centralized gradient descent; five local steps and uniform weights over
// unequal shards land orders of magnitude away.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/util/run_fedpar.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

TEST(EquivalenceExperiment, GradientAndOneStepModelAveragingAreGradientDescent) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  const auto r = testing::run_fedpar(
      std::string("run ") + FEDPAR_SOURCE_DIR + "/experiments/equivalence.toml --set rounds=30 " +
          "--set equivalence.train_limits=6000,2000 --set results_dir=" + (tmp / "res").string(),
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| (e) |"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(testing::slurp(tmp / "res/equivalence/equivalence.json"));
  ASSERT_EQ(j["cases"].size(), 2u);
  for (const auto& c : j["cases"]) {
    SCOPED_TRACE(c["model"].get<std::string>());
    EXPECT_EQ(c["processes"], 4);
    std::map<std::string, double> rel;
    for (const auto& row : c["rows"]) rel[row["id"]] = row["relative"];
    const double floor = rel["a'"];
    EXPECT_GT(floor, 0.0);  // the two summation orders really differ
    EXPECT_LT(floor, 1e-6);
    for (const char* id : {"b", "c"}) {
      EXPECT_LE(rel[id], 10 * floor) << id;
      EXPECT_LT(rel[id], 1e-5) << id;
    }
    for (const char* id : {"d", "e"}) EXPECT_GT(rel[id], 100 * std::max(rel["b"], rel["c"])) << id;
    EXPECT_TRUE(c["bc_within_10x_floor"].get<bool>());
  }
  EXPECT_TRUE(std::filesystem::exists(tmp / "res/equivalence/report.md"));
  EXPECT_TRUE(std::filesystem::exists(tmp / "res/equivalence/runs/2nn-e/metrics.jsonl"));
}

TEST(EquivalenceExperiment, BadSettingsFailBeforeAnyRun) {
  TempDir tmp;
  const auto r = testing::run_fedpar(
      std::string("run ") + FEDPAR_SOURCE_DIR + "/experiments/equivalence.toml --set " +
          "equivalence.train_limits=0 --set results_dir=" + (tmp / "res").string(),
      tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("same length"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "res/equivalence"));
}

}  // namespace
}  // namespace fedpar
