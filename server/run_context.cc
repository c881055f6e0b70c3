// RunContext; see run_context.h.
#include "server/run_context.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>

#include "core/build_info.h"
#include "core/checkpoint.h"
#include "core/client_spread.h"
#include "core/hash.h"
#include "core/init_from.h"
#include "core/json_integer.h"
#include "core/peak_memory.h"
#include "core/run_spec.h"
#include "core/safetensors.h"
#include "core/trainer.h"
#include "partitioners/plot_svg.h"
#include "server/client_evaluation.h"
#include "server/plan.h"
#include "server/run_readme.h"

namespace fedpar {
Manifest partition_dataset(const Dataset& train, const std::string& train_hash,
                           const PartitionParams& p) {
  Manifest m = partition({train.name, train_hash, train.y, train.user, train.num_classes}, p);
  for (const ClientShard& c : m.clients)  // its process would have nothing to train on
    if (c.indices.empty())
      throw Error(fmt::format("partition: scheme '{}' gives client {} no samples: {}", m.scheme,
                              c.id, empty_client_advice(p, /*flags=*/false)));
  return m;
}

namespace {

// eval_clients' part of a round's line: how the clients' own accuracies spread.
std::string clients_line(const std::vector<double>& accuracy, bool held_out) {
  const Spread sp = spread_of(accuracy);
  return fmt::format(
      ", clients' {}accuracy mean {:.2f}%, worst 10% {:.2f}%, lowest {:.2f}% (client {})",
      held_out ? "held-out " : "", 100 * sp.mean, 100 * sp.worst10, 100 * sp.min, sp.min_at);
}

// The server partitions and evaluates but never trains: it keeps the training set's labels alone,
// unless eval_train or eval_clients scores its model on the training set.
TrainTest load_server_data(const RunSpec& s, std::string& train_hash) {
  if (!s.eval_train && !s.eval_clients) return load_without_training_features(s.data, train_hash);
  TrainTest tt = load_dataset(s.data);
  train_hash = tt.train.content_hash();
  return tt;
}

}  // namespace

RunContext::RunContext(const Config& c, const RunSpec& setup, bool resuming)
    : cfg(c),
      s(setup),
      backend(make_backend("cpu", s.threads)),
      data(load_server_data(s, train_hash)),
      manifest(partition_dataset(data.train, train_hash, s.partition)),
      model(*backend, s.model, data.train.shape, data.train.num_classes),
      out(s.results_dir, s.name),
      metrics(out.path() / "metrics.jsonl") {
  if (resuming)
    model.init(s.seed);  // the checkpoint's parameters replace these
  else
    init_model(model, s.model, s.seed);
  params = model.params_host();
  if (!s.model.init_from.empty() && !resuming)
    init_hash_ = hash_hex(hash_bytes(params.data(), params.size() * sizeof(float)));
  out.write_text("config.resolved.toml", cfg.to_toml());
  write_manifest(out.path() / "manifest.json", manifest);
  out.write_text("partition.svg",  // the split at a glance, as `fedpar partition --out` draws it
                 partition_svg(manifest, fmt::format("{}: {} over {} clients", data.train.name,
                                                     manifest.scheme, manifest.clients.size())));
  if (s.save_params_every > 0) std::filesystem::create_directories(out.path() / "params");
  if (s.eval_clients) client_scorer_.emplace(data.train, manifest, s.partition);
  if (s.eval_train && manifest.held_out() > 0) {
    std::vector<bool> held(data.train.size(), false);
    for (const ClientShard& c : manifest.clients)
      for (uint32_t i : c.held_out) held[i] = true;
    for (uint32_t i = 0; i < uint32_t(data.train.size()); ++i)
      if (!held[i]) not_held_out_.push_back(i);
  }
}

bool RunContext::end_round(int r, RoundRecord& rec, const Engine& engine, const std::string& what) {
  if (s.regime != Regime::kAsync) rec.lr = s.optimizer.lr.at(r);  // async: in updates.jsonl
  if (s.save_params_every > 0 && (r + 1) % s.save_params_every == 0)
    save_safetensors(
        out.path() / "params" / fmt::format("round-{:04d}.safetensors", r + 1), model.layout(),
        params, {{"format", "fedpar"}, {"model", s.model.name}, {"round", std::to_string(r + 1)}});
  if ((r + 1) % s.eval_every == 0 || r + 1 == s.rounds) evaluate_into(rec);
  metrics.write(to_json(rec));
  ++rounds_recorded_;
  last_round_ = rec;
  const bool trained = !(rec.received && *rec.received == 0);  // no update: no training loss
  std::string network;                                         // what [network] did to the round
  if (rec.unavailable && !rec.unavailable->empty())
    network += fmt::format(", {} unavailable", rec.unavailable->size());
  if (rec.simulated_lost && !rec.simulated_lost->empty())
    network += fmt::format(", {} lost", rec.simulated_lost->size());
  // three digits: 0.0126, 1.31, 16.3, then whole seconds (1000, not 1e+03)
  const auto secs = [](double x) {
    return x >= 100 ? fmt::format("{:.0f}", x) : fmt::format("{:.3g}", x);
  };
  if (rec.simulated_seconds)
    network += fmt::format(", {} s simulated", secs(*rec.simulated_seconds));
  if (rec.emulated_seconds) network += fmt::format(", {} s emulated", secs(*rec.emulated_seconds));
  // a long run's lines thinned to one in log_every; what a reader looks for always prints
  const bool evaluated = rec.test_accuracy || rec.global_train_loss || rec.client_accuracy;
  if (evaluated || r == 0 || r + 1 == s.rounds || (r + 1) % s.log_every == 0)
    engine.log(fmt::format(
        "round {}/{}: {}{}{}{}{}{}", r + 1, s.rounds, what, network,
        trained && rec.train_loss
            ? fmt::format(", {} {:.4f}", s.regime == Regime::kModel ? "local loss" : "train loss",
                          *rec.train_loss)
            : "",
        rec.global_train_loss ? fmt::format(", global train loss {:.4f}", *rec.global_train_loss)
                              : "",
        rec.test_accuracy ? fmt::format(", test accuracy {:.2f}%", 100 * *rec.test_accuracy) : "",
        rec.client_accuracy ? clients_line(*rec.client_accuracy, s.partition.holdout > 0) : ""));
  if (s.stop_at_accuracy > 0 && rec.test_accuracy && *rec.test_accuracy >= s.stop_at_accuracy) {
    engine.log(
        fmt::format("test accuracy {:.2f}% after round {} reached stop_at_accuracy = {:.2f}%; "
                    "stopping",
                    100 * *rec.test_accuracy, r + 1, 100 * s.stop_at_accuracy));
    stopped_at_ = r + 1;
    return true;
  }
  return false;
}

void RunContext::evaluate_into(RoundRecord& rec) {
  // no test set: no evaluation (not 0%)
  if (data.test.size() == 0 && !s.eval_train && !s.eval_clients) return;
  model.set_params_host(params);
  if (data.test.size() > 0) {
    const BatchStats st = evaluate(model, data.test);
    rec.test_loss = st.loss_sum / double(st.samples);
    rec.test_accuracy = double(st.correct) / double(st.samples);
  }
  if (s.eval_train) {  // held-out samples are not training data
    const BatchStats tr = not_held_out_.empty() ? evaluate(model, data.train)
                                                : evaluate(model, data.train, not_held_out_);
    rec.global_train_loss = tr.loss_sum / double(std::max<int64_t>(1, tr.samples));
    rec.global_train_accuracy = double(tr.correct) / double(std::max<int64_t>(1, tr.samples));
  }
  if (s.eval_clients) {
    rec.client_accuracy.emplace(), rec.client_loss.emplace();
    for (const BatchStats& c : client_scorer_->score(model)) {
      rec.client_accuracy->push_back(double(c.correct) / double(c.samples));
      rec.client_loss->push_back(c.loss_sum / double(c.samples));
    }
  }
  last_eval_ = rec;
}

void RunContext::end_diverged(int r, RoundRecord& rec, const Engine& engine,
                              const std::string& why) {
  diverged_at_ = r + 1;
  diverged_ = why;
  engine.log(
      fmt::format("the training diverged: {}; the run ends here with the model of round {} "
                  "(lower optimizer.lr, or add warm-up)",
                  why, params_round));
  // the record of the round whose model is kept (its bytes, its loss), evaluated now
  if (last_round_ && last_round_->round == params_round) {
    rec = *last_round_;
  } else {
    rec = RoundRecord{.round = params_round, .topology = rec.topology};
    if (s.regime != Regime::kAsync && params_round > 0)
      rec.lr = s.optimizer.lr.at(params_round - 1);
  }
  evaluate_into(rec);
}

namespace {

// Folders that only a run kept for resuming: a killed run's hidden partial folder, or a failed
// one's <name>.incomplete.
bool kept_for_resume(const std::filesystem::path& dir) {
  const std::string n = dir.filename().string();
  return (n.starts_with(".") && n.find(".partial-") != std::string::npos) ||
         n.find(".incomplete") != std::string::npos;
}

// A resume with another `rounds` (more, to extend a finished run) is the run of that many rounds
// only if the rounds already run had the rates they would have had in it: a schedule that spans
// the run (cosine) would have given them others.
void check_rounds_change(const RunSpec& before, const RunSpec& now, int done,
                         const std::filesystem::path& file) {
  for (int r = 0; r < done; ++r)
    if (before.optimizer.lr.at(r) != now.optimizer.lr.at(r))
      throw Error(fmt::format(
          "{}: rounds = {} there, {} here would change the learning rate of round {}, which "
          "has run ({:.6g} there, {:.6g} here: optimizer.schedule = \"{}\" depends on the "
          "rounds), so the resumed run would not be a run of {} rounds{}",
          file.string(), before.rounds, now.rounds, r + 1, before.optimizer.lr.at(r),
          now.optimizer.lr.at(r), now.optimizer.lr.kind, now.rounds,
          std::filesystem::exists(file.parent_path() / "model.safetensors")
              ? fmt::format("; start a new run from its model instead (--set model.init_from={})",
                            file.parent_path().string())
              : ""));
}

}  // namespace

void RunContext::checkpoint(int r, const Plan& plan, const Engine& engine) {
  Checkpoint c;
  plan.save_state(c);
  c.f32["params"] = params;
  const auto [sent, received] = engine.total_bytes();
  c.meta["round"] = r + 1;
  c.meta["params_round"] = params_round;
  c.meta["config"] = cfg.to_toml();
  c.meta["bytes_sent_total"] = sent;
  c.meta["bytes_received_total"] = received;
  c.meta["last_eval"] = last_eval_ ? to_json(*last_eval_) : nlohmann::ordered_json();
  if (init_hash_) c.meta["init_hash"] = *init_hash_;  // a resumed run need not read the file
  nlohmann::json dropped = nlohmann::json::array();
  for (const auto& id : engine.order)
    if (engine.lost.count(id)) dropped.push_back(engine.peers.at(id).clients);
  c.meta["dropped"] = dropped;
  nlohmann::json missed = nlohmann::json::array();
  for (const auto& id : engine.order)
    if (const auto it = engine.missed.find(id); it != engine.missed.end())
      missed.push_back({engine.peers.at(id).clients, it->second});
  c.meta["missed"] = missed;
  // the builds that ran this run's rounds so far (unknown past a checkpoint that did not say)
  if (resumed_from_.empty() || earlier_commits_) {
    std::vector<std::string> commits = earlier_commits_.value_or(std::vector<std::string>{});
    if (!source_commit().empty() &&
        std::find(commits.begin(), commits.end(), source_commit()) == commits.end())
      commits.push_back(source_commit());
    c.meta["commits"] = commits;
  }
  write_checkpoint(out.path() / "checkpoint.bin", c);
  checkpoint_round_ = r + 1;
  engine.log(fmt::format("round {}: checkpoint written", r + 1));
}

// A checkpoint whose bytes pass the CRC but whose entries have the wrong types (written by hand,
// or by a fedpar that wrote them differently) is an Error naming the file, not an internal one.
RunContext::Resumed RunContext::resume(const std::filesystem::path& dir, Plan& plan) {
  try {
    return resume_from(dir, plan);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{} is not a usable checkpoint: {}", (dir / "checkpoint.bin").string(),
                            e.what()));
  } catch (const std::logic_error& e) {  // a number that does not parse, an index out of range
    throw Error(fmt::format("{} is not a usable checkpoint: {}", (dir / "checkpoint.bin").string(),
                            e.what()));
  }
}

