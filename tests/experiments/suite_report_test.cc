// The suite report's results table: a run whose seconds and round time count another clock than
// most runs' says which, and the rounds-to-target cells come from the first evaluation at the
// target.
#include "experiments/suite_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "core/run_records.h"
#include "experiments/plot.h"
#include "experiments/run_metrics.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

SuiteRun run(const std::string& label, const std::string& clock) {
  SuiteRun r{.label = label, .group = label, .clients = 4};
  r.curves.round = {10, 20};
  r.curves.accuracy = {80, 90};
  r.curves.test_loss = {0.5, 0.3};
  r.curves.mb = {5, 10};
  r.curves.seconds = {1.5, 3.0};
  r.curves.clock = clock;
  r.curves.round_seconds = 0.15;
  return r;
}

// The row of `label` in `table`.
std::string row(const std::string& table, const std::string& label) {
  const auto at = table.find("| " + label + " |");
  return at == std::string::npos ? "" : table.substr(at, table.find('\n', at) - at);
}

TEST(ResultsTable, ASecondsCellOnAnotherClockSaysWhich) {
  const std::string table =
      results_table({run("a", "simulated"), run("b", "simulated"), run("ring", "server")}, 85);
  EXPECT_NE(row(table, "a").find("| 20 | 3.0 | 10.0 |"), std::string::npos) << table;
  EXPECT_NE(row(table, "ring").find("| 20 | 3.0 (server time) | 10.0 |"), std::string::npos)
      << table;
  EXPECT_TRUE(row(table, "a").ends_with("| 10.0 | 0.150 |")) << table;
  EXPECT_TRUE(row(table, "ring").ends_with("| 10.0 | 0.150 (server time) |")) << table;
  // one clock for all: no marker
  EXPECT_EQ(results_table({run("a", "server"), run("b", "server")}, 85).find(" time)"),
            std::string::npos);
}

// eval_clients: each run's clients' spread at its last evaluated round beside the test accuracy
// of that round; runs without it get no row, and no run with it gives no table.
TEST(ClientsTable, GivesTheClientsSpreadAtTheLastEvaluatedRound) {
  SuiteRun iid = run("iid", "server"), skewed = run("skewed", "server");
  iid.curves.client_round = {10, 20};
  iid.curves.client_mean = {70, 91.5};
  iid.curves.client_worst10 = {60, 88.25};
  iid.curves.client_min = {55, 87};
  iid.curves.client_max = {80, 95};
  iid.median_emd = 0.1;
  EXPECT_EQ(clients_table({skewed}), "");
  const std::string table = clients_table({iid, skewed});
  EXPECT_EQ(row(table, "iid"), "| iid | 0.100 | 20 | 90.00% | 91.50% | 88.25% | 87.00% | 95.00% |")
      << table;
  EXPECT_EQ(row(table, "skewed"), "") << table;
  // a run that held samples out (partition.holdout): a column says what scored each run
  SuiteRun held = iid;
  held.label = "iid-held", held.client_holdout = 0.2;
  const std::string both = clients_table({iid, held});
  EXPECT_NE(both.find("| run | median EMD | scored on | round |"), std::string::npos) << both;
  EXPECT_EQ(row(both, "iid"),
            "| iid | 0.100 | training shard | 20 | 90.00% | 91.50% | 88.25% | 87.00% | 95.00% |");
  EXPECT_EQ(
      row(both, "iid-held"),
      "| iid-held | 0.100 | held-out 20% | 20 | 90.00% | 91.50% | 88.25% | 87.00% | 95.00% |");
}

// The runs' warnings, each once with the runs that gave it, in the order they first came.
TEST(WarningsList, GivesEachWarningOnceWithItsRuns) {
  SuiteRun a = run("adam1", "server"), b = run("adam2", "server"), c = run("sgd", "server");
  EXPECT_EQ(warnings_list({a, b, c}), "");
  a.warnings = {"lr too high", "machine busy"};
  b.warnings = {"lr too high"};
  c.warnings = {"machine busy"};
  EXPECT_EQ(warnings_list({a, b, c}),
            "- lr too high (runs adam1, adam2)\n- machine busy (runs adam1, sgd)\n");
  EXPECT_EQ(warnings_list({b}), "- lr too high (run adam2)\n");
}

