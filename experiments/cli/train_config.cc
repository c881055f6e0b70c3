// `fedpar train` configuration; see train_config.h.
#include "experiments/cli/train_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/check.h"
#include "core/model_data_config.h"

namespace fedpar {

namespace {

constexpr const char* kTrainTop = R"(# fedpar train: centralized (single-process) training
name = ""               # results/<name>/; empty: <model>-<dataset>-e<epochs>-b<batch>-s<seed>
results_dir = "results"
seed = 1                # init, shuffling and synthetic data all derive from it
device = "cpu"          # cpu | cuda
threads = 1             # CPU threads for matrix products
precision = "fp32"      # fp32 | bf16 | fp16: matrix products' inputs (fp32 master weights; fp16 adds
                        # dynamic loss scaling)

)";

constexpr const char* kTrainSection = R"(
[train]
epochs = 1
batch = 10              # samples per step, or "full"
accumulate = 1          # micro-batches per step (same update as one big batch)
lr = 0.1
lr_schedule = "constant" # constant | step | cosine
lr_step_size = 1        # step: decay every n steps
lr_gamma = 0.1          # step: decay factor
lr_min = 0.0            # cosine: final lr
warmup_steps = 0        # linear warmup before the schedule
momentum = 0.0
weight_decay = 0.0
nesterov = false
shuffle = true
eval_batch = 1000
log_every = 100         # steps between train lines in metrics.jsonl
)";

}  // namespace

std::string train_defaults() { return std::string(kTrainTop) + kModelDataDefaults + kTrainSection; }

Config make_train_config() {
  Config c(train_defaults());
  c.allow_words("train.batch", {"full"});
  return c;
}

const std::vector<FlagKey>& train_flags() {
  static const std::vector<FlagKey> flags = {
      {"--name", "name", "results folder name"},
      {"--results-dir", "results_dir", "parent folder of results"},
      {"--seed", "seed", "run seed"},
      {"--device", "device", "cpu"},
      {"--threads", "threads", "CPU threads for matrix products"},
      {"--model", "model.name", "logreg | linreg | mlp | 2nn | cnn"},
      {"--hidden", "model.hidden", "mlp hidden widths, e.g. 200,200"},
      {"--dataset", "data.name", "mnist | synthetic | csv"},
      {"--data-dir", "data.dir", "folder holding mnist/ (default: $FEDPAR_DATA_DIR or ./data)"},
      {"--train-limit", "data.train_limit", "use the first n training samples"},
      {"--test-limit", "data.test_limit", "use the first n test samples"},
      {"--csv-train", "data.csv_train", "CSV training file"},
      {"--csv-test", "data.csv_test", "CSV test file"},
      {"--epochs", "train.epochs", "passes over the training set"},
      {"--batch", "train.batch", "batch size, or 'full'"},
      {"--accumulate", "train.accumulate", "micro-batches per step"},
      {"--lr", "train.lr", "learning rate"},
      {"--precision", "precision", "fp32 | bf16 | fp16 (matrix products)"},
      {"--lr-schedule", "train.lr_schedule", "constant | step | cosine"},
      {"--warmup", "train.warmup_steps", "linear warmup steps"},
      {"--momentum", "train.momentum", "SGD momentum"},
      {"--weight-decay", "train.weight_decay", "L2 weight decay"},
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
  s.threads = int(c.get_int("threads"));
  require(s.threads >= 1 && s.threads <= 256, "threads must be between 1 and 256");
  s.results_dir = c.get_string("results_dir");

  s.model = resolve_model_spec(c);
  s.data = resolve_data_options(c, uint64_t(c.get_int("seed")));
  const DataOptions& d = s.data;

  TrainOptions& t = s.train;
  t.seed = uint64_t(c.get_int("seed"));
  t.epochs = int(c.get_int("train.epochs"));
  require(t.epochs >= 1, "train.epochs must be >= 1");
  t.batch = c.is_word("train.batch", "full") ? 0 : c.get_int("train.batch");
  require(t.batch >= 1 || c.is_word("train.batch", "full"), "train.batch must be >= 1 or \"full\"");
  t.accumulate = int(c.get_int("train.accumulate"));
  require(t.accumulate >= 1, "train.accumulate must be >= 1");
  t.precision = parse_precision(c.get_string("precision"));
  t.lr.base_lr = float(c.get_float("train.lr"));
  t.lr.kind = c.get_string("train.lr_schedule");
  t.lr.step_size = c.get_int("train.lr_step_size");
  t.lr.gamma = float(c.get_float("train.lr_gamma"));
  t.lr.min_lr = float(c.get_float("train.lr_min"));
  t.lr.warmup_steps = c.get_int("train.warmup_steps");
  t.lr.total_steps = 1;  // placeholder for validation; the trainer sets the real count
  t.lr.validate();
  t.lr.total_steps = 0;
  t.sgd.momentum = float(c.get_float("train.momentum"));
  t.sgd.weight_decay = float(c.get_float("train.weight_decay"));
  t.sgd.nesterov = c.get_bool("train.nesterov");
  require(t.sgd.momentum >= 0.0f && t.sgd.momentum < 1.0f, "train.momentum must be in [0, 1)");
  require(t.sgd.weight_decay >= 0.0f, "train.weight_decay must be >= 0");
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
