// The equivalence experiment (`fedpar run experiments/equivalence.toml`): on the same data, init
// and seed it runs, per model,
//   (a) centralized full-batch gradient descent (in this process),
//   (b) `gradient` regime, full batch,         (c) `model` regime, K=1 local step, full batch,
//   (d) `model` regime, K local steps,         (e) `model`, K=1, unequal shards, uniform weights,
// (b)-(e) as real server + client processes, and tabulates each final model's distance to (a) next
// to the rounding floor (the distances of runs of (a) that differ only in summation order, a
// distribution over several orders) and, for the dense models, to exact arithmetic: the float64
// trajectory of (a), against which every float32 run's distance is its rounding error.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "experiments/local_run.h"

namespace fedpar {

// True when the TOML file has an [equivalence] table.
bool is_equivalence_config(const std::filesystem::path& path);

// The [equivalence] table's keys and documented defaults (TOML), for configs built on it.
std::string equivalence_section();
// The run config's keys plus the [equivalence] section.
Config make_equivalence_config();

// Refuses (Error) a `--set KEY=VALUE` for a key the experiment sets itself, per model or per
// variant, which would be silently overridden; says which [equivalence] key to set instead.
void refuse_overridden_sets(const Config& cfg, const std::vector<std::string>& sets);

// The claims' bounds: (b), (c) at most kFloorBound x as far from exact (float64) arithmetic as
// centralized float32 is (the median of (a) and its reorderings; for a model without a float64
// reference: within kFloorBound x the largest reordering); (d), (e) at least kOrdersBound orders
// of magnitude further from (a) than the worse of (b), (c).
inline constexpr double kFloorBound = 10;
inline constexpr double kOrdersBound = 2;

// One row of a model's table: a final model's distance to (a).
struct EquivalenceRow {
  std::string id;  // "a'" (the floor), "b" .. "e"
  std::string what;
  double max_abs = 0, relative = 0;
  std::optional<double> exact;          // relative distance to the float64 trajectory
  std::optional<double> test_accuracy;  // fraction; the distributed rows (b)-(e)
  double seconds = 0;                   // the distributed rows' wall time
  std::string results;                  // the distributed rows' folder, "runs/<model>-<id>"
};

// One model's runs and the verdicts measured on them.
struct EquivalenceCase {
  std::string model, title;  // title: model, samples, rounds, lr, clients, processes
  size_t train_samples = 0;
  int64_t rounds = 0;
  double lr = 0;
  int processes = 0, clients = 0;
  double a_test_accuracy = 0;        // (a)'s, fraction
  std::vector<EquivalenceRow> rows;  // a' (the reorderings' medians), b, c, d, e
  int floor_orders = 0;              // the reorderings of (a): its gradient in 2, 3, ... chunks
  double floor = 0;                  // their relative distances to (a): median, min, max
  double floor_min = 0, floor_max = 0;
  // Exact arithmetic (models with a float64 reference): the median distance of (a) and its
  // reorderings to it, and the worse of (b), (c)'s distances to it in units of that median.
  bool has_exact = false;
  double a_exact = 0;  // (a)'s own distance to exact arithmetic
  double float32_exact = 0;
  double bc_exact_ratio = 0;
  double bc_worst = 0;           // the larger relative distance of (b), (c) to (a)
  bool bc_claim_holds = false;   // bc_exact_ratio (else bc_worst / floor_max) <= kFloorBound
  bool bc_below_1e5 = false;     // informational: bc_worst < 1e-5 (not a claim)
  double de_orders_further = 0;  // log10(min(d, e) / bc_worst); claim: >= kOrdersBound
  std::string table;             // the rendered markdown table, (a) to (e)

  const EquivalenceRow& row(const std::string& id) const;
  // The distance of `id` to exact arithmetic in units of centralized float32's (has_exact).
  double x_float32(const std::string& id) const;
  // log10(relative distance of `id` / bc_worst): how much further from (a) than (b), (c).
  double orders_further(const std::string& id) const;
  // One line per row that breaks a claim, "(b) is 12.5x as far from exact arithmetic as
  // centralized float32, above the 10x bound".
  std::vector<std::string> failures() const;
};

struct EquivalenceResult {
  std::vector<EquivalenceCase> cases;
  std::string command;
  double seconds = 0;
  std::filesystem::path path;  // the committed results folder
  int failed_run = 0;          // a variant's non-zero exit code: it stopped there, nothing was kept

  // "<model>: <failure>" for every case; empty when every claim held.
  std::vector<std::string> failures() const;
};

// Markdown from the result: which claims failed (when any), per model the title, table and
// verdicts, and "What it means" at heading level `level` (2: "##"), its sentences stating only the
// verdicts and numbers measured.
std::string render_equivalence(const EquivalenceResult& r, int level = 2);
// The "What it means" paragraph alone.
std::string equivalence_meaning(const EquivalenceResult& r);

// Runs the experiment, prints the tables and writes results/<name>/ (report.md, equivalence.json,
// runs/), also when a claim fails. `command` is the command line, for the report. A variant that
// fails stops it with failed_run set and nothing kept.
EquivalenceResult run_equivalence(const Config& cfg, const LocalRunOptions& opts,
                                  const std::string& command);

// The exit code for `fedpar run`: a failed variant's, else kClaimFailedExit when a claim failed
// (each failure printed to stderr as "equivalence: <model>: <failure>"), else 0.
inline constexpr int kClaimFailedExit = 3;
int equivalence_exit_code(const EquivalenceResult& r);

}  // namespace fedpar
