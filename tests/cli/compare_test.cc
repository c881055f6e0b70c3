// `fedpar compare` on real finished runs: the table and compare.json carry each run's final and
// best values and the first round at the target, as its metrics.jsonl says; the plot is drawn;
// what is not a distributed run's folder is refused with what it is.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

// A short run of tmp/run.toml into res/NAME with `sets` (" --set KEY=VALUE ...").
void one_run(const TempDir& tmp, const std::string& name, const std::string& sets) {
  const auto r = testing::run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                                         (tmp / "res").string() + " --set name=" + name + sets,
                                     tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
}

// Two short runs that differ in their learning rate, evaluated every other round.
void two_runs(const TempDir& tmp) {
  std::ofstream(tmp / "run.toml") << "rounds = 10\neval_every = 2\nprocesses = 2\n"
                                     "[data]\nname = 'synthetic'\niid = true\n"
                                     "[model]\nname = 'logreg'\n";
  one_run(tmp, "slow", " --set optimizer.lr=0.01");
  one_run(tmp, "fast", " --set optimizer.lr=0.3");
}

// tmp/run.toml: 3 rounds of logistic regression on IID synthetic data, 2 client processes.
void three_rounds(const TempDir& tmp) {
  std::ofstream(tmp / "run.toml") << "rounds = 3\nprocesses = 2\n[data]\nname = 'synthetic'\n"
                                     "iid = true\n[model]\nname = 'logreg'\n";
}

// `fedpar compare` of the runs res/NAME..., then `flags`.
auto compare(const TempDir& tmp, const std::vector<std::string>& names, const std::string& flags) {
  std::string args = "compare";
  for (const auto& n : names) args += fmt::format(" {}", (tmp / "res" / n).string());
  return testing::run_fedpar(args + flags, tmp.path());
}

TEST(Compare, TabulatesAndPlotsWhatEachRunRecorded) {
  TempDir tmp;
  two_runs(tmp);
  const auto r = compare(tmp, {"slow", "fast"}, " --target 40 --out " + (tmp / "cmp").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| slow |"), std::string::npos) << r.out;
  // what tells the runs apart is in their row: the one setting their configs differ in
  EXPECT_NE(r.out.find("| run | settings that differ |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| slow | `optimizer.lr=0.01` |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| fast | `optimizer.lr=0.3` |"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(testing::slurp(tmp / "cmp/compare.json"));
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& row : j["runs"]) {
    SCOPED_TRACE(row["run"].get<std::string>());
    double last = 0, best = 0;
    nlohmann::json first_at_target = nullptr;
    for (const auto& rec :
         testing::jsonl(tmp / "res" / row["run"].get<std::string>() / "metrics.jsonl")) {
      if (!rec.contains("test_accuracy") || rec["test_accuracy"].is_null()) continue;
      last = 100 * rec["test_accuracy"].get<double>();
      best = std::max(best, last);
      if (last >= 40 && first_at_target.is_null()) first_at_target = rec["round"];
    }
    EXPECT_DOUBLE_EQ(row["final"].get<double>(), last);
    EXPECT_DOUBLE_EQ(row["best"].get<double>(), best);
    EXPECT_EQ(row["target_round"], first_at_target);
  }
  // the fast rate reaches 40% and the slow one does not: the table tells them apart
  EXPECT_FALSE(j["runs"][1]["target_round"].is_null());
  EXPECT_TRUE(j["runs"][0]["target_round"].is_null());
  EXPECT_EQ(r.out.find("at its first evaluation"), std::string::npos) << r.out;
  // a percent given as a loss target: every run met it at once, which the report says
  const auto loss = compare(tmp, {"slow", "fast"}, " --metric loss --target 90");
  ASSERT_EQ(loss.code, 0) << loss.err;
  EXPECT_NE(loss.out.find("Every run was at or below --target 90 at its first evaluation: the "
                          "target tells them apart in nothing (loss is in the loss's own units, "
                          "not a percent: the runs' first evaluated loss ranged from "),
            std::string::npos)
      << loss.out;
  EXPECT_NE(testing::slurp(tmp / "cmp/accuracy-vs-round.svg").find("<svg"), std::string::npos);
  EXPECT_NE(testing::slurp(tmp / "cmp/report.md").find("![test accuracy (%) per round]"),
            std::string::npos);
  // a folder of runs (a suite's runs/) stands for its finished runs, in name order: not a run
  // still under its partial name, nor one kept to resume
  for (const char* unfinished : {".x.partial-1", "y.incomplete"}) {
    std::filesystem::create_directories(tmp / "res" / unfinished);
    std::filesystem::copy_file(tmp / "res/slow/metrics.jsonl",
                               tmp / "res" / unfinished / "metrics.jsonl");
  }
  const auto all = testing::run_fedpar(
      "compare " + (tmp / "res").string() + " --out " + (tmp / "cmpall").string(), tmp.path());
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_TRUE(nlohmann::json::parse(testing::slurp(tmp / "cmpall/compare.json"))["target"]
                  .is_null());  // none was asked
  // a report never goes into (or beside, as NAME-2) a run's own folder
  testing::expect_refused(
      "compare " + (tmp / "res/slow").string() + " --out " + (tmp / "res/slow").string(),
      tmp.path(), 2, "is a run's results folder: give the report a folder");
  const auto again = testing::run_fedpar(
      "compare " + (tmp / "res").string() + " --out " + (tmp / "cmpall").string(), tmp.path());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find((tmp / "cmpall").string() + " exists, so the report went to " +
                           (tmp / "cmpall-2").string()),
            std::string::npos)
      << again.err;
  EXPECT_NE(all.err.find("leaving out the unfinished run(s) in " + (tmp / "res").string() +
                         ": .x.partial-1 (unfinished: 10 rounds), y.incomplete (unfinished: 10 "
                         "rounds) (name a folder"),
            std::string::npos)
      << all.err;
  const auto ja = nlohmann::json::parse(testing::slurp(tmp / "cmpall/compare.json"));
  ASSERT_EQ(ja["runs"].size(), 2u);
  // the runs named one by one beside a comparison's folder (a glob over results/): it is left out
  const auto glob = testing::run_fedpar(
      "compare " + (tmp / "res/slow").string() + " " + (tmp / "cmpall").string() + " " +
          (tmp / "res/fast").string() + " --out " + (tmp / "cmpglob").string(),
      tmp.path());
  ASSERT_EQ(glob.code, 0) << glob.err;
  EXPECT_NE(glob.err.find("leaving out " + (tmp / "cmpall").string() + ": a comparison's folder"),
            std::string::npos)
      << glob.err;
  EXPECT_EQ(ja["runs"][0]["run"], "fast");
  EXPECT_EQ(ja["runs"][1]["run"], "slow");
  // a run given twice (by its folder and inside a folder of runs) is one run, not a pair alike
  const auto twice =
      testing::run_fedpar("compare " + (tmp / "res/slow").string() + " " + (tmp / "res").string() +
                              " --out " + (tmp / "cmptwice").string(),
                          tmp.path());
  ASSERT_EQ(twice.code, 0) << twice.err;
  EXPECT_NE(twice.err.find("leaving out " + (tmp / "res/slow").string() + ": given already"),
            std::string::npos)
      << twice.err;
  EXPECT_EQ(nlohmann::json::parse(testing::slurp(tmp / "cmptwice/compare.json"))["runs"].size(),
            2u);
  // against bytes the columns say their unit, MB (what the values are), not "bytes"
  const auto b = compare(tmp, {"slow"}, " --x bytes --target 40 --out " + (tmp / "cmpb").string());
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.out.find("| MB at the end | first evaluated round at or above 40% | MB then |"),
            std::string::npos)
      << b.out;
  // evaluated every 2 rounds, it may have got there a round before its row's: the cell says so
  const auto t = compare(tmp, {"slow"}, " --target 20 --out " + (tmp / "cmpt").string());
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_TRUE(std::regex_search(t.out, std::regex(R"(\| \d+ \(evaluated every 2\) \|)"))) << t.out;
  const auto last = testing::jsonl(tmp / "res/slow/metrics.jsonl").back();
  EXPECT_DOUBLE_EQ(
      nlohmann::json::parse(testing::slurp(tmp / "cmpb/compare.json"))["runs"][0]["x_at_end"]
          .get<double>(),
      double(last["bytes_sent_total"].get<uint64_t>() +
             last["bytes_received_total"].get<uint64_t>()) /
          1e6);
  // each direction alone: what the server received (the uplink a codec shrinks), and sent
  for (const auto& [axis, key] : {std::pair{"bytes-up", "bytes_received_total"},
                                  std::pair{"bytes-down", "bytes_sent_total"}}) {
    const auto d =
        compare(tmp, {"slow"}, fmt::format(" --x {} --out {}", axis, (tmp / axis).string()));
    ASSERT_EQ(d.code, 0) << d.err;
    EXPECT_DOUBLE_EQ(
        nlohmann::json::parse(testing::slurp(tmp / axis / "compare.json"))["runs"][0]["x_at_end"]
            .get<double>(),
        double(last[key].get<uint64_t>()) / 1e6)
        << axis;
  }
}