RunContext::Resumed RunContext::resume_from(const std::filesystem::path& dir, Plan& plan) {
  // a run still writing the folder (hung, or on another host), or another --resume of it: going
  // on from it would remove the folder under that run
  resumed_lock_ = FolderLock::try_lock(dir, /*tidy=*/true);  // a finished run keeps no .lock
  if (!resumed_lock_ && FolderLock::held(dir).value_or(false))
    throw Error(fmt::format(
        "{} is in use by another fedpar process (the run that writes it, or another --resume of "
        "it): wait for that one to end, or stop it, then resume",
        dir.string()));
  const auto file = dir / "checkpoint.bin";
  if (!std::filesystem::exists(file))
    throw Error(
        fmt::format("{} holds no checkpoint.bin, so there is nothing to resume from (a run "
                    "writes one every checkpoint_every rounds; one stopped before its first "
                    "keeps its metrics as a record only): run it again",
                    dir.string()));
  const Checkpoint c = read_checkpoint(file);
  const auto meta = [&](const char* key) {
    if (!c.meta.contains(key)) throw Error(fmt::format("{} lacks '{}'", file.string(), key));
    return c.meta[key];
  };
  Config before = make_run_config();
  before.merge_toml(meta("config").get<std::string>(), file.string());
  const RunSpec earlier = [&] {
    try {
      return resolve_run_spec(before);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: its config: {}", file.string(), e.what()));
    }
  }();
  // A finished run (summary.json is written when a run ends) goes on only with more rounds.
  if (std::filesystem::exists(dir / "summary.json")) {
    const RunSummary done = read_run_summary(dir);
    if (done.diverged_at_round)
      throw Error(fmt::format("{} holds a run that diverged at round {}: nothing is left to resume",
                              dir.string(), *done.diverged_at_round));
    if (done.stopped_at_accuracy)
      throw Error(fmt::format(
          "{} holds a run that stopped at stop_at_accuracy after round {}: a resumed run keeps "
          "its config, stop_at_accuracy too, and would stop there again; to train its model on, "
          "start a new run from it with stop_at_accuracy raised or 0: --set model.init_from={}",
          dir.string(), done.rounds_run, dir.string()));
    if (s.rounds <= earlier.rounds)
      throw Error(fmt::format(
          "{} holds a run that finished (its summary.json says how): nothing is left to "
          "resume; to give it more rounds, resume it with --set rounds=N above its {}",
          dir.string(), earlier.rounds));
  }
  std::vector<std::string> differ;
  for (const auto& key : cfg.keys()) {
    if (operational_key(key) || key == "rounds" || before.value_text(key) == cfg.value_text(key))
      continue;
    const std::string change =
        fmt::format("{} = {} there, {} here", key, before.value_text(key), cfg.value_text(key));
    (observation_key(key, earlier) ? resumed_changes_ : differ).push_back(change);
  }
  // a ring's worker sums its own clients' gradients before the ring: another grouping rounds
  // apart, so the resumed run would not end with the uninterrupted run's bytes
  if (s.topology == Topology::kAllReduce &&
      before.value_text("processes") != cfg.value_text("processes"))
    differ.push_back(fmt::format(
        "processes = {} there, {} here: a ring's workers each sum their own clients' gradients "
        "first, so another number of processes gives other bits",
        before.value_text("processes"), cfg.value_text("processes")));
  if (!differ.empty())
    throw Error(
        fmt::format("{} was made by another run ({}): resume with the config the run "
                    "started with, its folder's: fedpar run {}/config.resolved.toml --resume {}",
                    file.string(), fmt::join(differ, "; "), dir.string(), dir.string()));
  const int round = json_integer<int>(meta("round"), file.string() + " (round)");
  const std::vector<float>& saved = c.floats("params");
  if (saved.size() != params.size() || round < 1)
    throw Error(fmt::format("{} does not fit this run ({} parameters of round {})", file.string(),
                            saved.size(), round));
  if (round > s.rounds)
    throw Error(fmt::format("{} is of round {}, past this run's rounds = {}", file.string(), round,
                            s.rounds));
  check_rounds_change(earlier, s, round, file);
  params = saved;
  params_round = json_integer<int>(meta("params_round"), file.string() + " (params_round)");
  if (!meta("last_eval").is_null())
    last_eval_ = round_from_json(meta("last_eval"), file.string() + " (last_eval)");
  plan.load_state(c);
  std::ifstream in(dir / "metrics.jsonl");
  std::string line;
  for (int r = 0; r < round; ++r) {
    if (!std::getline(in, line))
      throw Error(fmt::format("{} has fewer than the checkpoint's {} rounds",
                              (dir / "metrics.jsonl").string(), round));
    metrics.write_line(line);
    ++rounds_recorded_;
    if (r + 1 == round)  // a divergence in the first round resumed keeps this one's record
      last_round_ = round_from_json(nlohmann::json::parse(line), (dir / "metrics.jsonl").string());
  }
  // the snapshots of the rounds already run, whatever cadence this run saves at (it may change)
  for (int r = 1; r <= round; ++r) {
    const auto name = std::filesystem::path("params") / fmt::format("round-{:04d}.safetensors", r);
    if (!std::filesystem::exists(dir / name)) continue;
    std::filesystem::create_directories(out.path() / "params");
    std::filesystem::copy_file(dir / name, out.path() / name);
  }
  std::filesystem::copy_file(file, out.path() / "checkpoint.bin");  // kept if this run fails too
  resumed_from_ = dir;
  resumed_after_ = round;
  if (c.meta.contains("init_hash")) init_hash_ = c.meta["init_hash"].get<std::string>();
  if (c.meta.contains("commits"))  // older checkpoints do not say
    earlier_commits_ = c.meta["commits"].get<std::vector<std::string>>();
  checkpoint_round_ = round;
  const std::string where = file.string() + " (meta)";
  Resumed out{round,
              {json_integer<uint64_t>(meta("bytes_sent_total"), where),
               json_integer<uint64_t>(meta("bytes_received_total"), where)}};
  // older checkpoints have neither
  for (const auto& d : c.meta.value("dropped", nlohmann::json::array()))
    out.dropped.push_back(json_integers<uint32_t>(d, where + ": dropped"));
  for (const auto& m : c.meta.value("missed", nlohmann::json::array()))
    out.missed.emplace_back(json_integers<uint32_t>(m.at(0), where + ": missed"),
                            json_integer<int>(m.at(1), where + ": missed"));
  return out;
}

