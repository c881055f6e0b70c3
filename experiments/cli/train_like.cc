#include "experiments/cli/train_like.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "experiments/cli/train_config.h"
#include "experiments/run_metrics.h"

namespace fedpar {

TrainLike train_like(const std::filesystem::path& given) {
  // the folder itself, however named ("results/a/", ".")
  std::filesystem::path run = std::filesystem::absolute(given).lexically_normal();
  if (!run.has_filename()) run = run.parent_path();
  const auto resolved = run / "config.resolved.toml";
  if (!std::filesystem::exists(resolved) || !std::filesystem::exists(run / "summary.json"))
    throw Error(fmt::format(
        "--like {}: not a finished distributed run's folder (it needs config.resolved.toml and "
        "summary.json, which fedpar run and fedpar server write when a run completes)",
        given.string()));
  Config c = make_run_config();
  c.merge_file(resolved);
  const RunSpec s = resolve_run_spec(c);
  // fedpar train draws synthetic data from its seed; the run drew it from partition.seed
  if (s.data.name == "synthetic" && s.data.seed != s.seed)
    throw Error(fmt::format(
        "--like {}: its synthetic data was drawn from partition.seed = {}, and fedpar train draws "
        "it from its seed ({} here): the baseline would train on other data; give fedpar train "
        "--set seed={} beside a config of its own instead",
        given.string(), s.data.seed, s.seed, s.data.seed));
  const RunSummary summary = read_run_summary(run);
  const double samples = read_curves(run).all_samples;
  if (samples <= 0 || !summary.train_samples || *summary.train_samples == 0)
    throw Error(
        fmt::format("--like {}: its metrics.jsonl records no samples processed", given.string()));
  TrainLike out;
  const Config train = make_train_config();
  for (const std::string& k : train.keys())  // model.*, data.*, optimizer.*, seed, device, ...
    if (k != "name" && k != "results_dir" && std::ranges::count(c.keys(), k) > 0)
      out.sets.push_back(fmt::format("{}={}", k, c.value_text(k)));
  if (summary.data_from)  // the MNIST the run read, wherever this is started
    out.sets.push_back(fmt::format(
        "data.dir='{}'", std::filesystem::path(*summary.data_from).parent_path().string()));
  // One step's samples: a client's batch in the model regime and in async (each update a step),
  // the round's batches together in a synchronous gradient step (the clients', or a pipeline's
  // or tensor grid's replicas'); 0, the whole shard, is the whole training set.
  const bool model = s.regime == Regime::kModel;
  const std::string batch_key = model ? "local.batch" : "sgd.batch";
  const int64_t b = model ? s.local_batch : s.sgd_batch;
  const int64_t together = model || s.regime == Regime::kAsync ? 1
                           : s.model_parallel()                ? int64_t(s.grid_data)
                                                               : updates_per_round(s);
  const std::string batch = b > 0 ? std::to_string(b * together) : "'full'";
  out.sets.push_back("train.batch=" + batch);
  const double epochs = samples / double(*summary.train_samples);
  const int64_t whole = std::max<int64_t>(1, std::llround(epochs));
  out.sets.push_back(fmt::format("train.epochs={}", whole));
  out.sets.push_back(fmt::format("name={}-centralized", run.filename().string()));
  out.sets.push_back(fmt::format("results_dir='{}'", run.parent_path().string()));  // beside it
  out.said = fmt::format(
      "like {}: its model, data, seed and optimizer, train.batch = {} ({}{}), {} epoch(s) (the "
      "run processed {:.0f} samples, {:.2f} times its training set's {})",
      given.string(), batch, batch_key,
      b > 0 && together > 1 ? fmt::format(" x {} a step", together) : "", whole, samples, epochs,
      *summary.train_samples);
  if (std::abs(double(whole) / epochs - 1) > 0.1)
    out.said += fmt::format(
        "; note: fedpar train counts whole epochs, so the baseline processes {:.2f} times the "
        "run's samples (--epochs sets another count)",
        double(whole) / epochs);
  if (s.partition.holdout > 0)
    out.said += fmt::format(
        "; note: the run's clients trained on {:.0f}% of their samples (partition.holdout), the "
        "baseline trains on the whole training set",
        100 * (1 - s.partition.holdout));
  if (s.regime != Regime::kAsync && together == 1 &&
      (s.optimizer.lr.kind != "constant" || s.optimizer.lr.warmup_steps > 0))
    out.said +=
        "; note: its optimizer.schedule and warmup_steps counted rounds, here they count steps";
  return out;
}

}  // namespace fedpar
