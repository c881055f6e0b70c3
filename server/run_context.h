// What every topology's round loop shares: the resolved run, the data and partition, the model
// with the current parameters (host memory), the results folder and its metrics.jsonl, and the
// end of a round (snapshot, evaluation, log line, stop_at_accuracy) and of the run (model,
// summary, hash).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/dataset.h"
#include "core/folder_lock.h"
#include "core/model.h"
#include "core/results_dir.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "partitioners/partition.h"
#include "server/client_evaluation.h"
#include "server/engine.h"

namespace fedpar {

class Plan;

// The run's partition of the training set (what the server and a replay both compute);
// `train_hash` is its content_hash().
Manifest partition_dataset(const Dataset& train, const std::string& train_hash,
                           const PartitionParams& p);

class RunContext {
 public:
  // `resuming`: the parameters come from a checkpoint, so model.init_from's file is not read
  // (its hash comes from the checkpoint too).
  RunContext(const Config& cfg, const RunSpec& s, bool resuming = false);
  RunContext(const RunContext&) = delete;  // its scorer refers to its data and manifest
  RunContext& operator=(const RunContext&) = delete;

  // Ends round r (0-based) with its record `rec`: parameter snapshot when due, test evaluation
  // every eval_every rounds and at the last, the metrics line, the log line. True when
  // stop_at_accuracy was reached.
  bool end_round(int r, RoundRecord& rec, const Engine& engine, const std::string& what);
  // Ends the run at round r, whose update was not finite (`why`): the model the server holds
  // (of round params_round; async: every update applied so far) is evaluated and kept, and
  // finish() returns kExitDiverged.
  void end_diverged(int r, RoundRecord& rec, const Engine& engine, const std::string& why);
  // Saves model.safetensors and summary.json, draws the plots (`draw_plots`, when set: the
  // folder and the run's name in, the README's markdown out), writes README.md, commits the
  // folder, prints the hash. Returns the exit code.
  int finish(const Engine& engine,
             const std::function<std::string(const std::filesystem::path&, const std::string&)>&
                 draw_plots = {});

  // checkpoint_every: after round r (0-based), the model, `plan`'s state and the records to carry
  // on go to checkpoint.bin in the results folder, atomically (a failure names its cause).
  void checkpoint(int r, const Plan& plan, const Engine& engine);
  // --resume DIR: continues the run whose folder DIR holds checkpoint.bin (the same config, but
  // for where and how it runs): model, plan state and the metrics lines of the rounds it covers.
  // Returns the rounds it covers (the first round to run, 0-based) and the byte totals then.
  struct Resumed {
    int rounds = 0;
    std::pair<uint64_t, uint64_t> bytes{0, 0};  // sent, received at the server's socket
    // The virtual clients of each process dropped before the checkpoint (missed deadlines):
    // the processes that host them now stay out, as they did in the run that was interrupted.
    std::vector<std::vector<uint32_t>> dropped;
    // The processes (named by their virtual clients) that had missed rounds in a row then, and
    // how many: the count goes on where it was.
    std::vector<std::pair<std::vector<uint32_t>, int>> missed;
  };
  Resumed resume(const std::filesystem::path& dir, Plan& plan);
  // A run that fails or is stopped (`why`) after a round keeps its folder as
  // results/<name>.incomplete, with a README.md that says why and how far it got, and returns
  // that path (empty: no round ran, nothing kept). With a checkpoint (checkpoint.bin is there)
  // --resume continues it; without, its metrics are kept as a record of the rounds that ran.
  // (A resumed run's old folder, kept for resuming, is removed: this one holds its rounds.)
  // `resume_with`: the command that continues a run from a folder, "{0}" standing for it;
  // `uncheckpointable`: why this run could not keep a checkpoint ("" where it could).
  std::filesystem::path keep_incomplete(const std::string& why, const std::string& resume_with,
                                        const std::string& uncheckpointable);

  // model.init_from: the hash of the parameters it read (nullopt: a random init)
  const std::optional<std::string>& init_hash() const { return init_hash_; }

  const Config& cfg;
  const RunSpec& s;
  int params_round = 0;  // the round whose model `params` holds (0: the initial model)
  std::unique_ptr<Backend> backend;
  std::string train_hash;  // the training set's content hash (data.train holds no features)
  TrainTest data;          // the test set, and the training set's labels: a server never trains
  Manifest manifest;
  Model model;
  std::vector<float> params;
  ResultsDir out;
  JsonlWriter metrics;
  // What the server warned of before round 1 (settings it does not read, samples left out, a
  // busy machine, links too slow): summary.json and the README keep them.
  std::vector<std::string> warnings;
  // the wall seconds from the first round's start to the last one's end (run_rounds sets it):
  // summary.json's rounds_seconds
  std::optional<double> rounds_seconds;

 private:
  Resumed resume_from(const std::filesystem::path& dir, Plan& plan);  // resume(), unguarded
  std::optional<RoundRecord> last_eval_;
  std::optional<RoundRecord> last_round_;  // metrics.jsonl's last line, as written
  int stopped_at_ = 0;   // the round stop_at_accuracy ended the run after, if it did
  int diverged_at_ = 0;  // the round whose update was not finite, if one was
  std::string diverged_;
  int checkpoint_round_ = 0;            // the round of the last checkpoint written, if any
  int rounds_recorded_ = 0;             // metrics.jsonl's lines (a resumed run's included)
  std::filesystem::path resumed_from_;  // --resume's folder
  int resumed_after_ = 0;               // its checkpoint's round
  // the commits of the builds that ran the rounds before this process's (the checkpoint's
  // record, with this build's added when this run writes one); nullopt: an older checkpoint
  std::optional<std::vector<std::string>> earlier_commits_;
  std::vector<std::string> resumed_changes_;   // measurement keys changed on resume
  std::optional<std::string> init_hash_;       // model.init_from: the parameters' hash
  std::optional<FolderLock> resumed_lock_;     // the folder resumed from: one run continues it
  std::optional<ClientScorer> client_scorer_;  // eval_clients
  // eval_train under partition.holdout: the training set less the held-out samples, ascending
  std::vector<uint32_t> not_held_out_;
  void evaluate_into(RoundRecord& rec);
  // Removes --resume's folder if only a run kept it for resuming (this run holds its rounds);
  // returns the line that says so, "" when nothing was removed.
  std::string remove_superseded();
};

}  // namespace fedpar
