// `fedpar train`: centralized training with progress, results/<name>/ and a final
// "test accuracy: NN.NN%" line on stdout.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/backend.h"
#include "core/build_info.h"
#include "core/check.h"
#include "core/executable.h"
#include "core/hash.h"
#include "core/init_from.h"
#include "core/results_dir.h"
#include "core/run_records.h"
#include "core/safetensors.h"
#include "core/stop_signal.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/progress.h"
#include "experiments/cli/train_config.h"
#include "experiments/cli/train_like.h"
#include "experiments/provenance.h"
#include "experiments/train_plots.h"

namespace fedpar {
namespace {

struct TrainArgs {
  std::string config_path;
  std::string like;  // a distributed run's folder whose baseline this is (train_like.h)
  std::vector<std::string> sets;
  std::vector<std::string> flag_sets;  // "key=value" from the flags, applied before --set
  bool quiet = false, no_plots = false;
};

double pct(const BatchStats& s) {
  return s.samples ? 100.0 * double(s.correct) / double(s.samples) : 0.0;
}
double mean_loss(const BatchStats& s) { return s.samples ? s.loss_sum / double(s.samples) : 0.0; }

int run_train(const TrainArgs& args) {
  Config cfg = make_train_config();
  std::optional<TrainLike> like;
  if (!args.like.empty()) cfg.set_all((like = train_like(args.like))->sets);
  if (!args.config_path.empty()) cfg.merge_file(args.config_path);
  cfg.set_all(flags_then_sets(args.flag_sets, args.sets));
  const TrainSetup s = resolve_train_setup(cfg);
  cfg.set("name", s.name);  // the resolved config names the folder it was written to
  Progress progress(!args.quiet);
  if (like)
    progress.line(fmt::format("fedpar train: {}; flags and --set given beside it win", like->said));
  else if (args.config_path.empty() && args.sets.empty() && args.flag_sets.empty())
    progress.line(fmt::format(
        "fedpar train: no config file or flags given, so it trains the defaults: {} on {}, {} "
        "epoch(s) (`fedpar keys train` lists every key, `fedpar train --help` the flags)",
        s.model.name, s.data.name, s.train.epochs));

  // Everything that can fail on user input happens before the results folder exists.
  auto backend = make_backend(s.device, s.threads);
  const auto t_load = std::chrono::steady_clock::now();
  TrainTest data = load_dataset(s.data);
  Model model(*backend, s.model, data.train.shape, data.train.num_classes);
  init_model(model, s.model, s.train.seed);
  std::string init_hash, started_from;  // model.init_from: its parameters' hash, the README's line
  if (!s.model.init_from.empty()) {
    const auto init = model.params_host();
    init_hash = hash_hex(hash_bytes(init.data(), init.size() * sizeof(float)));
    started_from = started_from_line(s.model.init_from, init_hash);
  }
  progress.line(fmt::format(
      "fedpar train: {} on {} ({} train / {} test samples of {} features, {} classes; loaded "
      "in {:.1f}s)",
      s.model.name, data.train.name, data.train.size(), data.test.size(), data.train.dim(),
      data.train.num_classes,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count()));
  progress.line(fmt::format("model {} with {} parameters; {}", s.model.name, model.num_params(),
                            backend->describe()));
  for (const std::string& w : limits_above_the_data(s.data, data)) progress.line("warning: " + w);
  const bool tested = data.test.size() > 0;
  if (!tested)
    progress.line(
        "warning: no test set (data.csv_test): no test accuracy is recorded, only the training "
        "set's");

  ResultsDir out(s.results_dir, s.name);
  out.write_text("config.resolved.toml", cfg.to_toml());
  JsonlWriter metrics(out.path() / "metrics.jsonl");
  const int64_t per_epoch = steps_per_epoch(data.train.size(), s.train.batch);
  BatchStats window, shown;  // since the last metrics line / the last progress print
  std::vector<nlohmann::json> epochs;
  const auto t0 = std::chrono::steady_clock::now();
  // The first step whose loss is not finite, or an epoch that ends with parameters that are not
  // (a step's loss is taken before its update), ends the training: the run keeps the last
  // epoch's finite model (or the initial one), as fedpar run keeps its last finite round.
  struct Diverged {
    int64_t step;
    int epoch;
    std::string what;  // "its loss was not finite"
  };
  std::optional<Diverged> diverged;
  std::vector<float> kept = model.params_host();
  int kept_epoch = 0;
  TrainCurves curves;  // what metrics.jsonl gets, for the plots
  int64_t samples_seen = 0;
  const auto epochs_seen = [&] { return double(samples_seen) / double(data.train.size()); };

  TrainCallbacks cb;
  install_stop_handlers();  // a stopped run unwinds: its partial folder is removed
  cb.on_step = [&](const StepInfo& st) {
    throw_if_stopped();
    window += st.batch;
    shown += st.batch;
    samples_seen = st.samples;
    if (!std::isfinite(st.batch.loss_sum))
      throw Diverged{st.step, st.epoch, "its loss was not finite"};
    if (st.step % s.log_every == 0 || st.step == st.steps_total) {
      metrics.write({{"kind", "train"},
                     {"epoch", st.epoch},
                     {"step", st.step},
                     {"samples", st.samples},
                     {"lr", std::stod(fmt::format("{:.7g}", st.lr))},
                     {"loss", mean_loss(window)},
                     {"accuracy", pct(window) / 100.0}});
      curves.epoch.push_back(epochs_seen());
      curves.loss.push_back(mean_loss(window));
      curves.accuracy.push_back(pct(window));
      window = {};
    }
    if (progress.update(st.step, st.steps_total,
                        fmt::format("epoch {}/{} step {}/{} loss {:.4f} acc {:.1f}%", st.epoch,
                                    s.train.epochs, st.step - int64_t(st.epoch - 1) * per_epoch,
                                    per_epoch, mean_loss(shown), pct(shown))))
      shown = {};
  };
  cb.on_epoch = [&](const EpochInfo& ep) {
    std::vector<float> now = model.params_host();
    if (!std::all_of(now.begin(), now.end(), [](float w) { return std::isfinite(w); }))
      throw Diverged{ep.step, ep.epoch, "it left parameters that are not finite"};
    nlohmann::json rec = {{"kind", "eval"},
                          {"epoch", ep.epoch},
                          {"step", ep.step},
                          {"train_loss", mean_loss(ep.train)},
                          {"train_accuracy", pct(ep.train) / 100.0},
                          {"epoch_seconds", ep.seconds},
                          {"samples_per_second", double(ep.train.samples) / ep.seconds}};
    if (tested) {  // without a test set there is none (0% would read as a measured accuracy)
      rec["test_loss"] = mean_loss(ep.test), rec["test_accuracy"] = pct(ep.test) / 100.0;
      curves.test_epoch.push_back(epochs_seen());
      curves.test_loss.push_back(mean_loss(ep.test));
      curves.test_accuracy.push_back(pct(ep.test));
    }
    metrics.write(rec);
    epochs.push_back(rec);
    kept = std::move(now), kept_epoch = ep.epoch;
    progress.line(fmt::format(
        "epoch {}/{}: train loss {:.4f} acc {:.2f}% | {} | {:.1f}s, {:.0f} samples/s", ep.epoch,
        s.train.epochs, mean_loss(ep.train), pct(ep.train),
        tested ? fmt::format("test loss {:.4f} acc {:.2f}%", mean_loss(ep.test), pct(ep.test))
               : "no test set",
        ep.seconds, double(ep.train.samples) / ep.seconds));
  };
  try {
    train(model, data.train, data.test, s.train, cb, /*init=*/false);
  } catch (const Diverged& d) {
    diverged = d;
    progress.line(fmt::format(
        "the training diverged at step {} (epoch {}): {}; the run ends here with the model of "
        "{} (lower the learning rate, or add warm-up)",
        d.step, d.epoch, d.what,
        kept_epoch > 0 ? fmt::format("epoch {}", kept_epoch) : "its start, untrained"));
  }
  throw_if_stopped();  // one that came after the last step
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (diverged) model.set_params_host(kept);  // its epoch's record is the last in `epochs`
  if (diverged && kept_epoch == 0) {          // none: the initial model's, evaluated
    const BatchStats tr = evaluate(model, data.train);
    nlohmann::json rec = {{"kind", "eval"},
                          {"epoch", 0},
                          {"train_loss", mean_loss(tr)},
                          {"train_accuracy", pct(tr) / 100.0}};
    if (tested) {
      const BatchStats te = evaluate(model, data.test);
      rec["test_loss"] = mean_loss(te), rec["test_accuracy"] = pct(te) / 100.0;
    }
    epochs.push_back(rec);
  }
  const auto params = model.params_host();
  save_safetensors(out.path() / "model.safetensors", model.layout(), params,
                   {{"format", "fedpar"},
                    {"model", s.model.name},
                    {"dataset", data.train.name},
                    {"seed", std::to_string(s.train.seed)}});
  const nlohmann::json& last = epochs.back();
  nlohmann::json summary = {{"command", "train"},
                            {"model", s.model.name},
                            {"parameters", model.num_params()},
                            {"dataset", data.train.name},
                            {"train_samples", data.train.size()},
                            {"test_samples", data.test.size()},
                            {"backend", backend->describe()},
                            {"seconds", seconds},
                            {"diverged", diverged.has_value()},
                            {"final", last},
                            {"epochs", epochs}};
  summary.update(provenance_json());  // commit, vector units, kernels, machine, load
  if (diverged) {
    summary["diverged_at"] = {{"epoch", diverged->epoch}, {"step", diverged->step}};
    summary["epochs_run"] = kept_epoch;
  }
  summary["model_hash"] = hash_hex(hash_bytes(params.data(), params.size() * sizeof(float)));
  if (!init_hash.empty()) summary["init_hash"] = init_hash;  // model.init_from's parameters
  out.write_json("summary.json", summary);
  const std::string plots = args.no_plots ? "(no plots drawn: `--no-plots`)\n\n"
                                          : draw_train_plots(out.path(), s.name, curves);
  out.write_text(
      "README.md",
      fmt::format("# {}\n\nCentralized training of `{}` on {} by `fedpar train`.\n\n"
                  "- final {} after {} epoch(s), {:.1f} s{}\n{}"
                  "- `config.resolved.toml`: every setting of the run; rerun from the folder "
                  "this run was started in with `{} train --config {}`\n"
                  "- `metrics.jsonl`: one JSON object per line; `kind` is `train` (every "
                  "{} steps) or `eval` (every epoch)\n"
                  "- fedpar built from commit `{}` for {} with {}, run on {}\n"
                  "- `summary.json`: the final numbers and the machine's backend\n"
                  "- `model.safetensors`: the final parameters ({} floats)\n{}{}\n{}{}",
                  s.name, s.model.name, data.train.name,
                  tested ? fmt::format("test accuracy: {:.2f}% (loss {:.4f})",
                                       100.0 * last["test_accuracy"].get<double>(),
                                       last["test_loss"].get<double>())
                         : fmt::format("training accuracy: {:.2f}% (loss {:.4f})",
                                       100.0 * last["train_accuracy"].get<double>(),
                                       last["train_loss"].get<double>()),
                  diverged ? kept_epoch : s.train.epochs, seconds,
                  tested ? "" : "; no test set, so no test accuracy",
                  diverged ? fmt::format("- **diverged** at step {} (epoch {}): {}; the model "
                                         "kept is that of {}\n",
                                         diverged->step, diverged->epoch, diverged->what,
                                         kept_epoch > 0 ? fmt::format("epoch {}", kept_epoch)
                                                        : "its start, untrained")
                           : "",
                  this_executable(), (out.path() / "config.resolved.toml").string(), s.log_every,
                  source_commit(), build_vector_units(), blas_kernels(), machine_description(),
                  model.num_params(), started_from,
                  std::filesystem::exists(out.path() / "plots")
                      ? "- `plots/`: the loss and accuracy by epoch, training and test\n"
                      : "",
                  plots, settings_section(cfg, make_train_config())));
  const auto final_path = out.commit();
  progress.line(fmt::format("results: {}", final_path.string()));
  if (tested)
    fmt::print("test accuracy: {:.2f}%\n", 100.0 * last["test_accuracy"].get<double>());
  else
    fmt::print("test accuracy: n/a (no test set; train accuracy {:.2f}%)\n",
               100.0 * last["train_accuracy"].get<double>());
  if (diverged) {
    fmt::print(stderr, "fedpar: the training diverged at step {}\n", diverged->step);
    return kExitDiverged;
  }
  return 0;
}

}  // namespace

Action add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train",
                                 "centralized training (the baseline every distributed run "
                                 "is compared with)");
  auto args = std::make_shared<TrainArgs>();
  cmd->add_option("--config", args->config_path, "TOML config (see experiments/*.toml)")
      ->check(existing_config_file());
  cmd->add_option("--like", args->like,
                  "a finished distributed run's folder: train its centralized baseline (its "
                  "model, data, seed and optimizer, the batch of its steps, as many epochs as it "
                  "processed samples; named NAME-centralized)");
  add_flag_keys(cmd, train_flags(), args->flag_sets);
  add_flag_keys(cmd, data_flags(), args->flag_sets);
  cmd->add_option("--set", args->sets, "override any config key: --set optimizer.momentum=0.9");
  cmd->add_flag("--quiet", args->quiet, "no progress on stderr");
  cmd->add_flag("--no-plots", args->no_plots, kNoTrainPlotsHelp);
  return [args] { return run_train(*args); };
}

}  // namespace fedpar