// A run's "final" value is where it stopped: a diverged run's row says at which round, an
// unfinished one's how far it got; a run that diverged before any evaluation has no curve and is
// left out, said (a folder of runs holding one is compared all the same).
TEST(Compare, RunsThatDivergedOrStoppedEarlySaySo) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "rounds = 10\nprocesses = 2\n[data]\nname = 'synthetic'\n"
                                     "iid = true\n[model]\nname = '2nn'\n";
  one_run(tmp, "ok", "");
  for (const auto& [name, sets] :
       {std::pair{"late", " --set optimizer.lr=1000"},
        std::pair{"early", " --set optimizer.lr=1e38 --set local.steps=5"}}) {
    const auto r = testing::run_fedpar(
        "run " + (tmp / "run.toml").string() + " --set results_dir=" + (tmp / "res").string() +
            " --set name=" + name + " --set optimizer.warmup_steps=0" + sets,
        tmp.path());
    ASSERT_EQ(r.code, 4) << r.err;
  }
  const auto at = [&](const char* name) {
    return nlohmann::json::parse(testing::slurp(tmp / "res" / name / "summary.json"))
        .at("diverged_at_round")
        .get<int>();
  };
  ASSERT_EQ(at("early"), 1);
  ASSERT_GT(at("late"), 1);
  // ok.incomplete: a run stopped after 4 of its 10 rounds
  std::filesystem::create_directories(tmp / "res/ok.incomplete");
  std::filesystem::copy_file(tmp / "res/ok/config.resolved.toml",
                             tmp / "res/ok.incomplete/config.resolved.toml");
  {
    std::ofstream out(tmp / "res/ok.incomplete/metrics.jsonl");
    const auto lines = testing::jsonl(tmp / "res/ok/metrics.jsonl");
    for (int r = 0; r < 4; ++r) out << lines.at(r).dump() << "\n";
  }
  const auto named = compare(tmp, {"ok", "late", "early", "ok.incomplete"}, "");
  ASSERT_EQ(named.code, 0) << named.err;
  EXPECT_NE(named.out.find(fmt::format("| late (diverged at round {}) |", at("late"))),
            std::string::npos)
      << named.out;
  EXPECT_NE(named.out.find("| ok.incomplete (unfinished: 4 of 10 rounds) |"), std::string::npos)
      << named.out;
  EXPECT_NE(named.err.find("leaving out " + (tmp / "res/early").string() +
                           ": diverged at round 1, before any test evaluation"),
            std::string::npos)
      << named.err;
  EXPECT_EQ(named.out.find("| early"), std::string::npos) << named.out;
  EXPECT_NE(named.out.find("| ok |"), std::string::npos) << named.out;
  const auto folder = testing::run_fedpar("compare " + (tmp / "res").string(), tmp.path());
  ASSERT_EQ(folder.code, 0) << folder.err;
  EXPECT_NE(folder.err.find("ok.incomplete (unfinished: 4 of 10 rounds)"), std::string::npos)
      << folder.err;
  // a loss far above any other reads as a number, not a string of digits
  const auto loss = compare(tmp, {"ok", "late"}, " --metric loss");
  ASSERT_EQ(loss.code, 0) << loss.err;
  EXPECT_EQ(loss.out.find("00000000"), std::string::npos) << loss.out;
}

