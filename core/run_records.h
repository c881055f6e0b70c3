// The records a distributed run writes, typed: one line of metrics.jsonl per round (RoundRecord)
// and summary.json (RunSummary), each carrying `schema` = kResultsSchema. One field list per
// record (fields() below) serves both the writer and the reader, and the reader is strict: a
// missing required key, a key it does not know, a wrong type or another schema version is an
// Error naming the file, the line and the key, so a renamed key can never read back as 0.
// Optional fields are std::optional: a reader must say what absence means.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fedpar {

constexpr int64_t kResultsSchema = 1;

// One process's socket traffic with the server this round.
struct ProcessRecord {
  int64_t process = 0;  // HELLO order
  uint64_t tasks = 0;   // virtual clients it served this round
  uint64_t bytes_down = 0, bytes_up = 0;
  bool lost = false;                   // missed a deadline earlier: no more tasks
  std::optional<double> peak_rss_mib;  // its peak resident memory so far, as its updates report
};

// One virtual client's update (parameter server and model averaging).
struct ClientRecord {
  uint32_t client = 0;
  int64_t process = 0;
  uint64_t bytes_up = 0;
  double compute_seconds = 0;
  int64_t samples_processed = 0;
  uint64_t parameter_bytes = 0, activation_bytes = 0;
  double loss = 0, update_norm = 0;
  // client_sampling proportional or scaled: the weight its update had in the round's sum
  std::optional<double> weight;
};

// One ring rank's report (allreduce).
struct WorkerRecord {
  int64_t process = 0;
  double compute_seconds = 0, allreduce_seconds = 0;
  uint64_t ring_bytes_sent = 0, ring_bytes_received = 0;
  uint64_t parameter_bytes = 0, activation_bytes = 0, bytes_up = 0;
  // pipeline and tensor [grid]s with data replicas: the ring across them
  std::optional<double> replica_seconds;
  std::optional<uint64_t> replica_bytes_sent, replica_bytes_received;
};

struct RoundRecord {
  // every topology
  int64_t round = 0;     // 1-based
  std::string topology;  // parameter-server | model-averaging | master | allreduce | pipeline |
                         // tensor | async
  // absent on a round whose clients processed no sample (none asked: every sampled client
  // unavailable or on a dropped process; or every update lost, late or missing): 0 there read as
  // a perfect fit
  std::optional<double> train_loss;
  std::optional<double> lr;  // synchronous regimes: [optimizer]'s rate for this round's step(s)
  double wait_seconds = 0;   // the server's wait for the round's replies
  uint64_t bytes_sent_total = 0,
           bytes_received_total = 0;  // at the server's socket, since the start
  uint64_t server_bytes_sent = 0, server_bytes_received = 0;  // this round
  std::vector<ProcessRecord> processes;
  std::optional<double> test_loss, test_accuracy;  // evaluated rounds
  // eval_train: the server's model on the whole training set (train_loss is the clients' steps')
  std::optional<double> global_train_loss, global_train_accuracy;
  // eval_clients: the server's model on each client's own samples (its held-out ones under
  // partition.holdout, else its training shard), one value per client in id order
  // (core/client_spread.h summarizes them)
  std::optional<std::vector<double>> client_accuracy, client_loss;
  // the synchronous topologies
  std::optional<uint64_t> participants, received;
  std::optional<double> aggregate_seconds;
  std::optional<double> samples_processed;  // master, allreduce, async: the round's total
  // parameter server and model averaging
  std::optional<std::vector<uint32_t>> missing;
  std::optional<uint64_t> bytes_down_per_task;
  std::optional<std::vector<ClientRecord>> clients;
  std::optional<double> mean_pairwise_cosine, gradient_diversity, broadcast_seconds;
  std::optional<double> update_drift;  // diagnostics.drift
  // Bytes up that measure or save, not train (diagnostics.drift; a simulated pipeline or tensor
  // run's timings; a ring's replica or a split model's parts, fetched to evaluate or checkpoint):
  // left out of the MB and of the simulated clock.
  std::optional<uint64_t> diagnostic_bytes_up;
  // a ring or a split model sent the server its model this round (to evaluate, save or
  // checkpoint): a one-off the reports' step medians leave out (experiments/run_metrics.h)
  std::optional<bool> model_sent_up;
  // master
  std::optional<uint64_t> batch;
  std::optional<double> worker_forward_seconds, worker_backward_seconds, master_loss_seconds;
  // allreduce
  std::optional<std::vector<WorkerRecord>> workers;
  std::optional<bool> replicas_checked;
  // async
  std::optional<uint64_t> updates_applied, updates_rejected, model_version, staleness_max;
  std::optional<double> staleness_mean, elapsed_seconds;
  // the clients whose task went unanswered for wait_seconds and was sent again, one entry a time
  std::optional<std::vector<uint32_t>> tasks_resent;
  // [network] (docs/network.md), parameter server and model averaging with mode != off: the
  // sampled clients left out as unavailable this round; simulated mode: those whose TASK or UPDATE
  // was drawn lost, and the round's computed seconds and their running sum (the allreduce
  // ring's too); emulated mode: the round's wall seconds under emulation and their running sum
  std::optional<std::vector<uint32_t>> unavailable, simulated_lost;
  // network.sample_from = "available": the clients available this round, whom it drew from
  std::optional<uint64_t> available;
  // [privacy]: the round's updates longer than privacy.clip_norm (clipped); with noise, the
  // accountant's epsilon after this round at privacy.delta
  std::optional<uint64_t> clipped;
  std::optional<double> clip_norm;  // privacy.adaptive_quantile: the clip this round
  std::optional<double> epsilon;
  std::optional<std::vector<uint32_t>> simulated_late;  // network.drop_late: left out, late
  // backup_clients: participants whose update was not waited for (the others' came first)
  std::optional<std::vector<uint32_t>> not_waited_for;
  // robust.rule = krum or multi-krum in a round with too few updates: the rule used ("median")
  std::optional<std::string> robust_fallback;
  std::optional<double> simulated_seconds, simulated_time, emulated_seconds, emulated_time;
};

