// `fedpar compare`: finished runs side by side, the next thing a user does after two runs. Reads
// each results folder's per-round metrics, plots one metric against rounds, samples, bytes or
// seconds for all of them (the suites' plotting), and tabulates the final and best values and
// when each run first reached a target.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fedpar {

struct CompareOptions {
  std::vector<std::filesystem::path> runs;  // results folders of fedpar run / server / suite runs
                                            // (and fedpar train: the centralized baseline)
  // accuracy (test, %) | loss (test) | train-loss (global) | client-worst10 (eval_clients, %)
  std::string metric = "accuracy";
  std::string x = "round";  // round | samples | bytes | seconds
  double target = 0;  // > 0: the first evaluation at or above it (accuracy, %) or below (loss)
  std::filesystem::path out = "results/compare";  // a new folder (-2, -3... when it exists)
};

// The metrics in percent, where higher is better and a --target is a percent.
inline bool percent_metric(const std::string& metric) {
  return metric == "accuracy" || metric == "client-worst10";
}

// Prints the table, writes out/ (report.md, compare.json, the plot) and returns 0; throws Error
// naming the folder for a missing or unreadable run. A `fedpar train` folder among the runs is the
// centralized baseline: a row of its own and a line at its final value.
int run_compare(const CompareOptions& o, const std::string& command);

}  // namespace fedpar