// A run whose rounds lost updates says how many of those asked never reached the aggregate:
// a straggler's process dropped at its first missed deadline (clients 0 and 2 of 4, every round),
// and messages the simulated links lost (counted from its own records); the others' cell is 0,
// and compare.json has both counts for every run.
TEST(Compare, RunsThatLostUpdatesSayHowManyBesideTheOthers) {
  TempDir tmp;
  three_rounds(tmp);
  one_run(tmp, "whole", "");
  one_run(tmp, "dropped",
          " --set wait_seconds=1 --set drop_after_missed_rounds=1"
          " --set stragglers.delay_seconds=0:2");
  one_run(tmp, "lossy",
          " --set network.mode=simulated --set network.profile=custom"
          " --set network.custom.loss=0.5");
  int lossy_lost = 0, lossy_asked = 0;
  for (const auto& rec : testing::jsonl(tmp / "res" / "lossy" / "metrics.jsonl")) {
    const int lost = rec.contains("simulated_lost") ? int(rec["simulated_lost"].size()) : 0;
    lossy_lost += lost;
    lossy_asked += rec.at("participants").get<int>() + lost;
  }
  ASSERT_GT(lossy_lost, 0) << "the seed's draws lost no message";
  const auto r = compare(tmp, {"whole", "dropped", "lossy"}, " --out " + (tmp / "cmp").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| updates lost | evaluations |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| **6 of 12** (50%) | 3 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("| **{} of {}** (", lossy_lost, lossy_asked)), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| 0 | 3 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Updates lost: of the updates the parameter server's rounds asked for, "
                       "those that never reached the aggregate"),
            std::string::npos)
      << r.out;
  const auto json = nlohmann::json::parse(testing::slurp(tmp / "cmp" / "compare.json"));
  std::map<std::string, std::pair<int, int>> counts;
  for (const auto& row : json.at("runs"))
    counts[row.at("run")] = {row.at("updates_lost").get<int>(), row.at("updates_asked").get<int>()};
  EXPECT_EQ(counts["whole"], std::make_pair(0, 12));
  EXPECT_EQ(counts["dropped"], std::make_pair(6, 12));
  EXPECT_EQ(counts["lossy"], std::make_pair(lossy_lost, lossy_asked));
  // runs that lost nothing get no such column
  EXPECT_EQ(compare(tmp, {"whole"}, "").out.find("updates lost"), std::string::npos);
}

// The test set's size is in summary.json and the README (with the final accuracy's binomial
// standard error), and compare says what one sample and that error are worth in points.
TEST(Compare, TheTestSetsSizeSaysWhatADifferenceIsWorth) {
  TempDir tmp;
  three_rounds(tmp);
  one_run(tmp, "a", "");
  one_run(tmp, "b", " --set optimizer.lr=0.3");
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res" / "a" / "summary.json"));
  const auto n = summary.at("test_samples").get<uint64_t>();
  ASSERT_GT(n, 0u);
  const double p = summary.at("final").at("test_accuracy").get<double>();
  EXPECT_NE(testing::slurp(tmp / "res" / "a" / "README.md")
                .find(fmt::format(", on {} test samples (the test set's sampling error, a binomial "
                                  "standard error of {:.2f} points",
                                  n, 100 * std::sqrt(p * (1 - p) / double(n)))),
            std::string::npos);
  const auto r = compare(tmp, {"a", "b"}, "");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(fmt::format("Test accuracy is on {} test samples: one sample is {:.2g} "
                                   "points, and the test set's sampling error at the median final",
                                   n, 100.0 / double(n))),
            std::string::npos)
      << r.out;
  EXPECT_EQ(compare(tmp, {"a", "b"}, " --metric loss").out.find("test samples:"),
            std::string::npos);
}

