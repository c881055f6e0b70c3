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

TrainLike train_like(const std::filesystem::path& run) {
  const auto resolved = run / "config.resolved.toml";
  if (!std::filesystem::exists(resolved) || !std::filesystem::exists(run / "summary.json"))
    throw Error(fmt::format(
        "--like {}: not a finished distributed run's folder (it needs config.resolved.toml and "
        "summary.json, which fedpar run and fedpar server write when a run completes)",
        run.string()));
  Config c = make_run_config();
  c.merge_file(resolved);
  const RunSpec s = resolve_run_spec(c);
  const RunSummary summary = read_run_summary(run);
  const RunCurves curves = read_curves(run);
  if (curves.samples.empty() || !summary.train_samples || *summary.train_samples == 0)
    throw Error(
        fmt::format("--like {}: its metrics.jsonl records no samples processed", run.string()));
  TrainLike out;
  const Config train = make_train_config();
  for (const std::string& k : train.keys())  // model.*, data.*, optimizer.*, seed, device, ...
    if (k != "name" && k != "results_dir" && std::ranges::count(c.keys(), k) > 0)
      out.sets.push_back(fmt::format("{}={}", k, c.value_text(k)));
  const bool model = s.regime == Regime::kModel;
  const std::string batch_key = model ? "local.batch" : "sgd.batch";
  // 0: the whole shard, whose centralized counterpart is the whole training set
  const int64_t b = model ? s.local_batch : s.sgd_batch;
  const std::string batch = b > 0 ? std::to_string(b) : "'full'";
  out.sets.push_back("train.batch=" + batch);
  const double epochs = curves.samples.back() / double(*summary.train_samples);
  const int64_t whole = std::max<int64_t>(1, std::llround(epochs));
  out.sets.push_back(fmt::format("train.epochs={}", whole));
  out.sets.push_back(fmt::format("name={}-centralized", s.name));
  // beside the run (its config's results_dir is relative to where it was started)
  out.sets.push_back(
      fmt::format("results_dir='{}'",
                  std::filesystem::absolute(run).lexically_normal().parent_path().string()));
  out.said = fmt::format(
      "like {}: its model, data, seed and optimizer, train.batch = {} ({}), {} epoch(s) (the run "
      "processed {:.0f} samples, {:.2f} times its training set's {})",
      run.string(), batch, batch_key, whole, curves.samples.back(), epochs, *summary.train_samples);
  if (s.optimizer.lr.kind != "constant" || s.optimizer.lr.warmup_steps > 0)
    out.said +=
        "; note: its optimizer.schedule and warmup_steps counted rounds, here they count steps";
  return out;
}

}  // namespace fedpar