std::filesystem::path RunContext::keep_incomplete(const std::string& why,
                                                  const std::string& resume_with,
                                                  const std::string& uncheckpointable) {
  if (checkpoint_round_ == 0 && rounds_recorded_ == 0) return {};
  // A resumed run that fails again holds every round its old folder held (and a checkpoint):
  // that one goes first, so this one takes its name rather than <name>.incomplete-2 beside it.
  remove_superseded();
  const auto dir = out.commit(".incomplete");
  std::string md = fmt::format(
      "# {} (incomplete)\n\nThis run stopped after {} of its {} rounds: {}\n\n"
      "- `metrics.jsonl`: its rounds, one line each (docs/metrics.md); `fedpar compare` draws "
      "them when given this folder\n"
      "- `config.resolved.toml`: every setting it ran with; `manifest.json`: its partition\n",
      s.name, rounds_recorded_, s.rounds, why);
  if (checkpoint_round_ > 0)
    md +=
        fmt::format("- `checkpoint.bin`: the model and state after round {}: continue with `{}`\n",
                    checkpoint_round_, fmt::format(fmt::runtime(resume_with), dir.string()));
  else if (s.checkpoint_every > 0)
    md += fmt::format(
        "- no checkpoint yet (the first was due after round {}), so it cannot be continued: run "
        "it again\n",
        s.checkpoint_every);
  else if (!uncheckpointable.empty())
    md += fmt::format(
        "- no checkpoint, so it cannot be continued: run it again (this run cannot be "
        "checkpointed: {})\n",
        uncheckpointable);
  else
    md +=
        "- no checkpoint (`checkpoint_every = 0`), so it cannot be continued: run it again; "
        "with `checkpoint_every = N` a stopped run keeps a checkpoint every N rounds and "
        "`--resume` continues it\n";
  std::ofstream(dir / "README.md") << md;
  return dir;
}