// Runs scored on different test sets, and runs that ended with the very same model, are said:
// neither shows in the table's numbers.
TEST(Compare, DifferentTestSetsAndIdenticalModelsAreSaid) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "rounds = 3\nprocesses = 1\n[data]\nname = 'synthetic'\n"
                                     "iid = true\n[model]\nname = 'logreg'\n";
  one_run(tmp, "a", "");
  one_run(tmp, "b", " --set checkpoint_every=2");  // where and how it ran: the same model
  one_run(tmp, "c", " --set data.test_limit=100");
  const auto r = compare(tmp, {"a", "b", "c"}, "");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto hash = [&](const char* run) {
    return nlohmann::json::parse(testing::slurp(tmp / "res" / run / "summary.json"))["model_hash"]
        .get<std::string>();
  };
  ASSERT_EQ(hash("a"), hash("b"));
  // the test set is not the training: c's model is a's too
  EXPECT_NE(r.out.find(fmt::format("Runs a, b, c ended with the same model (hash {})", hash("a"))),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("These runs are tested on different test sets (data.test_limit differ)"),
            std::string::npos)
      << r.out;
  const auto same = compare(tmp, {"a", "b"}, " --out " + (tmp / "cmp").string() + "/");
  EXPECT_EQ(same.out.find("different test sets"), std::string::npos) << same.out;
  EXPECT_EQ(same.err.find("exists, so the report went to"), std::string::npos) << same.err;
  EXPECT_TRUE(std::filesystem::exists(tmp / "cmp/report.md"));
  // another dataset, whose test set has keys of its own (a CSV's file, not Synthetic's draws)
  {
    std::ofstream train(tmp / "tr.csv"), test(tmp / "te.csv");
    for (int i = 0; i < 40; ++i)
      (i < 30 ? train : test) << i % 2 << "," << i % 3 << "," << i % 2 << "\n";
  }
  one_run(tmp, "csv",
          " --set data.name=csv --set data.csv_train=" + (tmp / "tr.csv").string() +
              " --set data.csv_test=" + (tmp / "te.csv").string());
  const auto mixed = compare(tmp, {"a", "csv"}, "");
  ASSERT_EQ(mixed.code, 0) << mixed.err;
  EXPECT_NE(mixed.out.find("These runs are tested on different test sets (data.alpha, beta, iid, "
                           "devices, seed; data.csv_test; data.name differ)"),
            std::string::npos)
      << mixed.out;
}

// Seconds of different clocks on one axis (a simulated network's time, the server's rounds): each
// run's label says which; runs on the same clock keep their names.
TEST(Compare, SecondsOfDifferentClocksSayWhichEachIs) {
  TempDir tmp;
  two_runs(tmp);
  one_run(tmp, "sim", " --set network.mode=simulated --set network.profile=lte");
  const auto mixed =
      compare(tmp, {"slow", "sim"}, " --x seconds --out " + (tmp / "mixed").string());
  ASSERT_EQ(mixed.code, 0) << mixed.err;
  EXPECT_NE(mixed.out.find("| slow (server s) |"), std::string::npos) << mixed.out;
  EXPECT_NE(mixed.out.find("These runs' seconds are on different clocks (server s: the server's "
                           "wait and aggregation (a master's loss too), round by round, on this "
                           "machine; simulated s: "
                           "the simulated network's computed seconds, round by round)"),
            std::string::npos)
      << mixed.out;
  EXPECT_NE(mixed.out.find("| sim (simulated s) |"), std::string::npos) << mixed.out;
  const auto same = compare(tmp, {"slow", "fast"}, " --x seconds --out " + (tmp / "same").string());
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_NE(same.out.find("| slow |"), std::string::npos) << same.out;
}

// --x device-bytes counts each asked client's own model download and its update, as a deployment
// with one device per client would: the same run on 2 or 4 processes (the same model) moves the
// same device bytes, while the server's socket sends a TASK per process.
TEST(Compare, DeviceBytesDoNotDependOnTheProcessCount) {
  TempDir tmp;
  two_runs(tmp);
  one_run(tmp, "four", " --set optimizer.lr=0.01 --set processes=4");
  const auto x_at_end = [&](const std::string& axis) {
    const auto r = compare(tmp, {"slow", "four"},
                           fmt::format(" --x {} --out {}", axis, (tmp / axis).string()));
    EXPECT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(testing::slurp(tmp / axis / "compare.json"));
    return std::pair{j["runs"][0]["x_at_end"].get<double>(),
                     j["runs"][1]["x_at_end"].get<double>()};
  };
  const auto hash = [&](const char* run) {
    return nlohmann::json::parse(testing::slurp(tmp / "res" / run / "summary.json"))["model_hash"];
  };
  EXPECT_EQ(hash("slow"), hash("four"));
  const auto [two, four] = x_at_end("device-bytes");
  double expected = 0;  // the records' own numbers, summed
  for (const auto& rec : testing::jsonl(tmp / "res/slow/metrics.jsonl")) {
    EXPECT_EQ(rec["participants"], 4);  // each asked (no process lost), each with its download
    expected += rec["participants"].get<double>() * rec["bytes_down_per_task"].get<double>();
    for (const auto& c : rec["clients"]) expected += c["bytes_up"].get<double>();
  }
  EXPECT_DOUBLE_EQ(two, expected / 1e6);
  EXPECT_NEAR(four, two, 0.01 * two);  // UPDATE bodies' numbers differ in their digits
  const auto [two_socket, four_socket] = x_at_end("bytes");
  EXPECT_GT(four_socket, 1.05 * two_socket);

  // A delta downlink sends each round's change to every client, asked or not (it keeps each copy
  // of the model in step): half the clients asked, all 4 download (it once counted the asked)
  one_run(tmp, "delta",
          " --set processes=4 --set fraction=0.5 --set compression.downlink=fp16 --set "
          "compression.downlink_delta=true");
  const auto r = compare(tmp, {"delta"}, " --x device-bytes --out " + (tmp / "delta-x").string());
  ASSERT_EQ(r.code, 0) << r.err;
  double delta_expected = 0;
  for (const auto& rec : testing::jsonl(tmp / "res/delta/metrics.jsonl")) {
    EXPECT_EQ(rec["participants"], 2);
    delta_expected += 4 * rec["bytes_down_per_task"].get<double>();
    for (const auto& c : rec["clients"]) delta_expected += c["bytes_up"].get<double>();
  }
  EXPECT_DOUBLE_EQ(
      nlohmann::json::parse(testing::slurp(tmp / "delta-x" / "compare.json"))["runs"][0]["x_at_end"]
          .get<double>(),
      delta_expected / 1e6);
}