// Paired runs' weight divergence at the first, middle and last saved round, and the median of the
// drift each run logged (a run without drift: "-"; no run with drift: no column).
TEST(DivergenceTable, GivesEachPairedRunsDivergenceAndMedianDrift) {
  SuiteRun k1 = run("iid-K1", "server"), k2 = run("iid-K2", "server");
  for (SuiteRun* r : {&k1, &k2}) {
    r->reference = "iid-gradient";
    r->divergence.round = {1, 2, 3};
  }
  k1.divergence.relative = {1e-9, 2e-9, 3e-9};
  k2.divergence.relative = {1e-3, 5e-2, 9e-2};
  k2.curves.drift = {0.4, 0.1, 0.3, 0.2};                    // median 0.25
  const SuiteRun reference = run("iid-gradient", "server");  // no reference: no row
  const std::string t = divergence_table({reference, k1, k2});
  EXPECT_EQ(std::ranges::count(t, '\n'), 4) << t;  // the header, its rule, 2 rows
  EXPECT_EQ(row(t, "iid-K2"),
            "| iid-K2 | iid-gradient | 2.50e-01 | 1.00e-03 (round 1) | 5.00e-02 (round 2) | "
            "9.00e-02 (round 3) |")
      << t;
  EXPECT_EQ(row(t, "iid-K1"),
            "| iid-K1 | iid-gradient | - | 1.00e-09 (round 1) | 2.00e-09 (round 2) | 3.00e-09 "
            "(round 3) |")
      << t;
  k2.curves.drift.clear();
  EXPECT_EQ(divergence_table({k1, k2}).find("drift"), std::string::npos);
}

// DP-FedAvg's runs: each one's epsilon at its own delta (in the header where they share one) and
// the share of its seeds' updates clipped; a run that clipped nothing has no row.
TEST(PrivacyTable, EachRunsEpsilonAtItsDeltaAndTheShareClippedOverItsSeeds) {
  // "clip": clipped without noise; "z1": two seeds; "none": nothing clipped, no row
  std::vector<SuiteRun> runs = {run("none", "server"), run("clip", "server"),
                                run("z1-s1", "server"), run("z1-s2", "server")};
  runs[1].curves.clipped = 3, runs[1].curves.aggregated = 4;
  for (int s : {2, 3}) {
    runs[s].group = "z1";
    runs[s].curves.epsilon = 7.97;
    runs[s].curves.clipped = uint64_t(s), runs[s].curves.aggregated = 10;
  }
  std::string table = privacy_table(runs);
  EXPECT_NE(table.find("| run | epsilon at delta = 1e-05 | updates clipped |"), std::string::npos)
      << table;
  EXPECT_EQ(row(table, "clip"), "| clip | none (no noise) | 75.0% |") << table;
  EXPECT_EQ(row(table, "z1"), "| z1 | 7.97 | 25.0% |") << table;
  EXPECT_EQ(row(table, "none"), "") << table;
  // runs at different deltas: each row gives its own (the suite's base delta is no run's)
  runs[1].curves.epsilon = 2.5, runs[1].privacy_delta = 1e-3;
  table = privacy_table(runs);
  EXPECT_NE(table.find("| run | epsilon (delta) | updates clipped |"), std::string::npos) << table;
  EXPECT_EQ(row(table, "clip"), "| clip | 2.5 (0.001) | 75.0% |") << table;
  EXPECT_EQ(row(table, "z1"), "| z1 | 7.97 (1e-05) | 25.0% |") << table;
  // a delta not known (compare's run whose config could not be read) is said, not assumed
  runs[1].privacy_delta = std::nan("");
  EXPECT_EQ(row(privacy_table(runs), "clip"), "| clip | 2.5 (delta unknown) | 75.0% |");
  EXPECT_NE(privacy_table(runs).find("| epsilon (delta) |"), std::string::npos);
  runs[1].privacy_delta = 1e-3;
  // one run: its delta in the header
  EXPECT_EQ(row(privacy_table({runs[1]}), "clip"), "| clip | 2.5 | 75.0% |");
  // clipping alone everywhere: the column says so
  runs[1].curves.epsilon.reset();
  EXPECT_EQ(
      privacy_table({runs[0], runs[1]}),
      "| run | epsilon | updates clipped |\n|---|---|---|\n| clip | none (no noise) | 75.0% |\n");
}

