// One run's results folder read back for reports: its curves per evaluated round, its memory and
// time accounting (medians over rounds), and the weight divergence between two runs' snapshots.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/run_records.h"
#include "core/run_spec.h"

namespace fedpar {

// Per evaluated round (every round when eval_every = 1), cumulative where it says so.
struct RunCurves {
  std::vector<double> round;
  std::vector<double> accuracy;  // test accuracy, percent
  std::vector<double> test_loss;
  // eval_train: the model on the training set at the rounds in train_round (else both empty);
  // they are the rounds above unless the run has no test set
  std::vector<double> global_train_loss, train_round;
  // eval_clients: how the clients' accuracies on their own samples spread (percent; mean over
  // clients, the mean of the worst 10%, the lowest, the highest) at the rounds in client_round
  std::vector<double> client_mean, client_worst10, client_min, client_max, client_round;
  // async: the staleness of the round's applied updates (mean and max), every round
  std::vector<double> staleness_mean, staleness_max, staleness_round;
  // MB sent + received at the server, plus what workers sent each other (a ring's, a pipeline's
  // or a tensor grid's links), cumulative, diagnostics left out
  std::vector<double> mb;
  // of it, what the server received (clients -> server; diagnostics left out) and sent
  std::vector<double> mb_up, mb_down;
  // What a deployment with one device per client would move, cumulative: each asked client's own
  // download of the model (bytes_down_per_task) and its update; without per-client records (a
  // ring, a split model, the master) the round's bytes at the server and between the workers.
  // Unlike mb, it does not depend on how many processes host the clients.
  std::vector<double> mb_device;
  std::vector<double> samples;  // samples processed by all clients (forward/backward), cumulative
  double all_samples = 0;       // ... over every round, evaluated or not
  std::vector<double> cosine;   // mean pairwise cosine of the round's client updates (empty
                                // where no round compared any: a ring, a pipeline)
  std::vector<double> drift;    // update_drift, when the run logged it (diagnostics.drift)
  // [privacy]: the last round's epsilon (with noise), and the updates clipped of those aggregated
  std::optional<double> epsilon;
  uint64_t clipped = 0, aggregated = 0;
  // The updates the rounds asked for (participants, and those whose message the simulated links
  // lost), and of them those that never reached the aggregate: `missing` (a process gone or
  // dropped, a real deadline missed), `simulated_lost`, `simulated_late` (network.drop_late)
  uint64_t updates_asked = 0, updates_lost = 0;
  std::vector<double> seconds;  // time of the rounds so far: the server's wait + aggregation, or
                                // the network's simulated / emulated time when the run had one
  double round_seconds = 0;     // the mean round on the clock of `seconds`
  // which time `seconds` and `round_seconds` are: "simulated", "emulated", "elapsed" (async: since
  // the start) or "server" (the rounds' wait + aggregation)
  std::string clock = "server";
};

// The seed model of data parallelism, measured: per client (the largest over clients), per round
// (the median over rounds).
struct RunAccounting {
  double clients = 0;             // participants per round
  double parameter_mb = 0;        // weights + gradient held by a client process's model (2m floats)
  double activation_mb = 0;       // activations, their gradients and layer scratch for its batch
  double down_mb = 0, up_mb = 0;  // per client per round: the model down, the update up
  double compute_ms = 0;          // the slowest process's compute (its clients one after another)
  double broadcast_ms = 0;        // the server handing the TASK to its socket
  double exchange_ms = 0;         // the rest of the wait: transfers, decoding, queueing
  double aggregate_ms = 0;        // the server's reduction and update
};

// Traffic per node and step, for comparing the data-parallel topologies (medians over rounds).
struct RunTraffic {
  std::string topology;  // parameter-server | master | allreduce | async | model-averaging
  int workers = 0;       // client processes
  double step_ms = 0;    // one round: step_ms(round), the median over steady_rounds
  double server_mb_sent = 0, server_mb_received = 0;
  double worker_mb_sent = 0, worker_mb_received = 0;  // the busiest worker's, ring traffic included
  double allreduce_ms = 0, busbw_gbps = 0;  // allreduce: the slowest rank's, busbw = algbw 2(N-1)/N
};

// "mlp 1024,256", "cnn": a model's name and hidden widths, for report tables.
std::string model_key(const ModelSpec& m);

// The run's config.resolved.toml, resolved as every process of the run resolved it.
RunSpec read_run_spec(const std::filesystem::path& run_dir);
RunCurves read_curves(const std::filesystem::path& run_dir);
RunTraffic read_traffic(const std::filesystem::path& run_dir);
// A step's rounds: those after the first (whose TASKs bring a ring its model), without an
// evaluation (which adds its time) and without a ring's or split model's model sent to the server
// (to evaluate, save or checkpoint), where there are such rounds; every report that gives a
// step's time or traffic takes its medians over these.
std::vector<RoundRecord> steady_rounds(std::vector<RoundRecord> rounds);
// One round's step: the server's wait + aggregation (+ a master's loss between its two exchanges),
// in ms.
double step_ms(const RoundRecord& round);
RunAccounting read_accounting(const std::filesystem::path& run_dir);

// ||w_run - w_ref|| / ||w_ref|| at every round both saved (diagnostics.save_params_every).
struct Divergence {
  std::vector<double> round, relative;
};
Divergence weight_divergence(const std::filesystem::path& run_dir,
                             const std::filesystem::path& ref_dir);

}  // namespace fedpar