// The server's link alone (--x bytes-up, bytes-down) leaves out a ring's links: the label of a run
// whose workers sent each other says so, with their MB; the parameter server's does not.
TEST(Compare, BytesUpOfARingSayItsWorkersLinksAreLeftOut) {
  TempDir tmp;
  two_runs(tmp);
  one_run(tmp, "ring", " --set regime=gradient --set topology=allreduce");
  const auto up = compare(tmp, {"slow", "ring"}, " --x bytes-up --out " + (tmp / "up").string());
  ASSERT_EQ(up.code, 0) << up.err;
  EXPECT_NE(up.out.find("| ring (server link only: its workers sent each other "),
            std::string::npos)
      << up.out;
  EXPECT_NE(up.out.find("| slow |"), std::string::npos) << up.out;
  const auto all = compare(tmp, {"slow", "ring"}, " --x bytes --out " + (tmp / "all").string());
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("| ring |"), std::string::npos) << all.out;
  // a ring's workers are its processes: device MB count them, not one device per client
  const auto device =
      compare(tmp, {"slow", "ring"}, " --x device-bytes --out " + (tmp / "device").string());
  ASSERT_EQ(device.code, 0) << device.err;
  EXPECT_NE(device.out.find("Device MB of ring (2 processes): a master's, a ring's or a split "
                            "model's workers are its processes"),
            std::string::npos)
      << device.out;
  EXPECT_EQ(device.out.find("Device MB of slow"), std::string::npos) << device.out;
}

// A gradient round is one step, a model round the clients' local training: compared by round,
// such runs are said not to be alike, with the axis that puts them on one scale.
TEST(Compare, RoundsOfTheGradientAndModelRegimesAreSaidNotToBeAlike) {
  TempDir tmp;
  two_runs(tmp);
  one_run(tmp, "steps", " --set regime=gradient");
  const std::string note = "These runs' rounds are not alike";
  auto r = compare(tmp, {"slow", "steps"}, " --out " + (tmp / "mixed").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(note), std::string::npos) << r.out;
  EXPECT_NE(testing::slurp(tmp / "mixed/report.md").find("`--x samples` puts them on one axis"),
            std::string::npos);
  r = compare(tmp, {"slow", "steps"}, " --x samples --out " + (tmp / "samples").string());
  EXPECT_EQ(r.out.find(note), std::string::npos) << r.out;
  r = compare(tmp, {"slow", "fast"}, " --out " + (tmp / "same").string());
  EXPECT_EQ(r.out.find(note), std::string::npos) << r.out;
  // most runs have local.steps = 1; the gradient run, which reads no local.steps, is not "as
  // most" there: its row says it does not read it
  one_run(tmp, "two", " --set local.steps=2");
  r = compare(tmp, {"slow", "fast", "two", "steps"}, " --out " + (tmp / "most").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("read each one): `local.steps=1"), std::string::npos) << r.out;
  const size_t row = r.out.find("| steps | `");
  ASSERT_NE(row, std::string::npos) << r.out;
  EXPECT_NE(r.out.substr(row, r.out.find('\n', row) - row).find("not read: local.steps`"),
            std::string::npos)
      << r.out;
  // two model runs that agree on local.steps beside a gradient run: the value is said once, not
  // in both rows as if it told them apart
  one_run(tmp, "two-fast", " --set local.steps=2 --set optimizer.lr=0.3");
  r = compare(tmp, {"two", "two-fast", "steps"}, "");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("read each one): `local.steps=2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("| two | `local.steps=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not read: local.steps`"), std::string::npos) << r.out;
}

// A setting a run never read does not tell it apart: an iid partition's alpha and the profile of
// a run with the network off stay out of its row, while a dirichlet run's alpha (read there only,
// away from its default) and the simulated run's profile show. The partitions differ, so a column
// says how non-IID each was.
TEST(Compare, SettingsARunNeverReadStayOutOfItsRowAndPartitionsSayHowNonIidTheyAre) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "rounds = 2\nprocesses = 2\n"
                                     "[data]\nname = 'synthetic'\niid = true\n"
                                     "[model]\nname = 'logreg'\n";
  one_run(tmp, "iid", " --set partition.alpha=0.1 --set network.profile=3g");
  one_run(tmp, "dir", " --set partition.scheme=dirichlet-clients --set partition.alpha=0.3");
  one_run(tmp, "sim", " --set network.mode=simulated --set network.profile=lte");
  const auto r = compare(tmp, {"iid", "dir", "sim"}, " --out " + (tmp / "cmp").string());
  ASSERT_EQ(r.code, 0) << r.err;
  // what most runs share is said once; each row shows where it departs from that
  EXPECT_NE(r.out.find("The settings most runs share (of the runs that read each one): "
                       "`network.mode='off' partition.scheme='iid'`. A row's settings show where "
                       "its run departs"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| iid | as most |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| dir | `partition.alpha=0.3 partition.scheme='dirichlet-clients'` |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| sim | `network.mode='simulated' network.profile='lte'` |"),
            std::string::npos)
      << r.out;
  // how non-IID each partition was: a column (the partitions differ), compare.json's
  // median_emd, and a line of each run's README
  EXPECT_NE(r.out.find("| median EMD |"), std::string::npos) << r.out;
  const auto rows = nlohmann::json::parse(testing::slurp(tmp / "cmp" / "compare.json"))["runs"];
  ASSERT_EQ(rows.size(), 3u);
  const double iid = rows[0]["median_emd"], dir = rows[1]["median_emd"];
  EXPECT_EQ(rows[2]["median_emd"], iid);  // the same partition
  EXPECT_GT(dir, 4 * iid) << "alpha 0.3 is far from IID";
  EXPECT_NE(
      r.out.find(fmt::format(
          "| dir | `partition.alpha=0.3 partition.scheme='dirichlet-clients'` | {:.3f} |", dir)),
      std::string::npos)
      << r.out;
  // compare.json keeps each run's settings in full
  EXPECT_EQ(rows[1]["settings_that_differ"],
            "network.mode='off' partition.alpha=0.3 partition.scheme='dirichlet-clients'");
  const std::string readme = testing::slurp(tmp / "res" / "dir" / "README.md");
  EXPECT_NE(readme.find("- the partition (`dirichlet-clients`): 4 client(s) of "),
            std::string::npos)
      << readme;
  EXPECT_NE(
      readme.find(fmt::format("median EMD {:.3f} (0: every client's labels as the whole's", dir)),
      std::string::npos)
      << readme;
}

// DP-FedAvg's runs show what their accuracy cost in privacy: the accountant's epsilon after
// their rounds, at their own delta (in the header where the runs share one).
TEST(Compare, PrivateRunsShowTheirEpsilonAtTheirDelta) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "rounds = 4\nprocesses = 2\nweighting = 'uniform'\n"
                                     "client_sampling = 'poisson'\nfraction = 0.5\n"
                                     "[data]\nname = 'synthetic'\niid = true\n"
                                     "[model]\nname = 'logreg'\n";
  const std::string dp = " --set privacy.clip_norm=1 --set privacy.noise_multiplier=";
  one_run(tmp, "plain", "");
  one_run(tmp, "z1", dp + "1");
  one_run(tmp, "z2", dp + "2 --set privacy.delta=1e-3");
  const auto last_epsilon = [&](const char* name) {
    return testing::jsonl(tmp / "res" / name / "metrics.jsonl").back().at("epsilon").get<double>();
  };
  const auto row = [](const std::string& out, const std::string& name) {
    const size_t at = out.find("| " + name + " |");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  const auto shared = compare(tmp, {"plain", "z1"}, " --out " + (tmp / "a").string());
  ASSERT_EQ(shared.code, 0) << shared.err;
  EXPECT_NE(shared.out.find("| epsilon at delta = 1e-05 |"), std::string::npos) << shared.out;
  EXPECT_NE(row(shared.out, "plain").find("| none (no noise) |"), std::string::npos) << shared.out;
  EXPECT_NE(row(shared.out, "z1").find(fmt::format("| {:.3g} |", last_epsilon("z1"))),
            std::string::npos)
      << shared.out;
  const auto rows = nlohmann::json::parse(testing::slurp(tmp / "a" / "compare.json"))["runs"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].contains("epsilon"));
  EXPECT_EQ(rows[1]["epsilon"], last_epsilon("z1"));
  EXPECT_EQ(rows[1]["delta"], 1e-5);
  // deltas that differ: each row says its own
  const auto own = compare(tmp, {"z1", "z2"}, "");
  ASSERT_EQ(own.code, 0) << own.err;
  EXPECT_NE(own.out.find("| epsilon (delta) |"), std::string::npos) << own.out;
  EXPECT_NE(row(own.out, "z2").find(fmt::format("| {:.3g} (0.001) |", last_epsilon("z2"))),
            std::string::npos)
      << own.out;
  EXPECT_LT(last_epsilon("z2"), last_epsilon("z1"));  // more noise, a larger delta
  // runs without noise have no such column
  const auto none = compare(tmp, {"plain"}, "");
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out.find("epsilon"), std::string::npos) << none.out;
}

