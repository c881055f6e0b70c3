// The spec of one distributed run: the config's compiled-in documented defaults and its resolution
// into plain structs, in one place for the server, its clients (WELCOME carries the resolved
// text) and replays.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "core/adaptive_clip.h"
#include "core/attack.h"
#include "core/client_sampling.h"
#include "core/codec/codec.h"
#include "core/config.h"
#include "core/dataset.h"
#include "core/fedopt.h"
#include "core/model.h"
#include "core/network.h"
#include "core/optimizer.h"
#include "core/optimizer_config.h"
#include "core/partition_params.h"
#include "core/pipeline_schedule.h"
#include "core/robust_aggregate.h"
#include "core/weighted_average.h"

namespace fedpar {

// A simulated pipeline's stages report each op's time and bytes: this many micro-batches fit in
// an UPDATE (protocol/frames.cc, max_body_bytes: 64 KiB of JSON) with room to spare.
inline constexpr int64_t kMaxSimulatedMicroBatches = 512;

std::string run_defaults();
// The run config; `extra_sections` (TOML) adds the keys of an experiment built on runs.
Config make_run_config(std::string_view extra_sections = "");

enum class Regime { kGradient, kModel, kAsync };
// How the gradient regime splits the work: data-parallel (parameter server, master, allreduce)
// or model-parallel (pipeline, tensor; each may be replicated data-parallel: [grid]).
enum class Topology { kParameterServer, kMaster, kAllReduce, kPipeline, kTensor };
// What sums the allreduce topology's gradients (allreduce.backend): fedpar's ring over ZeroMQ,
// MPI_Allreduce of the job's MPI library (`mpirun ... fedpar launch`; transport/mpi_job.h), or
// NCCL on the client processes' GPUs (core/device_collective.h).
enum class RingBackend { kZmqRing, kMpi, kNccl };
// The model regime's federated algorithm (local.algorithm; FedProx is local.prox_mu with any):
// FedAvg, SCAFFOLD's control variates (core/scaffold.h), FedNova's normalised averaging
// (core/fednova.h).
enum class FlAlgorithm { kFedAvg, kScaffold, kFedNova };
// Where SCAFFOLD's correction c - c_i enters a local step (local.scaffold_correction;
// docs/definitions.md#scaffold): into the gradient, so through the momentum, with the controls
// divided by the steps' momentum work (the paper's form for any momentum); or subtracted as
// lr (c - c_i) from the weights after the optimizer's step, with the controls divided by the step
// count (NIID-Bench's code).
enum class ScaffoldCorrection { kGradient, kAfterStep };
// How local steps pick their mini-batches (local.sampling; docs/definitions.md#randomness):
// consecutive slices of a shard reshuffled each pass, or a fresh batch each step drawn as the
// gradient regime draws its one (so one local step takes the gradient regime's batch).
enum class LocalSampling { kPasses, kIndependent };

// [pipeline]: one stage per process (docs/topologies.md#pipeline).
struct PipelineSpec {
  int micro_batches = 1;
  PipeSchedule schedule = PipeSchedule::k1F1B;
  std::vector<std::string> split;  // layer names where stages 2.. start; empty: by parameters
  std::string bind = "tcp://127.0.0.1:*";
  double deadline_seconds = 10;
};

// [compression]: what crosses the wire (docs/definitions.md#compression).
struct CompressionSpec {
  std::string uplink = "none";    // client -> server updates (gradients, model deltas)
  std::string downlink = "none";  // server -> client model (or its change, downlink_delta)
  bool downlink_delta = false;    // send the encoded change since what the clients hold
  CodecParams params;             // seed: the run's
  bool error_feedback = false;    // each client keeps what its uplink codec dropped
  bool majority = false;          // aggregate = "majority": the sign of the sum of signs
};

// [privacy]: DP-FedAvg (docs/privacy.md; core/privacy_accountant.h).
struct PrivacySpec {
  double clip_norm = 0;         // S: each client's update clipped to this L2 norm; 0: off
  double noise_multiplier = 0;  // z: the average's noise is N(0, (z S / K)^2); 0: clipping alone
  double delta = 1e-5;          // the accountant's delta
  AdaptiveClip adaptive;        // the clip follows a quantile of the update norms
  bool on() const { return clip_norm > 0; }
  bool noised() const { return noise_multiplier > 0; }
};

// [security]: CURVE on the links to the server (transport/curve.h).
struct SecuritySpec {
  std::string key;      // the server's key pair file; empty: plaintext
  std::string clients;  // the folder of allowed client .pub files
  bool on() const { return !key.empty(); }
};

struct RunSpec {
  std::string name, results_dir, bind;
  uint64_t seed = 1;
  int rounds = 1, processes = 1, eval_every = 1, threads = 1;
  int log_every = 1;  // rounds between the server's round lines (evaluated ones always print)
  std::string device = "cpu";  // the clients' backend
  double wait_seconds = 60, fraction = 1.0;
  double start_wait_seconds = 60;  // for HELLO and READY: start_wait_seconds, or max(wait, 60)
  int64_t max_slots = 1;  // a HELLO may ask for 1 .. max_slots: the config grants, not the peer
  double stop_at_accuracy = 0;  // > 0: stop after the first evaluation at or above it
  bool eval_train = false;      // evaluated rounds also score the model on the training set
  bool eval_clients = false;    // ... and on each client's shard (server/client_evaluation.h)
  Regime regime = Regime::kModel;
  Weighting weighting = Weighting::kBySamples;
  ClientSampling client_sampling = ClientSampling::kUniform;  // with `weighting`: who, what weight
  bool continue_without_missing = false;  // gradient regime: carry on when a client is missing
  int drop_after_missed_rounds = 3;       // misses in a row before a process gets no more tasks
  // a synchronous parameter-server round aggregates the first updates in, leaving this many of
  // its asked clients' out (backup workers, over-selection): not waited for, not misses
  int backup_clients = 0;
  ModelSpec model;
  DataOptions data;
  PartitionParams partition;
  // model regime: local training and the server learning rate
  int local_steps = 1, local_epochs = 0;
  int64_t local_batch = 0;  // 0 = full shard
  float server_lr = 1.0f;
  float prox_mu = 0;  // FedProx: local.prox_mu
  FlAlgorithm algorithm = FlAlgorithm::kFedAvg;
  ScaffoldCorrection scaffold_correction = ScaffoldCorrection::kGradient;
  LocalSampling local_sampling = LocalSampling::kPasses;
  int local_steps_max = 0, local_epochs_max = 0;  // heterogeneous work (core/local_update.h)
  FedOptOptions server_optimizer;                 // [server_optimizer], lr = server_lr
  RobustOptions robust;  // [robust]: how the parameter server reduces the updates
  PrivacySpec privacy;   // [privacy]: DP-FedAvg's clip and noise
  AttackSpec attack;     // [attack]: simulated faulty clients
  // gradient regime: per-client batch
  int64_t sgd_batch = 0;
  // [optimizer]: the gradient regime's server (or workers), the model regime's clients; its
  // schedule counts rounds (async: applied updates)
  OptimizerSpec optimizer;
  Topology topology = Topology::kParameterServer;
  // allreduce topology: the workers' ring
  RingBackend ring_backend = RingBackend::kZmqRing;
  std::string ring_bind = "tcp://127.0.0.1:*";
  int64_t ring_bucket_floats = 1 << 20;
  double ring_deadline_seconds = 10;
  bool ring_elastic = false;  // a dead worker: the ring re-forms without it
  int hash_every = 10;
  PipelineSpec pipeline;
  // pipeline and tensor topologies: data-parallel replicas of the model-parallel group
  // (processes = grid_data x parts; replica r trains on client r's shard)
  int grid_data = 1;
  int model_parts() const { return processes / grid_data; }  // stages, or tensor ways
  bool model_parallel() const {
    return topology == Topology::kPipeline || topology == Topology::kTensor;
  }
  // How long the server waits for a round's updates in real time: wait_seconds, except where the
  // simulated clock says who was late (network.drop_late): there wait_seconds is the clock's
  // deadline, and a short one still leaves the default minute of real patience, so a client
  // computing longer than it (a straggler, this machine's speed) is late on the clock instead of
  // a real miss that drops its process.
  double real_wait_seconds() const {
    constexpr double kDefaultWaitSeconds = 60;  // run_defaults()'s wait_seconds
    return network.mode == NetworkMode::kSimulated && network.drop_late
               ? std::max(wait_seconds, kDefaultWaitSeconds)
               : wait_seconds;
  }
  int fault_flip_rank = -1;  // testing the replica check
  // async regime
  int staleness_bound = 0;  // 0 = none
  bool staleness_lr = false;
  // stragglers: per-client compute slowdown factor and fixed delay (absent = 1 and 0)
  std::map<uint32_t, double> slowdown, delay_seconds;
  double slowdown_of(uint32_t c) const { return slowdown.count(c) ? slowdown.at(c) : 1.0; }
  double delay_of(uint32_t c) const { return delay_seconds.count(c) ? delay_seconds.at(c) : 0.0; }
  CompressionSpec compression;
  NetworkSpec network;  // [network]: link profiles per client (docs/network.md)
  SecuritySpec security;
  // diagnostics
  bool drift = false;         // model regime: log update_drift (doubles the uplink)
  int checkpoint_every = 0;   // > 0: checkpoint.bin every r rounds (docs/distributed.md)
  int save_params_every = 0;  // > 0: params/round-NNNN.safetensors every r rounds
};

// The clients a synchronous round asks, as sync_plan samples them (at least one).
long clients_per_round(const RunSpec& s);
// K, the draws a synchronous round makes among the run's `num_clients`: fraction x clients, at
// least one (client_sampling = "poisson": the mean count; [privacy]'s q is K / num_clients).
size_t draws_per_round(const RunSpec& s, size_t num_clients);
// [privacy]'s sampling rate q = K / num_clients, the accountant's.
double sampling_rate(const RunSpec& s, size_t num_clients);
// The noise multiplier of the updates' average: privacy.noise_multiplier z, or under the adaptive
// clip what z leaves beside the clip's noised count of `k` updates (core/adaptive_clip.h).
double updates_noise_multiplier(const PrivacySpec& p, size_t k);
// The updates such a round aggregates when none is missing: its clients less backup_clients.
long updates_per_round(const RunSpec& s);

// Throws Error naming the key and the valid choices.
RunSpec resolve_run_spec(const Config& c);
// [partition] of `c` with `seed`, the run's, which partition.seed = 0 leaves the split to
// (`fedpar partition` takes its defaults from the run config's).
PartitionParams resolve_partition_params(const Config& c, uint64_t seed);
// The settings `c` changes from the defaults that `s`'s regime never reads ([local] outside the
// model regime, [sgd] in it; [server_optimizer] there is refused), as "key = value": a run warns
// of them, since it would otherwise quietly train other than the config seems to ask.
std::vector<std::string> unused_by_regime(const Config& c, const RunSpec& s);
// What a run warns of before it starts, a sentence each: the settings above, every other setting
// changed from its default that the run does not read (core/unread_settings.h), stragglers among
// clients that share a process (the others wait for them), a CSV run without a
// test file, and an adaptive server optimizer (adam, yogi) at FedAvg's server rate of 1 or more,
// which moves every weight by about that much a round at first (measured:
// docs/definitions.md#server-optimizers).
std::vector<std::string> run_warnings(const Config& c, const RunSpec& s);
// Keys that say where and how a run is carried out, not what it computes: a resumed run may
// change them (any other difference would make it a different run).
bool operational_key(const std::string& key);
// Keys that say what a run measures of its model, not how it trains it (evaluations, diagnostics):
// a resumed run may change them too, except the evaluations' cadence and test set where
// stop_at_accuracy makes them decide when the run ends.
bool observation_key(const std::string& key, const RunSpec& s);
// 16 hex digits over the value of every key that says what a run computes: all but the
// operational ones and those that differ from node to node (data.dir, device). The processes of
// a `fedpar launch` job, started with the same config and flags, give the same wherever they run.
std::string run_config_hash(const Config& c);
// sgd.batch or local.batch at "full" or its default 0: one setting, the whole shard, which reports
// show as full.
bool whole_shard_batch(const Config& c, const std::string& key);
// A resolved config's text (config.resolved.toml, WELCOME) resolved again: every process of a run
// reads the same spec this one way. `source` names the text in errors.
RunSpec run_spec_from_toml(std::string_view toml, std::string_view source);

}  // namespace fedpar