// A run's seeds together: the final accuracy's mean, sample standard deviation and range, the best
// accuracy's mean, and how many seeds reached the target in how many rounds on average; a run of
// one seed alone makes no table.
TEST(SeedMeansTable, AveragesEachRunsSeeds) {
  std::vector<SuiteRun> runs;
  for (const auto& [seed, finals] : std::vector<std::pair<int, std::vector<double>>>{
           {1, {80, 90}}, {2, {86, 88}}, {3, {70, 84}}}) {
    SuiteRun r = run("fedavg-s" + std::to_string(seed), "server");
    r.group = "fedavg";
    r.curves.accuracy = finals;
    runs.push_back(r);
  }
  SuiteRun diverged = run("sgd-s1", "server");
  diverged.group = "sgd";
  diverged.diverged_at_round = 3;
  runs.push_back(diverged);
  runs.push_back(diverged);
  runs.back().label = "sgd-s2";
  const std::string table = seed_means_table(runs, 85);
  // finals 90, 88, 84: mean 87.33, sample std 3.06; bests the same; 85% reached by seeds 1 and 2
  // at rounds 20 and 10
  EXPECT_EQ(row(table, "fedavg"),
            "| fedavg | 3 | 87.33% | 3.06 | 84.00 .. 90.00% | 87.33% | 2 of 3 | 15.0 |")
      << table;
  EXPECT_EQ(row(table, "sgd"), "| sgd | 2 (2 diverged or unevaluated) | - | - | - | - | 0 | - |")
      << table;
  EXPECT_EQ(seed_means_table({run("a", "server"), run("b", "server")}, 85), "");
}

// A swept setting with seeds: each value over its seeds, so one lucky seed does not pick it (a C
// sweep once reported the single best seed as "the best learning rate").
TEST(GridTable, AValueIsJudgedOverItsSeeds) {
  std::vector<SuiteRun> runs;
  for (const auto& [value, bests] : std::vector<std::pair<std::string, std::vector<double>>>{
           {"0.1", {84, 84}}, {"0.5", {70, 90}}}) {
    for (size_t k = 0; k < bests.size(); ++k) {
      SuiteRun r = run("iid@" + value + "-s" + std::to_string(k + 1), "server");
      r.group = "iid@" + value;
      r.curves.accuracy = {50, bests[k]};
      runs.push_back(r);
    }
  }
  // 0.5's seed 2 is the best run (90%), 0.1 the best value (84% against 80% over the seeds)
  EXPECT_EQ(row(grid_table(runs, 0), "iid"), "| iid | 0.1 0.5 | 0.1 | 84.00% |")
      << grid_table(runs, 0);
  EXPECT_NE(grid_table(runs, 0).find("| best (mean over its seeds) |"), std::string::npos);
  // with a target: more seeds at it first (0.1: both; 0.5: one), then their mean rounds
  const std::string t = grid_table(runs, 83);
  EXPECT_EQ(row(t, "iid"), "| iid | 0.1 0.5 | 0.1 | 20.0 (2 of 2 seeds) | 84.00% |") << t;
  // shares, not counts: 0.5 with one seed left (the other's run failed), which reached the
  // target, beats 0.1 with two of three there
  runs.erase(runs.begin() + 2);  // 0.5's seed 1 (70%)
  runs.insert(runs.begin() + 2, runs[1]);
  runs[2].label = "iid@0.1-s3", runs[2].curves.accuracy = {50, 80};  // short of 83%
  const std::string shares = grid_table(runs, 83);
  EXPECT_EQ(row(shares, "iid"), "| iid | 0.1 0.5 | 0.5 | 20.0 (1 of 1 seeds) | 90.00% |") << shares;
  // a grid whose every run diverged shows no accuracy (it read 0.00%)
  for (SuiteRun& r : runs) r.diverged_at_round = 2;
  EXPECT_EQ(row(grid_table(runs, 0), "iid"),
            "| iid | 0.1 0.5 | 0.1 | - (all 3 diverged or unevaluated) |")
      << grid_table(runs, 0);
}