// Two runs whose models differ but whose accuracy curves are the same points (rates too small to
// move any prediction): the plot draws one line over the other, and the report says so; their
// losses differ, so a loss plot is not said to.
TEST(Compare, RunsThatDrewTheSameCurveAreSaid) {
  TempDir tmp;
  three_rounds(tmp);
  one_run(tmp, "a", " --set optimizer.lr=1e-7");
  one_run(tmp, "b", " --set optimizer.lr=2e-7");
  const auto r = compare(tmp, {"a", "b"}, "");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(
      r.out.find("Runs a, b drew the same curve (every point alike, their models not all): one "
                 "line hides another."),
      std::string::npos)
      << r.out;
  const auto loss = compare(tmp, {"a", "b"}, " --metric loss");
  ASSERT_EQ(loss.code, 0) << loss.err;
  EXPECT_EQ(loss.out.find("drew the same curve"), std::string::npos) << loss.out;
}

// By samples, full-batch gradient descent beside one mini-batch step a round ends orders of
// magnitude further along: the x axis goes logarithmic, and the report says so; by round not.
TEST(Compare, AnAxisWhoseRunsEndOrdersApartIsLogarithmic) {
  TempDir tmp;
  three_rounds(tmp);
  one_run(tmp, "full", " --set regime=gradient");
  one_run(tmp, "mini", " --set local.batch=5");
  const auto r = compare(tmp, {"full", "mini"}, " --x samples --out " + (tmp / "s").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("The plot's samples axis is logarithmic: the runs ended "),
            std::string::npos)
      << r.out;
  EXPECT_NE(testing::slurp(tmp / "s/accuracy-vs-samples.svg.gp").find("set logscale x\n"),
            std::string::npos);
  const auto by_round = compare(tmp, {"full", "mini"}, " --out " + (tmp / "r").string());
  ASSERT_EQ(by_round.code, 0) << by_round.err;
  EXPECT_EQ(by_round.out.find("logarithmic"), std::string::npos) << by_round.out;
  EXPECT_EQ(testing::slurp(tmp / "r/accuracy-vs-round.svg.gp").find("logscale x"),
            std::string::npos);
}

