// RunContext; see run_context.h.
#include "server/run_context.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/hash.h"
#include "core/safetensors.h"
#include "core/trainer.h"

namespace fedpar {
Manifest partition_dataset(const TrainTest& data, const PartitionParams& p) {
  return partition({data.train.name, data.train.content_hash(), data.train.y, data.train.user,
                    data.train.num_classes},
                   p);
}

RunContext::RunContext(const Config& c, const RunSpec& setup)
    : cfg(c),
      s(setup),
      backend(make_backend("cpu", s.threads)),
      data(load_dataset(s.data)),
      manifest(partition_dataset(data, s.partition)),
      model(*backend, s.model, data.train.shape, data.train.num_classes),
      out(s.results_dir, s.name),
      metrics(out.path() / "metrics.jsonl") {
  model.init(s.seed);
  params = model.params_host();
  out.write_text("config.resolved.toml", cfg.to_toml());
  write_manifest(out.path() / "manifest.json", manifest);
  if (s.save_params_every > 0) std::filesystem::create_directories(out.path() / "params");
}

bool RunContext::end_round(int r, RoundRecord& rec, const Engine& engine, const std::string& what) {
  if (s.regime != Regime::kAsync) rec.lr = s.optimizer.lr.at(r);  // async: in updates.jsonl
  if (s.save_params_every > 0 && (r + 1) % s.save_params_every == 0)
    save_safetensors(
        out.path() / "params" / fmt::format("round-{:04d}.safetensors", r + 1), model.layout(),
        params, {{"format", "fedpar"}, {"model", s.model.name}, {"round", std::to_string(r + 1)}});
  if ((r + 1) % s.eval_every == 0 || r + 1 == s.rounds) evaluate_into(rec);
  metrics.write(to_json(rec));
  engine.log(fmt::format(
      "round {}/{}: {}, train loss {:.4f}{}", r + 1, s.rounds, what, rec.train_loss,
      rec.test_accuracy ? fmt::format(", test accuracy {:.2f}%", 100 * *rec.test_accuracy) : ""));
  if (s.stop_at_accuracy > 0 && rec.test_accuracy && *rec.test_accuracy >= s.stop_at_accuracy) {
    engine.log(
        fmt::format("test accuracy reached {:.2f}% after round {}; stopping (stop_at_accuracy)",
                    100 * s.stop_at_accuracy, r + 1));
    stopped_at_ = r + 1;
    return true;
  }
  return false;
}

void RunContext::evaluate_into(RoundRecord& rec) {
  model.set_params_host(params);
  const BatchStats st = evaluate(model, data.test);
  rec.test_loss = st.samples ? st.loss_sum / double(st.samples) : 0.0;
  rec.test_accuracy = st.samples ? double(st.correct) / double(st.samples) : 0.0;
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
  rec = RoundRecord{.round = params_round, .topology = rec.topology};
  if (s.regime != Regime::kAsync && params_round > 0) rec.lr = s.optimizer.lr.at(params_round - 1);
  evaluate_into(rec);
}

int RunContext::finish(const Engine& engine) {
  save_safetensors(out.path() / "model.safetensors", model.layout(), params,
                   {{"format", "fedpar"}, {"model", s.model.name}});
  const std::string hash = hash_hex(hash_bytes(params.data(), params.size() * sizeof(float)));
  const RunSummary summary{
      .model_hash = hash,
      .rounds_run = diverged_at_  ? diverged_at_ - 1
                    : stopped_at_ ? stopped_at_
                                  : s.rounds,
      .stopped_at_accuracy = stopped_at_ > 0,
      .diverged_at_round = diverged_at_ ? std::optional<int64_t>(diverged_at_) : std::nullopt,
      .diverged = diverged_at_ ? std::optional(diverged_) : std::nullopt,
      .clients = engine.num_clients,
      .processes = s.processes,
      .hosts = engine.host_records(),
      .final = last_eval_};
  out.write_json("summary.json", to_json(summary));
  const auto path = out.commit();
  engine.log(fmt::format("results: {}", path.string()));
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
