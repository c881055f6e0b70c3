// Experiment suites (`fedpar suite NAME [--smoke] [--out DIR]`): a suite is a TOML file in
// experiments/suites/ holding a base run config and a [suite] table naming its runs (each a label
// and config overrides) and the overrides of its small --smoke size. The runner executes every run
// as a supervised server + clients, then writes DIR/report.md (tables, SVG plots under plots/,
// what the numbers say), suite.json, the resolved config, and each run's own folder under runs/.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace fedpar {

struct SuiteOptions {
  std::string name;  // a file experiments/suites/<name>.toml, or a path to one
  bool smoke = false;
  std::filesystem::path out;      // empty: results/<name>[-smoke]
  std::vector<std::string> sets;  // extra overrides for every run
};

// The suites shipped in experiments/suites/.
std::vector<std::string> suite_names();

int run_suite(const SuiteOptions& opts);

// Plans the suite without running it: every run's config resolved as run_suite resolves it (an
// Error names the first bad one). Returns how many runs it would start.
size_t check_suite(const SuiteOptions& opts);

// A suite file's own [suite] table: its keys, defaults and their comments.
std::string suite_section();

}  // namespace fedpar