// A script's runs of each setting under several seeds: those alike but for their seed are taken
// together, the final value's mean, standard deviation and range over the seeds, as the suites'
// Over seeds table gives them; a run with no other seed of its setting joins no group.
TEST(Compare, RunsAlikeButForTheirSeedAreTakenTogether) {
  TempDir tmp;
  three_rounds(tmp);
  for (int seed : {1, 2, 3})
    one_run(tmp, fmt::format("a-s{}", seed), fmt::format(" --set seed={}", seed));
  one_run(tmp, "b-s1", " --set optimizer.lr=0.3");
  const auto r =
      compare(tmp, {"a-s1", "a-s2", "a-s3", "b-s1"}, " --target 2 --out " + (tmp / "c").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(testing::slurp(tmp / "c" / "compare.json"));
  std::vector<double> finals;
  for (int i = 0; i < 3; ++i) finals.push_back(j["runs"][i]["final"].get<double>());
  const double mean = (finals[0] + finals[1] + finals[2]) / 3;
  double var = 0;
  for (double f : finals) var += (f - mean) * (f - mean);
  const double sd = std::sqrt(var / 2);
  ASSERT_EQ(j["seed_groups"].size(), 1u) << j.dump();
  const auto& g = j["seed_groups"][0];
  EXPECT_EQ(g["runs"], nlohmann::json({"a-s1", "a-s2", "a-s3"}));
  EXPECT_NEAR(g["final_mean"].get<double>(), mean, 1e-9);
  EXPECT_NEAR(g["final_std"].get<double>(), sd, 1e-9);
  EXPECT_GT(sd, 0) << "seeds that trained alike would not test the spread";
  EXPECT_EQ(g["final_min"], *std::ranges::min_element(finals));
  EXPECT_EQ(g["reached_target"], 3);  // 2% at the first evaluation
  EXPECT_NE(r.out.find(fmt::format("| a-s1, a-s2, a-s3 | 3 | {:.2f}% | {:.2f}% |", mean, sd)),
            std::string::npos)
      << r.out;
  EXPECT_NE(testing::slurp(tmp / "c" / "report.md").find("Runs alike but for their seed"),
            std::string::npos);
  // no two runs alike but for their seed: no such table; a rerun of one seed is no spread either
  const auto none = compare(tmp, {"a-s1", "b-s1"}, "");
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out.find("alike but for their seed"), std::string::npos) << none.out;
  one_run(tmp, "a-again", " --set seed=1");
  const auto rerun = compare(tmp, {"a-s1", "a-again", "b-s1"}, "");
  ASSERT_EQ(rerun.code, 0) << rerun.err;
  EXPECT_EQ(rerun.out.find("alike but for their seed"), std::string::npos) << rerun.out;
}