// summary.json of a distributed run.
struct HostRecord {
  int64_t slots = 1;
  std::vector<uint32_t> clients;
  bool lost = false;
  // it was started during the run and took the place of a process the run had lost, after this
  // round (absent: it was there from the start)
  std::optional<int64_t> joined_after_round;
  std::optional<std::string> device;  // what it computed on: cpu | cuda (absent in older records)
  std::optional<int64_t> pid;         // as its HELLO said: the one the logs name
  // as its HELLO said: its commit, vector units and kernels, and its machine
  std::optional<std::string> build, machine;
  // summary.json's `replaced`: a lost process whose place a newcomer took after this round
  std::optional<int64_t> replaced_after_round;
};
// fedpar run's (and the server's) exit code when the training diverged: an update held NaN or
// Inf. The results folder is kept; its summary says at which round and why.
constexpr int kExitDiverged = 4;

struct RunSummary {
  std::string command = "server";
  std::string model_hash;
  std::optional<uint64_t> parameters;     // the model's parameter count (absent in older records)
  std::optional<uint64_t> train_samples;  // the training set's samples (after data.train_limit)
  std::optional<uint64_t> test_samples;   // the test set's (after data.test_limit; 0: none)
  std::optional<std::string> dataset;     // its name: "mnist", "csv:a.csv", "synthetic-iid"
  // mnist: the folder its files were read from (data.dir, $FEDPAR_DATA_DIR, ./data or the source
  // tree's data/, whichever was found), absolute
  std::optional<std::string> data_from;
  int64_t rounds_run = 0;
  bool stopped_at_accuracy = false;
  std::optional<int64_t> diverged_at_round;  // the round whose update held NaN or Inf
  std::optional<std::string> diverged;       // what held it
  uint64_t clients = 0;
  int64_t processes = 0;
  std::vector<HostRecord> hosts;
  // the lost processes whose places processes started during the run took (hosts lists those)
  std::optional<std::vector<HostRecord>> replaced;
  std::optional<RoundRecord> final;               // the last evaluated round
  std::optional<double> server_peak_rss_mib;      // the server process's peak resident memory
  std::optional<std::string> source_commit;       // the commit the server's fedpar was built from
  std::optional<std::string> build_vector_units;  // what it was compiled for: "AVX-512", ...
  std::optional<std::string> blas_kernels;        // OpenBLAS's pick for the server's CPU
  std::optional<std::string> machine;             // the server's cores, CPU and OS
  std::optional<double> load_average;  // the server machine's 1-minute load average at the end
  // the wall seconds of the rounds this process ran (a resumed run's since it resumed), from the
  // first round's start to the last's end, evaluations and checkpoints included
  std::optional<double> rounds_seconds;
  // A resumed run: the round of the checkpoint it went on from, and the commits of the fedpar
  // builds that ran the rounds before it (absent where the checkpoint did not record them)
  std::optional<int64_t> resumed_after_round;
  std::optional<std::vector<std::string>> earlier_commits;
  // what a resumed run measured otherwise than the rounds before ("eval_every = 10 there, 3
  // here"): its metrics lines mix the two
  std::optional<std::vector<std::string>> resumed_with_changes;
  // model.init_from: the hash of the parameters the run started from (absent: a random init)
  std::optional<std::string> init_hash;
  // eval_clients with partition.holdout: the share of each client's samples held out of its
  // training, which client_accuracy scores (absent: it scores the clients' training shards)
  std::optional<double> client_holdout;
  // what the server warned of before round 1 (absent: nothing)
  std::optional<std::vector<std::string>> warnings;
};

// In the order the fields are listed (round first), then schema and kind.
nlohmann::ordered_json to_json(const RoundRecord& r);
nlohmann::ordered_json to_json(const RunSummary& s);
// Throw Error naming `where` (file and line) and the key on any departure from the schema.
RoundRecord round_from_json(const nlohmann::json& j, const std::string& where);
RunSummary summary_from_json(const nlohmann::json& j, const std::string& where);

// Every key of a round record and of summary.json, nested ones as "clients[].bytes_up" (besides
// `schema` and `kind`): what docs/metrics.md must describe.
std::vector<std::string> round_record_keys();
std::vector<std::string> run_summary_keys();

// The files of a run folder, read strictly.
std::vector<RoundRecord> read_round_records(const std::filesystem::path& run_dir);  // metrics.jsonl
RunSummary read_run_summary(const std::filesystem::path& run_dir);                  // summary.json

}  // namespace fedpar
