// The `lr-scaling` suite's section of report.md (suite.lr_scaling = true): Goyal et al.'s
// large-batch question on fedpar's data parallelism. Every run is one point (workers N, the
// optimizer.scaling rule, warm-up or not, the rate as written); the runs share the samples they
// see (epochs), so N workers take 1/N of the steps. The section gives, per (N, rule, warm-up):
// the accuracy when the single worker's best rate is carried over by the rule, the best rate of
// the grid, and the largest rate that still trains (final test accuracy >= suite.trains_at).
// Its claim: two runs at the same N and warm-up whose rules reach the same effective rate end
// with the same model bytes (a rule only sets the rate); a failed claim fails the suite.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fedpar {

struct LrRun {
  std::string label;
  int64_t workers = 1;       // clients per step
  int64_t global_batch = 0;  // samples per step, all workers
  int64_t steps = 0;
  std::string rule;            // none | linear | sqrt
  int64_t warmup_steps = 0;    // 0: none
  double base_lr = 0, lr = 0;  // optimizer.lr as written; after the rule
  double accuracy = 0;         // final test accuracy, percent (a diverged run's last finite model)
  int64_t diverged_at = 0;     // the step whose gradient held NaN or Inf (0: none)
  std::string model_hash;      // the final model's
};

struct RunSpec;

// Why the section cannot compare this run (it takes data-parallel steps), or nullopt: a suite
// asks before its first run starts.
std::optional<std::string> lr_run_refusal(const RunSpec& s);

// One run's point from its results folder (config.resolved.toml and summary.json).
LrRun read_lr_run(const std::filesystem::path& run_dir, const std::string& label);

struct LrScalingSection {
  std::string markdown;
  std::vector<std::string> failed;  // claims that did not hold
  nlohmann::json json;
};

// `trains_at`: percent; `dir`: the suite's folder (its plot goes to plots/).
LrScalingSection lr_scaling_section(const std::vector<LrRun>& runs, double trains_at,
                                    const std::filesystem::path& dir);

}  // namespace fedpar