// sgd.batch = "full" is the default 0, the whole shard: a gradient run beside model runs (which
// do not read it) listed `sgd.batch='full'` as a setting of its own.
TEST(Compare, AWholeShardBatchIsOneSettingHoweverSpelled) {
  TempDir tmp;
  two_runs(tmp);
  one_run(tmp, "fedsgd", " --set regime=gradient --set sgd.batch=full");
  const auto r = compare(tmp, {"slow", "fast", "fedsgd"}, " --out " + (tmp / "c").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| fedsgd | `"), std::string::npos) << r.out;  // its regime differs
  EXPECT_EQ(r.out.find("sgd.batch"), std::string::npos) << r.out;
}

// A baseline of another model, or trained or tested on other data, was drawn as the runs' own
// without a word: the report names what differs. One that matches gets no such line.
TEST(Compare, ABaselineTrainedOtherwiseIsSaid) {
  TempDir tmp;
  two_runs(tmp);
  const std::string train =
      "train --quiet --dataset synthetic --epochs 2 --set data.iid=true "
      "--results-dir " +
      (tmp / "res").string();
  for (const char* flags : {" --model logreg --name same", " --model 2nn --name other",
                            " --model logreg --test-limit 100 --name fewer"})
    ASSERT_EQ(testing::run_fedpar(train + flags, tmp.path()).code, 0) << flags;
  auto r = compare(tmp, {"slow", "same"}, " --out " + (tmp / "c1").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("trained otherwise than the runs"), std::string::npos) << r.out;
  r = compare(tmp, {"slow", "other", "fewer"}, " --out " + (tmp / "c2").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("The centralized baseline other trained otherwise than the runs: "
                       "model.name (2nn against a run's logreg)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("The centralized baseline fewer trained otherwise than the runs: "
                       "data.test_limit (100 against a run's 0)"),
            std::string::npos)
      << r.out;
}

// A `fedpar train` folder beside the runs is their centralized baseline: a row with its epochs,
// final and best value, and a line at its final value across the plot.
TEST(Compare, ATrainFolderIsTheCentralizedBaseline) {
  TempDir tmp;
  two_runs(tmp);
  auto r = testing::run_fedpar(
      "train --quiet --dataset synthetic --model logreg --epochs 3 "
      "--results-dir " +
          (tmp / "res").string() + " --name central",
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  r = compare(tmp, {"slow", "fast", "central"}, " --target 40 --out " + (tmp / "cmp").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res/central/summary.json"));
  const double final = 100 * summary["final"]["test_accuracy"].get<double>();
  EXPECT_NE(r.out.find(fmt::format("| central (centralized, `fedpar train`) | - | 3 epoch(s) | "
                                   "{:.2f}% |",
                                   final)),
            std::string::npos)
      << r.out;
  const auto rows = nlohmann::json::parse(testing::slurp(tmp / "cmp/compare.json"))["runs"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[2]["centralized"].get<bool>());
  EXPECT_DOUBLE_EQ(rows[2]["final"].get<double>(), final);
  EXPECT_GE(rows[2]["best"].get<double>(), final);
  const std::string gp = testing::slurp(tmp / "cmp/accuracy-vs-round.svg.gp");
  EXPECT_NE(gp.find("central (centralized, final)"), std::string::npos) << gp;
  const std::string report = testing::slurp(tmp / "cmp/report.md");
  EXPECT_NE(report.find("is the centralized baseline"), std::string::npos);
  // three folders, three runs compared (it once said 2, the baseline left out of the count)
  EXPECT_EQ(report.rfind("# 3 runs compared: ", 0), 0u) << report.substr(0, 200);
  // by samples it is a curve of its epochs, each its training set's samples
  r = compare(tmp, {"slow", "central"}, " --x samples --out " + (tmp / "by-samples").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const double n = summary["train_samples"].get<double>();
  const size_t central = r.out.find("| central (centralized");
  ASSERT_NE(central, std::string::npos) << r.out;
  EXPECT_NE(r.out.substr(central, r.out.find('\n', central) - central)
                .find(fmt::format(" {:.0f} |", 3 * n)),  // whole, not 1.363e+04
            std::string::npos)
      << r.out;
  std::ifstream dat(tmp / "by-samples/accuracy-vs-samples.svg.dat");
  std::string all((std::istreambuf_iterator<char>(dat)), {});
  EXPECT_NE(all.find(fmt::format("{}", 2 * n)), std::string::npos) << all;

  // in a folder of runs it is their baseline too, not left out
  r = testing::run_fedpar("compare " + (tmp / "res").string() + " --out " + (tmp / "all").string(),
                          tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| central (centralized, `fedpar train`) |"), std::string::npos) << r.out;
  // a baseline named as a run is told apart by its parent folder, as two runs are
  r = testing::run_fedpar(
      "train --quiet --dataset synthetic --model logreg --epochs 1 --results-dir " +
          (tmp / "base").string() + " --name slow",
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  r = testing::run_fedpar("compare " + (tmp / "res/slow").string() + " " +
                              (tmp / "base/slow").string() + " --out " + (tmp / "dup").string(),
                          tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| res/slow |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| base/slow (centralized, `fedpar train`) |"), std::string::npos) << r.out;
  // a training that diverged in its first epoch says so, and its one score is the initial
  // model's, epoch 0 (it once read "epoch 1")
  r = testing::run_fedpar(
      "train --quiet --dataset synthetic --model 2nn --lr 1e6 --epochs 3 "
      "--results-dir " +
          (tmp / "base").string() + " --name div",
      tmp.path());
  ASSERT_EQ(r.code, 4) << r.err;
  const auto div = nlohmann::json::parse(testing::slurp(tmp / "base/div/summary.json"));
  ASSERT_EQ(div["diverged_at"]["epoch"], 1) << div.dump();
  r = compare(tmp, {"slow"},
              " " + (tmp / "base/div").string() + " --out " + (tmp / "div-cmp").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(fmt::format("| div (diverged at epoch 1, step {}) (centralized, `fedpar "
                                   "train`) | 0 epoch(s) |",
                                   div["diverged_at"]["step"].get<int>())),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(epoch 0) |"), std::string::npos) << r.out;
  const auto row = nlohmann::json::parse(testing::slurp(tmp / "div-cmp/compare.json"))["runs"][1];
  EXPECT_EQ(row["run"], "div") << row;  // the name, as tools read it; how it ended beside it
  EXPECT_EQ(row["ended"],
            fmt::format("diverged at epoch 1, step {}", div["diverged_at"]["step"].get<int>()))
      << row;
}

TEST(Compare, RefusesWhatIsNotADistributedRunsFolder) {
  TempDir tmp;
  auto r = testing::run_fedpar("compare " + (tmp / "missing").string(), tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing: no such results folder"), std::string::npos) << r.err;
  r = testing::run_fedpar("train --quiet --dataset synthetic --model logreg --results-dir " +
                              (tmp / "res").string() + " --name central",
                          tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  r = testing::run_fedpar("compare " + (tmp / "res/central").string(), tmp.path());
  EXPECT_EQ(r.code, 2);  // a baseline alone has nothing to be the baseline of
  EXPECT_NE(r.err.find("needs a distributed run's folder (fedpar run, fedpar server, a suite's "
                       "runs/) beside a `fedpar train` folder"),
            std::string::npos)
      << r.err;
  r = testing::run_fedpar("compare " + (tmp / "res/central/summary.json").string(), tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("summary.json is a file: fedpar compare takes the run's folder ("),
            std::string::npos)
      << r.err;
  std::filesystem::create_directories(tmp / "empty");
  r = testing::run_fedpar("compare " + (tmp / "empty").string(), tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("empty has no metrics.jsonl: not a run's results folder, nor a folder of "
                       "runs"),
            std::string::npos)
      << r.err;
  r = testing::run_fedpar("compare " + tmp.path().string() + " --metric f1", tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--metric"), std::string::npos) << r.err;
  // an accuracy target is a percent; a fraction (as stop_at_accuracy takes) says how to write it
  r = testing::run_fedpar("compare " + tmp.path().string() + " --target 0.5", tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--target 0.5 is a percent for accuracy: --target 50 for 50%"),
            std::string::npos)
      << r.err;
  r = testing::run_fedpar("compare " + tmp.path().string() + " --target 150", tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--target 150 is above 100%"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "results")) << "nothing written";
}

}  // namespace
}  // namespace fedpar
