// The equivalence experiment (`fedpar run experiments/equivalence.toml`): on the same data, init
// and seed it runs, per model,
//   (a) centralized full-batch gradient descent (in this process),
//   (b) `gradient` regime, full batch,         (c) `model` regime, K=1 local step, full batch,
//   (d) `model` regime, K local steps,         (e) `model`, K=1, unequal shards, uniform weights,
// (b)-(e) as real server + client processes, and tabulates each final model's distance to (a) next
// to the rounding floor: the distance between two runs of (a) that differ only in summation order.
#pragma once

#include <filesystem>

#include "core/config.h"
#include "experiments/local_run.h"

namespace fedpar {

// True when the TOML file has an [equivalence] table.
bool is_equivalence_config(const std::filesystem::path& path);

// The [equivalence] table's keys and documented defaults (TOML), for configs built on it.
std::string equivalence_section();
// The run config's keys plus the [equivalence] section.
Config make_equivalence_config();

// Runs the experiment, prints the table and writes results/<name>/ (report.md, equivalence.json,
// runs/). Returns 0 when every run completed (the claims' verdicts are in the table), else non-zero.
// `command` is the command line, for the report.
int run_equivalence(const Config& cfg, const LocalRunOptions& opts, const std::string& command);

}  // namespace fedpar
