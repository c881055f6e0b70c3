// Run configuration; see run_config.h.
#include "server/run_config.h"

#include <fmt/format.h>

#include "core/check.h"
#include "core/model_data_config.h"

namespace fedpar {
namespace {

constexpr const char* kRunTop = R"(# fedpar server: one federated (model) or data-parallel (gradient) run
name = ""                # results/<name>/; empty: <regime>-<model>-<dataset>-s<seed>
results_dir = "results"
seed = 1                 # model init, partition, client sampling, local shuffles
rounds = 10
regime = "model"         # gradient (one gradient per client per round) | model (local steps, deltas)
bind = "tcp://127.0.0.1:5555"  # also ipc://PATH; tcp port * picks a free one
processes = 1            # client processes to wait for
wait_seconds = 60.0      # for the processes to say HELLO, and for each round's updates
eval_every = 1           # rounds between test-set evaluations
stop_at_accuracy = 0.0   # end the run once test accuracy (0..1) reaches this; 0 = all rounds
weighting = "samples"    # samples (n_k / n) | uniform (1 / K)
fraction = 1.0           # C: share of clients sampled per round (at least one)
continue_without_missing = false  # gradient regime: go on when a client misses a round
threads = 1              # CPU threads per process for matrix products
device = "cpu"           # where clients compute: cpu | cuda (fedpar client --device overrides)

)";

constexpr const char* kRunSections = R"(
[partition]
scheme = "iid"           # see fedpar partition --help
clients = 4
shards_per_client = 2
labels_per_client = 2
alpha = 0.5
beta = 0.5
min_size = 10

[local]                  # model regime
steps = 1                # local SGD steps per round (when epochs = 0)
epochs = 0               # local epochs per round (overrides steps)
batch = 0                # samples per local step; 0 or "full" = the whole shard
lr = 0.1
momentum = 0.0
server_lr = 1.0          # params += server_lr * average delta (1.0 = FedAvg)

[sgd]                    # gradient regime
batch = 0                # samples per client gradient; 0 or "full" = the whole shard
lr = 0.1                 # server SGD learning rate
momentum = 0.0

[diagnostics]            # measurements that cost extra
drift = false            # model regime: clients also send K x their first step; logs update_drift
save_params_every = 0    # > 0: write params/round-NNNN.safetensors every r rounds (weight divergence)
)";

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}

}  // namespace

std::string run_defaults() { return std::string(kRunTop) + kModelDataDefaults + kRunSections; }

Config make_run_config(std::string_view extra_sections) {
  Config c(run_defaults() + std::string(extra_sections));
  c.allow_words("local.batch", {"full"});
  c.allow_words("sgd.batch", {"full"});
  return c;
}

RunSetup resolve_run_setup(const Config& c) {
  RunSetup s;
  s.seed = uint64_t(c.get_int("seed"));
  s.rounds = int(c.get_int("rounds"));
  require(s.rounds >= 1, "rounds must be >= 1");
  const std::string regime = c.get_string("regime");
  require(regime == "gradient" || regime == "model",
          fmt::format("regime must be gradient or model, got '{}'", regime));
  s.regime = regime == "gradient" ? Regime::kGradient : Regime::kModel;
  s.bind = c.get_string("bind");
  s.processes = int(c.get_int("processes"));
  require(s.processes >= 1, "processes must be >= 1");
  s.wait_seconds = c.get_float("wait_seconds");
  require(s.wait_seconds > 0, "wait_seconds must be > 0");
  s.eval_every = int(c.get_int("eval_every"));
  require(s.eval_every >= 1, "eval_every must be >= 1");
  s.stop_at_accuracy = c.get_float("stop_at_accuracy");
  require(s.stop_at_accuracy >= 0 && s.stop_at_accuracy <= 1, "stop_at_accuracy must be in [0, 1]");
  const std::string w = c.get_string("weighting");
  require(w == "samples" || w == "uniform", fmt::format("weighting must be samples or uniform, got '{}'", w));
  s.weighting = w == "samples" ? Weighting::kBySamples : Weighting::kUniform;
  s.fraction = c.get_float("fraction");
  require(s.fraction > 0 && s.fraction <= 1, "fraction must be in (0, 1]");
  s.continue_without_missing = c.get_bool("continue_without_missing");
  s.device = c.get_string("device");
  require(s.device == "cpu" || s.device == "cuda", fmt::format("device must be cpu or cuda, got '{}'", s.device));
  s.threads = int(c.get_int("threads"));
  require(s.threads >= 1 && s.threads <= 256, "threads must be between 1 and 256");
  s.results_dir = c.get_string("results_dir");
  s.model = resolve_model_spec(c);
  s.data = resolve_data_options(c, s.seed);

  PartitionParams& p = s.partition;
  p.scheme = c.get_string("partition.scheme");
  p.clients = int(c.get_int("partition.clients"));
  p.seed = s.seed;
  p.shards_per_client = int(c.get_int("partition.shards_per_client"));
  p.labels_per_client = int(c.get_int("partition.labels_per_client"));
  p.alpha = c.get_float("partition.alpha");
  p.beta = c.get_float("partition.beta");
  p.min_size = int(c.get_int("partition.min_size"));

  s.local_steps = int(c.get_int("local.steps"));
  s.local_epochs = int(c.get_int("local.epochs"));
  require(s.local_steps >= 1 && s.local_epochs >= 0, "local.steps must be >= 1 and local.epochs >= 0");
  s.local_batch = c.is_word("local.batch", "full") ? 0 : c.get_int("local.batch");
  require(s.local_batch >= 0, "local.batch must be >= 0 (0 = full) or \"full\"");
  s.local_lr = float(c.get_float("local.lr"));
  s.local_momentum = float(c.get_float("local.momentum"));
  s.server_lr = float(c.get_float("local.server_lr"));
  s.sgd_batch = c.is_word("sgd.batch", "full") ? 0 : c.get_int("sgd.batch");
  require(s.sgd_batch >= 0, "sgd.batch must be >= 0 (0 = full) or \"full\"");
  s.sgd_lr = float(c.get_float("sgd.lr"));
  s.sgd_momentum = float(c.get_float("sgd.momentum"));
  require(s.local_lr > 0 && s.sgd_lr > 0 && s.server_lr > 0, "learning rates must be > 0");

  s.drift = c.get_bool("diagnostics.drift");
  s.save_params_every = int(c.get_int("diagnostics.save_params_every"));
  require(s.save_params_every >= 0, "diagnostics.save_params_every must be >= 0 (0 = never)");

  s.name = c.get_string("name");
  if (s.name.empty())
    s.name = fmt::format("{}-{}-{}-s{}", regime, s.model.name, s.data.name, s.seed);
  return s;
}

}  // namespace fedpar