// A run's rounds read back: the seconds and the round time count the links' simulated time where
// the records carry it (a network run), else the server's wait + aggregation.
TEST(ReadCurves, TheRoundTimeCountsTheSecondsClock) {
  testing::TempDir tmp;
  const auto write = [&](bool simulated) {
    std::ofstream out(tmp / "metrics.jsonl");
    double time = 0;
    for (int64_t k = 1; k <= 4; ++k) {
      RoundRecord r{.round = k, .topology = "parameter-server", .wait_seconds = 0.01};
      r.aggregate_seconds = 0.002;
      if (k % 2 == 0) r.test_accuracy = 0.5, r.test_loss = 1.0;  // evaluated every 2 rounds
      if (simulated) r.simulated_seconds = 5.0 + k, r.simulated_time = time += 5.0 + k;
      out << to_json(r).dump() << "\n";
    }
  };
  write(true);  // 6 + 7 + 8 + 9 = 30 s over 4 rounds
  RunCurves c = read_curves(tmp.path());
  EXPECT_EQ(c.clock, "simulated");
  EXPECT_EQ(c.seconds, (std::vector<double>{13, 30}));
  EXPECT_DOUBLE_EQ(c.round_seconds, 7.5);
  write(false);  // the server's 0.012 s a round
  c = read_curves(tmp.path());
  EXPECT_EQ(c.clock, "server");
  EXPECT_NEAR(c.seconds.back(), 0.048, 1e-12);
  EXPECT_NEAR(c.round_seconds, 0.012, 1e-12);
}

// A round with one client update has no cosine (a round of fraction 0.05 once recorded 0, read as
// "orthogonal"): its curve holds NaN there, and the plot draws no point for it.
TEST(ReadCurves, ARoundWithoutACosineIsNotDrawnAtZero) {
  testing::TempDir tmp;
  {
    std::ofstream out(tmp / "metrics.jsonl");
    for (int64_t k = 1; k <= 3; ++k) {
      RoundRecord r{.round = k, .topology = "parameter-server", .test_accuracy = 0.5};
      r.test_loss = 1.0;
      if (k != 2) r.mean_pairwise_cosine = 0.25 * double(k);
      out << to_json(r).dump() << "\n";
    }
  }
  const RunCurves c = read_curves(tmp.path());
  ASSERT_EQ(c.cosine.size(), 3u);
  EXPECT_EQ(c.cosine[0], 0.25);
  EXPECT_TRUE(std::isnan(c.cosine[1]));
  const LinePlot p{.title = "t",
                   .xlabel = "round",
                   .ylabel = "cosine",
                   .series = {{"a", c.round, c.cosine, {}, {}}}};
  draw_line_plot(tmp / "p.svg", p, nullptr);
  EXPECT_EQ(testing::slurp(tmp / "p.svg.dat"), "# a\n1 0.25\n3 0.75\n\n\n");
}

// A few rounds on the x axis are ticked at each round, not at 1.5, 2.5, ...; a long run, or an
// axis of fractions, keeps gnuplot's own ticks.
TEST(LinePlot, AFewWholeRoundsAreTickedOneByOne) {
  testing::TempDir tmp;
  const auto script = [&](std::vector<double> x) {
    const LinePlot p{.title = "t",
                     .xlabel = "round",
                     .ylabel = "y",
                     .series = {{"a", x, std::vector<double>(x.size(), 1.0), {}, {}}}};
    draw_line_plot(tmp / "p.svg", p, nullptr);
    return testing::slurp(tmp / "p.svg.gp");
  };
  EXPECT_NE(script({1, 2, 3, 4, 5}).find("set xtics 1\n"), std::string::npos);
  EXPECT_EQ(script({1, 50, 100}).find("set xtics"), std::string::npos);
  EXPECT_EQ(script({0.5, 1.5, 2.5}).find("set xtics"), std::string::npos);
}

// Past the 8 colours, a series is told from the one of its colour by its point shape: no two of
// many runs drawn alike (runs 1 and 9 of a compare had the same colour and shape).
TEST(LinePlot, NoTwoOfManySeriesShareColourAndShape) {
  testing::TempDir tmp;
  LinePlot p{.title = "t", .xlabel = "round", .ylabel = "y"};
  for (int i = 0; i < 20; ++i) p.series.push_back({fmt::format("s{}", i), {1, 2}, {1, 2}, {}, {}});
  draw_line_plot(tmp / "p.svg", p, nullptr);
  const std::string gp = testing::slurp(tmp / "p.svg.gp");
  std::set<std::pair<int, std::string>> seen;  // (colour, shape)
  const std::regex each("linespoints pt (\\d+) ps 0.5 lc (\\d+)");
  for (auto it = std::sregex_iterator(gp.begin(), gp.end(), each); it != std::sregex_iterator();
       ++it)
    EXPECT_TRUE(seen.insert({(std::stoi((*it)[2]) - 1) % 8, (*it)[1]}).second) << (*it)[0];
  EXPECT_EQ(seen.size(), 20u) << gp;
}

}  // namespace
}  // namespace fedpar
