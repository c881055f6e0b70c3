// The `topologies` suite's scaling section (suite.topology_scaling = true): the data-parallel
// topologies' step time on a simulated network by the number of workers N, for each model. With
// `network.server` the server is a node whose link every worker's messages share, so the parameter
// server's and the master's steps carry N models each way through one link while a ring's workers
// each send 2(N - 1)/N of the model on their own. Its claims, computed from the runs (a failed one
// fails, as does a section with nothing to compare): from the smallest N to the largest the
// server's topologies slow down by at least three quarters of their bytes' growth (4x from N = 2
// to 8: at least 3x), the ring slows down less than the parameter server, and at the largest N the
// ring's step is the shortest.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fedpar {

struct ScalingRun {
  std::string label, model, topology;  // topology: parameter-server | master | allreduce
  int workers = 0;
  double step_ms = 0;         // median simulated seconds per steady round (one SGD step)
  double server_mb = 0;       // median bytes at the server's socket per step, both ways, no
                              // diagnostics
  double worker_mb_sent = 0;  // median of the busiest worker's ring sends per step (allreduce)
};

// One run's numbers from its results folder. Throws Error when it is not a synchronous
// data-parallel run on a simulated network.
ScalingRun read_scaling_run(const std::filesystem::path& run_dir, const std::string& label);
// Whether the run in `run_dir` is one (the suite's other runs are left out of the section).
bool is_scaling_run(const std::filesystem::path& run_dir);

struct TopologyScalingSection {
  std::string markdown;
  std::vector<std::string> failed;  // claims that did not hold
  nlohmann::json json;
};

// `subset`: suite.only picked the runs, so having nothing to compare (no model's runs at two
// numbers of workers) is said, not a failed claim.
TopologyScalingSection topology_scaling_section(const std::vector<ScalingRun>& runs,
                                                bool subset = false);

}  // namespace fedpar
