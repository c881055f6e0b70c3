// The `parallelism` suite's section of report.md (suite.parallelism = true): for every run that
// splits the model (pipeline, tensor, their grids with data replicas) and its data-parallel
// reference (allreduce, the same model), what each process held, what the processes sent per step
// beside the formula for it, the step time (wall, and on [network] simulated links when the runs
// have them), and for pipelines the measured bubble beside (p - 1) / (m + p - 1); then, computed
// from those numbers, when each way wins. Its claims (bytes as the formulas say, every split holds
// less than a replica, 1F1B holds fewer activations than GPipe, GPipe's bubble shrinks with
// micro-batches where each process has a core of its own; on simulated links, a pipeline's step
// shorter than data parallelism's and GPipe's shrinking from one micro-batch to several) are
// checked where the runs allow: a failed one fails the suite, and the report names the ones that
// held.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fedpar {

struct SplitRun {
  std::string label, model;  // model: "mlp 1024,1024,1024", "cnn"
  std::string way;           // dp | pipeline | tensor
  int processes = 0, data = 1, parts = 1, micro_batches = 1;
  std::string schedule;  // pipelines
  double batch = 0;      // samples per step, all replicas
  // the most any process holds of parameters + gradients, of activations (and their gradients),
  // and of both together
  double parameter_mb = 0, activation_mb = 0, memory_mb = 0;
  double first_activation_mb = 0;           // process 0's (a pipeline's first stage)
  double mb_per_step = 0, formula_mb = 0;   // sent by all processes together
  double step_ms = 0;                       // the server's wait and aggregation (steady_rounds)
  double simulated_ms = -1;                 // the step on the simulated links (-1: none)
  double bubble = -1, bubble_formula = -1;  // pipelines: mean idle share of a stage
};

struct RunSpec;

// Why the section cannot compare this run (it takes allreduce, pipeline and tensor runs), or
// nullopt: a suite asks before its first run starts.
std::optional<std::string> split_run_refusal(const RunSpec& s);

// One run's numbers from its results folder (medians over rounds).
SplitRun read_split_run(const std::filesystem::path& run_dir, const std::string& label);

struct ParallelismSection {
  std::string markdown;
  std::vector<std::string> failed;  // claims that did not hold
  nlohmann::json json;
};

// `cores`: the machine's, for the idle share processes sharing them cannot go below.
ParallelismSection parallelism_section(const std::vector<SplitRun>& runs, int cores);

}  // namespace fedpar
