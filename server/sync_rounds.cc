// The synchronous regimes' round loop; see rounds.h.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/check.h"
#include "core/rng.h"
#include "server/diagnostics.h"
#include "server/rounds.h"
#include "server/strategy.h"

namespace fedpar {
namespace {

// This round's participants, sorted: a fraction of the clients drawn from (seed, "sample", round).
std::vector<uint32_t> sample_participants(const RunSetup& s, size_t num_clients, uint64_t round) {
  std::vector<uint32_t> ids(num_clients);
  std::iota(ids.begin(), ids.end(), 0u);
  const size_t k = std::max<size_t>(1, size_t(std::lround(s.fraction * double(num_clients))));
  if (k < ids.size()) {
    Rng(s.seed, "sample", 0, uint32_t(round)).choose(std::span(ids), k);
    ids.resize(k);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

void run_sync_rounds(Coordinator& co, RunContext& run) {
  const RunSetup& s = run.s;
  std::unique_ptr<Strategy> strategy =
      s.regime == Regime::kGradient
          ? make_gradient_averaging(s.weighting, LrSchedule{.base_lr = s.sgd_lr}, {.momentum = s.sgd_momentum})
          : make_model_averaging(s.weighting, s.server_lr);
  const bool drift = s.drift && s.regime == Regime::kModel;
  const std::vector<size_t> expect(drift ? 2 : 1, run.params.size());  // the update [, its linear part]
  for (int r = 0; r < s.rounds; ++r) {
    co.round = uint64_t(r);
    const auto t0 = Clock::now();
    const auto bytes_before = co.bytes_snapshot();
    const auto participants = sample_participants(s, co.num_clients, co.round);
    std::map<std::string, std::vector<uint32_t>> per_peer;
    size_t expected = 0;  // updates we wait for: those of processes still in the run
    for (uint32_t c : participants)
      if (!co.lost.count(co.owner[c])) per_peer[co.owner[c]].push_back(c), ++expected;
    // One TASK for every process: it lists all participants and each process serves those it
    // hosts, so the message is encoded (and its CRC computed) once, and its model frame is one
    // snapshot that ZeroMQ sends to every process without further copies.
    const nlohmann::json body = {
        {"kind", s.regime == Regime::kGradient ? "gradient" : "local"},
        {"batch", s.regime == Regime::kGradient ? s.sgd_batch : s.local_batch},
        {"steps", s.local_steps}, {"epochs", s.local_epochs}, {"lr", s.local_lr},
        {"momentum", s.local_momentum}, {"drift", drift}, {"clients", participants}};
    const auto snapshot = std::make_shared<const std::vector<float>>(run.params);
    const std::vector<std::span<const float>> vecs = {*snapshot};
    const WireMessage task = encode_message(MessageType::kTask, 0, co.run_id, co.round, body, vecs, snapshot);
    const auto t_send = Clock::now();
    for (const auto& [id, ids] : per_peer) co.send(id, task);
    const double broadcast_seconds = std::chrono::duration<double>(Clock::now() - t_send).count();
    // Collect one UPDATE per participant; reduce later in client-id order. The updates stay in
    // their received frames (moving a Received keeps its frames' memory in place).
    struct Arrived {
      Received msg;
      ParsedMessage parsed;
      uint64_t num_samples;
    };
    std::map<uint32_t, Arrived> got;
    nlohmann::json per_client = nlohmann::json::array();  // accounting, in arrival order
    double loss_sum = 0, loss_samples = 0;
    const auto deadline = deadline_after(s.wait_seconds);
    while (got.size() < expected) {
      auto msg = co.receive(deadline);
      if (!msg) break;
      auto parsed = parse_message(msg->spans(), expect, /*require_finite=*/true);
      if (auto* e = std::get_if<ProtocolError>(&parsed)) {
        co.reject(*msg, e->reason);
        continue;
      }
      ParsedMessage& m = std::get<ParsedMessage>(parsed);
      const uint32_t c = m.header.client;
      auto n = field<uint64_t>(m.body, "num_samples");
      auto l = field<double>(m.body, "loss_sum");
      std::string why;
      if (co.lost.count(msg->identity)) why = "this process missed a round deadline and was dropped from the run";
      else if (m.header.type != MessageType::kUpdate) why = fmt::format("expected UPDATE, got {}", message_type_name(m.header.type));
      else if (m.header.round != co.round) why = fmt::format("update for round {} during round {}", m.header.round, co.round);
      else if (!co.hosts(msg->identity, c)) why = fmt::format("client {} is not hosted by this process", c);
      else if (!std::binary_search(participants.begin(), participants.end(), c)) why = fmt::format("client {} was not asked this round", c);
      else if (got.count(c)) why = fmt::format("a second update from client {}", c);
      else if (std::holds_alternative<ProtocolError>(n) || std::holds_alternative<ProtocolError>(l)) why = "UPDATE without num_samples / loss_sum";
      if (!why.empty()) {
        co.reject(*msg, why);
        continue;
      }
      const int proc = co.process_index(msg->identity);
      per_client.push_back({{"client", c},
                            {"process", proc},
                            {"bytes_up", msg->bytes()},
                            {"compute_seconds", m.body.value("compute_seconds", 0.0)},
                            {"samples_processed", m.body.value("samples_processed", int64_t{0})},
                            {"parameter_bytes", m.body.value("parameter_bytes", uint64_t{0})},
                            {"activation_bytes", m.body.value("activation_bytes", uint64_t{0})},
                            {"loss", std::get<double>(l) / std::max<double>(1.0, double(std::get<uint64_t>(n)))}});
      loss_sum += std::get<double>(l);
      loss_samples += double(std::get<uint64_t>(n));
      got.emplace(c, Arrived{std::move(*msg), std::move(m), std::get<uint64_t>(n)});
    }
    const auto t_wait = Clock::now();
    std::vector<uint32_t> missing;
    for (uint32_t c : participants) if (!got.count(c)) missing.push_back(c);
    if (!missing.empty()) {
      const std::string what = fmt::format("round {}: no update from client(s) {}{}", co.round + 1,
                                           fmt::join(missing, ", "),
                                           got.size() < expected ? fmt::format(" within {} s", s.wait_seconds) : "");
      if (got.empty() || (s.regime == Regime::kGradient && !s.continue_without_missing))
        throw Error(what + (s.regime == Regime::kGradient
                                ? " (gradient regime stops; set continue_without_missing = true to go on)"
                                : ""));
      co.log(what + "; continuing with the rest");
      for (uint32_t c : missing) {
        if (co.lost.insert(co.owner[c]).second)
          co.log(fmt::format("a client process (virtual clients {}) missed the deadline; it gets no "
                          "more tasks in this run",
                          fmt::join(co.peers[co.owner[c]].clients, ", ")));
      }
    }
    std::vector<ClientUpdate> updates, linear;
    for (const auto& [c, a] : got) {
      updates.push_back({c, co.round, a.num_samples, a.parsed.vectors[0]});
      if (drift) linear.push_back({c, co.round, a.num_samples, a.parsed.vectors[1]});
    }
    strategy->apply(updates, run.params);
    const auto t_done = Clock::now();
    // Diagnostics are measurements, not part of the round: computed after its clock stops.
    const UpdateDiagnostics diag = diagnose_updates(updates);
    for (auto& pc : per_client)
      for (size_t k = 0; k < updates.size(); ++k)
        if (pc["client"] == updates[k].client) pc["update_norm"] = diag.norms[k];

    const auto [sent, received] = co.total_bytes();
    nlohmann::json rec = {{"kind", "round"}, {"round", r + 1},
                          {"topology", s.regime == Regime::kGradient ? "parameter-server" : "model-averaging"},
                          {"participants", participants.size()},
                          {"received", got.size()}, {"missing", missing},
                          {"train_loss", loss_samples > 0 ? loss_sum / loss_samples : 0.0},
                          {"bytes_sent_total", sent}, {"bytes_received_total", received},
                          {"bytes_down_per_task", run.params.size() * sizeof(float)},
                          {"clients", per_client}, {"processes", co.per_process_bytes(bytes_before, per_peer)},
                          {"mean_pairwise_cosine", diag.mean_pairwise_cosine},
                          {"gradient_diversity", diag.gradient_diversity},
                          {"broadcast_seconds", broadcast_seconds},
                          {"wait_seconds", std::chrono::duration<double>(t_wait - t0).count()},
                          {"aggregate_seconds", std::chrono::duration<double>(t_done - t_wait).count()}};
    if (drift) {
      rec["update_drift"] = update_drift(updates, linear, s.weighting);
      rec["diagnostic_bytes_up"] = linear.size() * run.params.size() * sizeof(float);
    }
    if (run.end_round(r, rec, co, fmt::format("{} updates", got.size()))) break;
  }
}

}  // namespace fedpar
