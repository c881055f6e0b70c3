// The parts of a suite's report.md: the results table, the memory and time accounting table, the
// best of each learning-rate grid, and the plots (one series per run, or per run over seeds: the
// mean with a band from the smallest to the largest).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "experiments/delay_model.h"
#include "experiments/run_metrics.h"

namespace fedpar {

struct SuiteRun {
  std::string label;  // unique: the run's label, with -s<seed> when the suite has seeds
  std::string group;  // the run's label as the suite names it (seeds share it)
  std::vector<std::string> overrides;
  std::optional<int64_t> diverged_at_round;  // the run ended there: an update held NaN or Inf
  size_t clients = 0;
  double median_emd = 0;
  std::optional<double> client_holdout;  // eval_clients scored held-out samples (summary.json's)
  std::vector<std::string> warnings;     // what its server warned of before round 1
  RunCurves curves;
  RunAccounting accounting;
  RunTraffic traffic;
  std::string reference;          // a pair's reference run (label), when the suite pairs this run
  Divergence divergence;          // weight divergence from the reference, per saved round
  double seconds = 0;             // wall time of the run
  std::vector<DelayRound> delay;  // its rounds with per-client updates, for the delay model
  double privacy_delta = 1e-5;    // the delta its epsilon (curves.epsilon) is at
};

// First evaluated round at or above `target` percent; 0 when never.
int rounds_to(const RunCurves& c, double target);

// | run | overrides | clients | median EMD | final | best | [rounds to target] | MB | round time |
std::string results_table(const std::vector<SuiteRun>& runs, double target);
// One row per run of a suite with seeds: its final accuracy's mean, sample standard deviation and
// range over the seeds, the best accuracy's mean and, with a target, how many seeds reached it and
// their mean rounds; "" when no run has more than one seed.
std::string seed_means_table(const std::vector<SuiteRun>& runs, double target);
// [privacy]'s runs: each run's epsilon at its privacy.delta after its rounds and the share of its
// updates clipped (over its seeds); "" when no run clipped.
std::string privacy_table(const std::vector<SuiteRun>& runs);
// Per client and per round: parameter and activation memory, bytes down/up, time split.
std::string accounting_table(const std::vector<SuiteRun>& runs);
// Runs labelled "name@value" (suite.sweep's) form a grid per name: its best value (fewest runs
// diverged, most seeds at the target, fewest rounds to it, then best accuracy, each over the
// value's seeds). Empty when no label has '@'.
std::string grid_table(const std::vector<SuiteRun>& runs, double target);
// Per node and step for the data-parallel topologies: step time, the server's and the busiest
// worker's MB, all-reduce time and bus bandwidth. Empty unless a run used master, allreduce or
// async.
std::string traffic_table(const std::vector<SuiteRun>& runs);
// Weight divergence from each pair's reference at the first, middle and last saved round, and,
// where the runs logged it (diagnostics.drift), the median over rounds of their drift.
std::string divergence_table(const std::vector<SuiteRun>& runs);
// Each distinct warning the runs' servers gave before round 1, once, with the runs that gave it:
// "- TEXT (runs a, b)\n"; "" when none warned.
std::string warnings_list(const std::vector<SuiteRun>& runs);
// eval_clients: each run's clients' accuracy on their own samples at its last evaluated round
// (mean over clients, worst 10%, lowest, highest) beside its test accuracy; "" when no run has it.
std::string clients_table(const std::vector<SuiteRun>& runs);

// Draws the plots into dir/plots; returns the markdown that shows them (or says why not).
std::string draw_suite_plots(const std::vector<SuiteRun>& runs, const std::string& title,
                             const std::filesystem::path& dir);

nlohmann::json run_json(const SuiteRun& r, double target);

}  // namespace fedpar
