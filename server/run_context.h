// What every topology's round loop shares: the resolved run, the data and partition, the model
// with the current parameters (host memory), the results folder and its metrics.jsonl, and the
// end of a round (snapshot, evaluation, log line, stop_at_accuracy) and of the run (model,
// summary, hash).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/dataset.h"
#include "core/model.h"
#include "core/results_dir.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "partitioners/partition.h"
#include "server/engine.h"

namespace fedpar {

// The run's partition of the training set (what the server and a replay both compute).
Manifest partition_dataset(const TrainTest& data, const PartitionParams& p);

class RunContext {
 public:
  RunContext(const Config& cfg, const RunSpec& s);

  // Ends round r (0-based) with its record `rec`: parameter snapshot when due, test evaluation
  // every eval_every rounds and at the last, the metrics line, the log line. True when
  // stop_at_accuracy was reached.
  bool end_round(int r, RoundRecord& rec, const Engine& engine, const std::string& what);
  // Ends the run at round r, whose update was not finite (`why`): the model the server holds
  // (of round params_round; async: every update applied so far) is evaluated and kept, and
  // finish() returns kExitDiverged.
  void end_diverged(int r, RoundRecord& rec, const Engine& engine, const std::string& why);
  // Saves model.safetensors and summary.json, commits the folder, prints the hash. Returns the
  // exit code.
  int finish(const Engine& engine);

  const Config& cfg;
  const RunSpec& s;
  int params_round = 0;  // the round whose model `params` holds (0: the initial model)
  std::unique_ptr<Backend> backend;
  TrainTest data;
  Manifest manifest;
  Model model;
  std::vector<float> params;
  ResultsDir out;
  JsonlWriter metrics;

 private:
  std::optional<RoundRecord> last_eval_;
  int stopped_at_ = 0;   // the round stop_at_accuracy ended the run after, if it did
  int diverged_at_ = 0;  // the round whose update was not finite, if one was
  std::string diverged_;
  void evaluate_into(RoundRecord& rec);
};

}  // namespace fedpar