std::string RunContext::remove_superseded() {
  if (resumed_from_.empty() || !kept_for_resume(resumed_from_)) return "";
  std::error_code ec;
  std::filesystem::remove_all(resumed_from_, ec);
  return ec ? ""
            : fmt::format("removed {}: the resumed run holds its rounds", resumed_from_.string());
}

int RunContext::finish(const Engine& engine,
                       const std::function<std::string(const std::filesystem::path&,
                                                       const std::string&)>& draw_plots) {
  save_safetensors(out.path() / "model.safetensors", model.layout(), params,
                   {{"format", "fedpar"},
                    {"model", s.model.name},
                    {"dataset", data.train.name},
                    {"seed", std::to_string(s.seed)}});
  const std::string hash = hash_hex(hash_bytes(params.data(), params.size() * sizeof(float)));
  const std::vector<HostRecord> replaced = engine.replaced_records();
  const RunSummary summary{
      .model_hash = hash,
      .parameters = params.size(),
      .train_samples = data.train.size(),
      .test_samples = data.test.size(),
      .dataset = data.train.name,
      .data_from = mnist_folder(s.data),
      .rounds_run = diverged_at_  ? diverged_at_ - 1
                    : stopped_at_ ? stopped_at_
                                  : s.rounds,
      .stopped_at_accuracy = stopped_at_ > 0,
      .diverged_at_round = diverged_at_ ? std::optional<int64_t>(diverged_at_) : std::nullopt,
      .diverged = diverged_at_ ? std::optional(diverged_) : std::nullopt,
      .clients = engine.num_clients,
      .processes = s.processes,
      .hosts = engine.host_records(),
      .replaced = replaced.empty() ? std::nullopt : std::optional(replaced),
      .final = last_eval_,
      .server_peak_rss_mib = double(peak_rss_bytes()) / (1 << 20),
      .source_commit = source_commit().empty() ? std::nullopt : std::optional(source_commit()),
      .build_vector_units = build_vector_units(),
      .blas_kernels = blas_kernels(),
      .machine = machine_description(),
      .load_average = load_average(),
      .rounds_seconds = rounds_seconds,
      .resumed_after_round = resumed_after_ ? std::optional<int64_t>(resumed_after_) : std::nullopt,
      .earlier_commits = earlier_commits_,
      .resumed_with_changes =
          resumed_changes_.empty() ? std::nullopt : std::optional(resumed_changes_),
      .init_hash = init_hash_,
      .client_holdout = s.eval_clients && s.partition.holdout > 0
                            ? std::optional(s.partition.holdout)
                            : std::nullopt,
      .warnings = warnings.empty() ? std::nullopt : std::optional(warnings)};
  out.write_json("summary.json", to_json(summary));
  // A plot that cannot be drawn costs the run nothing: the README says why there is none.
  std::string plots =
      "(no plots drawn: `--no-plots`, or one of a suite's or the equivalence experiment's runs, "
      "whose report draws them together)\n\n";
  if (draw_plots) try {
      plots = draw_plots(out.path(), s.name);
    } catch (const std::exception& e) {
      plots = fmt::format("(no plots: {})\n\n", e.what());
    }
  out.write_text("README.md", run_readme(cfg, s, summary, out.path(), plots));
  const auto path = out.commit();
  engine.log(fmt::format("results: {}", path.string()));
  if (const std::string removed = remove_superseded(); !removed.empty()) engine.log(removed);
  fmt::print("final model hash: {}\n", hash);
  if (last_eval_ && last_eval_->test_accuracy)
    fmt::print("test accuracy: {:.2f}%\n", 100 * *last_eval_->test_accuracy);
  if (diverged_at_) {
    fmt::print(stderr, "fedpar: the training diverged: {}\n", diverged_);
    return kExitDiverged;
  }
  return 0;
}

}  // namespace fedpar
