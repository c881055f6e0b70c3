// `fedpar train` configuration; see train_config.h.
#include "experiments/cli/train_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/check.h"
#include "core/model_data_config.h"
#include "core/optimizer_config.h"
#include "core/run_spec.h"

namespace fedpar {

namespace {

constexpr const char* kTrainTop = R"(# fedpar train: centralized (single-process) training
name = ""               # results/<name>/; empty: <model>-<dataset>-e<epochs>-b<batch>-s<seed>
results_dir = "results"
seed = 1                # init, shuffling and synthetic data all derive from it
device = "cpu"          # cpu | cuda
threads = 1             # CPU threads for products; another count sums in another order (other bits)

)";

constexpr const char* kTrainSection = R"(
[train]
epochs = 1
batch = 10              # samples per step, or "full"
shuffle = true          # a new sample order each epoch (a full batch keeps the file's)
eval_batch = 1000
log_every = 100         # steps between train lines in metrics.jsonl
)";

}  // namespace

std::string train_defaults() {
  return std::string(kTrainTop) + kModelDataDefaults + kTrainSection + kOptimizerDefaults;
}

Config make_train_config() {
  Config c(train_defaults());
  c.describe_keys_with("fedpar keys train");
  std::vector<std::string> run_only;  // a `fedpar run` config's keys that train has not
  const Config run = make_run_config();
  for (const std::string& k : run.keys())
    if (std::ranges::find(c.keys(), k) == c.keys().end()) run_only.push_back(k);
  c.refer_elsewhere(std::move(run_only),
                    "a key of `fedpar run` configs (the server and its clients), not of "
                    "centralized training: is this a `fedpar run` config? (`fedpar run FILE` runs "
                    "one; `fedpar train --like RESULTS/NAME` trains a finished run's centralized "
                    "baseline)");
  c.allow_words("train.batch", {"full"});
  return c;
}

const std::vector<FlagKey>& train_flags() {
  static const std::vector<FlagKey> flags = {
      {"--name", "name", "results folder name"},
      {"--results-dir", "results_dir", "parent folder of results"},
      {"--seed", "seed", "run seed"},
      {"--device", "device", "cpu | cuda (where training computes)"},
      {"--threads", "threads",
       "CPU threads for matrix products (another count sums in another order: other bits; more "
       "than the free cores slows the run)"},
      {"--model", "model.name", "logreg | linreg | mlp | 2nn | cnn | lenet"},
      {"--hidden", "model.hidden", "mlp hidden widths, e.g. 200,200"},
      {"--epochs", "train.epochs", "passes over the training set"},
      {"--batch", "train.batch", "batch size, or 'full'"},
      {"--accumulate", "optimizer.accumulate", "micro-batches per step"},
      {"--lr", "optimizer.lr", "learning rate"},
      {"--precision", "optimizer.precision", "fp32 | bf16 | fp16 (matrix products)"},
      {"--lr-schedule", "optimizer.schedule", "constant | step | cosine"},
      {"--warmup", "optimizer.warmup_steps", "linear warmup steps"},
      {"--momentum", "optimizer.momentum", "SGD momentum"},
      {"--weight-decay", "optimizer.weight_decay", "L2 weight decay"},
  };
  return flags;
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}

}  // namespace

TrainSetup resolve_train_setup(const Config& c) {
  TrainSetup s;
  s.device = c.get_string("device");
  s.threads = c.get_int32("threads");
  require(s.threads >= 1 && s.threads <= 256, "threads must be between 1 and 256");
  s.results_dir = c.get_string("results_dir");

  s.model = resolve_model_spec(c);
  s.data = resolve_data_options(c, resolve_seed(c));
  const DataOptions& d = s.data;

  TrainOptions& t = s.train;
  t.seed = resolve_seed(c);
  t.epochs = c.get_int32("train.epochs");
  require(t.epochs >= 1, "train.epochs must be >= 1");
  t.batch = c.is_word("train.batch", "full") ? 0 : c.get_int("train.batch");
  require(t.batch >= 1 || c.is_word("train.batch", "full"), "train.batch must be >= 1 or \"full\"");
  // total steps: the trainer fills them in for cosine
  const OptimizerSpec o = resolve_optimizer(c, t.batch, 0);
  t.lr = o.lr;
  t.sgd = o.sgd;
  t.accumulate = o.accumulate;
  t.precision = o.precision;
  t.shuffle = c.get_bool("train.shuffle");
  t.eval_batch = c.get_int("train.eval_batch");
  require(t.eval_batch >= 1, "train.eval_batch must be >= 1");
  s.log_every = c.get_int("train.log_every");
  require(s.log_every >= 1, "train.log_every must be >= 1");

  s.name = c.get_string("name");
  if (s.name.empty())
    s.name = fmt::format("{}-{}-e{}-b{}-s{}", s.model.name, d.name, t.epochs,
                         t.batch == 0 ? std::string("full") : std::to_string(t.batch), t.seed);
  require(s.name.find('/') == std::string::npos && s.name != "." && s.name != "..",
          fmt::format("name '{}' must be a plain folder name", s.name));
  return s;
}

}  // namespace fedpar
