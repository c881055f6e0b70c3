// replay_async_run; see async_replay.h.
#include "server/async_replay.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/check.h"
#include "core/codec/codec.h"
#include "core/codec/error_feedback.h"
#include "core/hash.h"
#include "core/init_from.h"
#include "core/local_update.h"
#include "core/optimizer.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "server/run_context.h"

namespace fedpar {

ReplayResult replay_async_run(const std::filesystem::path& results) {
  for (const char* f : {"config.resolved.toml", "updates.jsonl", "summary.json"})
    if (!std::filesystem::exists(results / f))
      throw Error(fmt::format("{} has no {}: replay needs a finished run of regime \"async\"",
                              results.string(), f));
  std::ifstream config(results / "config.resolved.toml");
  const RunSpec s = run_spec_from_toml(std::string(std::istreambuf_iterator<char>(config), {}),
                                       "config.resolved.toml");
  if (s.regime != Regime::kAsync)
    throw Error(fmt::format("{} is not an async run", results.string()));
  std::vector<nlohmann::json> log;
  std::vector<size_t> line_of;  // each entry's line in the file (blank lines are skipped)
  {
    std::ifstream in(results / "updates.jsonl");
    size_t n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      log.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
      if (log.back().is_discarded())
        throw Error(fmt::format("updates.jsonl line {}: not JSON (cut off, or edited?)", n));
      line_of.push_back(n);
    }
  }
  // A client whose task was sent again may have computed the first one too (its UPDATE lost, or
  // late): a stateful uplink's state moved with it, which the log cannot show.
  if (s.compression.uplink != "none" &&
      (s.compression.error_feedback || s.compression.uplink == "powersgd"))
    for (const RoundRecord& r : read_round_records(results))
      if (r.tasks_resent && !r.tasks_resent->empty())
        throw Error(fmt::format(
            "round {} sent client {}'s task again (a message lost, or an answer late): what the "
            "client computed for the first moved its {}, which updates.jsonl cannot show, so the "
            "run cannot be replayed (it can where no task was sent again)",
            r.round, r.tasks_resent->front(),
            s.compression.error_feedback ? "error-feedback residual" : "PowerSGD warm start"));
  ReplayResult out;
  const RunSummary summary = read_run_summary(results);
  out.run_hash = summary.model_hash;
  out.run_applied = uint64_t(summary.rounds_run) * uint64_t(s.partition.clients);
  out.diverged = summary.diverged_at_round.has_value();
  size_t i = 0;  // the entry being replayed, for a field missing or of another type
  try {
    auto be = make_backend("cpu", s.threads);  // as the run's clients computed (device cpu)
    be->set_precision(s.optimizer.precision);
    const TrainTest data = load_dataset(s.data);
    const Manifest manifest = partition_dataset(data.train, data.train.content_hash(), s.partition);
    Model model(*be, s.model, data.train.shape, data.train.num_classes);
    init_model(model, s.model, s.seed);
    std::vector<float> params = model.params_host();
    BatchBuffer buffer(*be, data.train.dim());
    HostSgd sgd(s.optimizer.sgd);  // as the server applied them

    // The links' codecs, as the run's server and clients held them. An uplink encoding may change
    // its client's state (the error-feedback residual, PowerSGD's warm start), so with an uplink
    // codec the refused updates are recomputed and encoded too.
    const CodecParams codec_params = with_layout(s.compression.params, model.layout());
    const auto downlink = make_codec(s.compression.downlink, codec_params);  // async: no delta
    const auto uplink = make_codec(s.compression.uplink, codec_params);
    std::optional<ErrorFeedback> feedback;
    if (uplink && s.compression.error_feedback) feedback.emplace(*uplink);
    const auto computed = [&](const nlohmann::json& e) {
      return uplink != nullptr || e.at("applied").get<bool>();
    };

    // Keep each model version only until the last update computed on it.
    std::map<uint64_t, size_t> last_use;
    for (i = 0; i < log.size(); ++i)
      if (computed(log[i])) last_use[log[i].at("computed_on").get<uint64_t>()] = i;
    std::map<uint64_t, std::vector<float>> versions;
    uint64_t version = 0;
    if (last_use.count(0)) versions[0] = params;
    const Task base{
        .kind = LocalWork::kGradient, .batch = s.sgd_batch, .accumulate = s.optimizer.accumulate};
    std::vector<float> sent(params.size()), received(params.size());
    std::vector<uint8_t> bytes;
    for (i = 0; i < log.size(); ++i) {
      const auto& e = log[i];
      ++out.updates;
      if (!computed(e)) continue;
      const uint32_t c = e.at("client").get<uint32_t>();
      const uint64_t v = e.at("computed_on").get<uint64_t>();
      if (c >= manifest.clients.size() || !versions.count(v))
        throw Error(fmt::format(
            "updates.jsonl line {}: client {} on version {} does not follow from the lines before",
            line_of[i], c, v));
      // The TASK's model as the client decoded it, and the UPDATE as the server decoded it: both
      // messages carry version v as their round.
      std::span<const float> model_seen = versions[v];
      if (downlink) {
        round_trip(*downlink, model_seen, {v, CodecContext::kDownlink}, bytes, sent);
        model_seen = sent;
      }
      Task task = base;
      task.round = e.at("draw").get<uint64_t>();
      LocalResult r = compute_update(model, data.train, manifest.clients[c].indices, model_seen,
                                     task, s.seed, c, &buffer);
      std::span<const float> update = r.values;
      if (uplink) {
        const CodecContext ctx{v, c};
        if (feedback)
          feedback->encode(c, r.values, ctx, s.optimizer.lr.at(int64_t(v)), bytes);
        else
          uplink->encode(r.values, ctx, bytes);
        if (const std::string why = uplink->decode(bytes, ctx, received); !why.empty())
          throw Error(fmt::format("updates.jsonl line {}: the {} encoding does not decode: {}",
                                  line_of[i], uplink->name(), why));
        update = received;
      }
      if (e.at("applied").get<bool>()) {
        sgd.step(params, update, e.at("lr").get<float>());
        ++version, ++out.applied;
        if (e.at("version_after").get<uint64_t>() != version)
          throw Error(fmt::format("updates.jsonl line {}: version {} after it, the replay is at {}",
                                  line_of[i], e.at("version_after").get<uint64_t>(), version));
        if (last_use.count(version)) versions[version] = params;
      }
      if (last_use[v] == i) versions.erase(v);
    }
    out.hash = hash_hex(hash_bytes(params.data(), params.size() * sizeof(float)));
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        fmt::format("updates.jsonl line {}: {}", i < log.size() ? line_of[i] : 0, e.what()));
  }
  return out;
}

}  // namespace fedpar
