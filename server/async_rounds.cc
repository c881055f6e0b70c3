// The `async` regime: a parameter server without a barrier. Every virtual client always holds a
// task; each gradient is applied the moment it arrives, and its sender gets the newest model
// back. An update carries the model version it was computed on; its staleness is the number of
// updates applied since. updates.jsonl logs every arrival in order (client, version, batch draw,
// staleness, whether applied, the learning rate used): `fedpar replay` recomputes the run from it
// bit for bit. A "round" here is one update per client on average (num_clients updates applied).
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/check.h"
#include "core/optimizer.h"
#include "server/rounds.h"

namespace fedpar {

void run_async_rounds(Coordinator& co, RunContext& run) {
  const RunSetup& s = run.s;
  JsonlWriter log(run.out.path() / "updates.jsonl");
  Sgd sgd(*run.backend, run.params.size(), {.momentum = s.sgd_momentum});  // CPU: host pointers
  struct Outstanding {
    uint64_t version, draw;
  };
  std::map<uint32_t, Outstanding> outstanding;
  std::map<uint32_t, uint64_t> draws;  // tasks sent per client: names its next batch draw
  uint64_t version = 0;
  auto current = std::make_shared<const std::vector<float>>(run.params);
  auto dispatch = [&](uint32_t c) {
    const uint64_t draw = draws[c]++;
    const std::vector<std::span<const float>> vecs = {*current};
    co.send(co.owner[c], encode_message(MessageType::kTask, 0, co.run_id, version,
                                        {{"kind", "gradient"}, {"batch", s.sgd_batch}, {"steps", 1}, {"epochs", 0},
                                         {"lr", s.sgd_lr}, {"momentum", 0.0}, {"drift", false},
                                         {"clients", {c}}, {"draw", draw}},
                                        vecs, current));
    outstanding[c] = {version, draw};
  };
  for (uint32_t c = 0; c < co.num_clients; ++c) dispatch(c);

  const std::vector<size_t> expect = {run.params.size()};
  uint64_t seq = 0, applied_in_round = 0, rejected_in_round = 0;
  double loss_sum = 0, samples = 0, processed = 0;  // processed: rejected updates' samples too
  auto bytes_before = co.bytes_snapshot();
  std::vector<uint64_t> taus;
  auto t_round = Clock::now();
  const auto t_start = t_round;
  double eval_seconds = 0;  // the server's evaluations: left out of the training time it logs
  for (int r = 0; r < s.rounds;) {
    co.round = uint64_t(r);
    auto in = co.receive_parsed(deadline_after(s.wait_seconds), expect, /*require_finite=*/true);
    if (!in) {
      std::vector<uint32_t> waiting;
      for (const auto& [c, o] : outstanding) waiting.push_back(c);
      throw Error(fmt::format("async: no update within {} s (clients {} hold tasks)", s.wait_seconds, fmt::join(waiting, ", ")));
    }
    const ParsedMessage& m = in->parsed;
    const uint32_t c = m.header.client;
    auto n = field<uint64_t>(m.body, "num_samples");
    auto l = field<double>(m.body, "loss_sum");
    std::string why;
    if (m.header.type != MessageType::kUpdate) why = fmt::format("expected UPDATE, got {}", message_type_name(m.header.type));
    else if (!co.hosts(in->msg.identity, c)) why = fmt::format("client {} is not hosted by this process", c);
    else if (!outstanding.count(c) || outstanding[c].version != m.header.round)
      why = fmt::format("client {} holds no task on model version {}", c, m.header.round);
    else if (std::holds_alternative<ProtocolError>(n) || std::holds_alternative<ProtocolError>(l)) why = "UPDATE without num_samples / loss_sum";
    if (!why.empty()) {
      co.reject(in->msg, why);
      continue;
    }
    const Outstanding o = outstanding[c];
    processed += double(std::get<uint64_t>(n));
    outstanding.erase(c);
    const uint64_t tau = version - o.version;
    const bool accept = s.staleness_bound == 0 || tau <= uint64_t(s.staleness_bound);
    const float lr = s.staleness_lr ? s.sgd_lr / float(std::max<uint64_t>(1, tau)) : s.sgd_lr;
    if (accept) {
      sgd.step(run.params.data(), m.vectors[0].data(), lr);
      ++version;
      current = std::make_shared<const std::vector<float>>(run.params);
      ++applied_in_round;
      taus.push_back(tau);
      loss_sum += std::get<double>(l);
      samples += double(std::get<uint64_t>(n));
    } else {
      ++rejected_in_round;
      co.log(fmt::format("rejected client {}'s update: staleness {} > bound {}", c, tau, s.staleness_bound));
    }
    log.write({{"seq", seq++}, {"client", c}, {"computed_on", o.version}, {"draw", o.draw}, {"staleness", tau},
               {"applied", accept}, {"lr", lr}, {"version_after", version},
               {"compute_seconds", m.body.value("compute_seconds", 0.0)},
               {"seconds", std::chrono::duration<double>(Clock::now() - t_start).count()}});
    dispatch(c);
    if (applied_in_round < co.num_clients) continue;
    const auto [sent, received] = co.total_bytes();
    const uint64_t tau_max = *std::max_element(taus.begin(), taus.end());
    double tau_mean = 0;
    for (uint64_t t : taus) tau_mean += double(t) / double(taus.size());
    nlohmann::json rec = {{"kind", "round"}, {"round", r + 1}, {"topology", "async"},
                          {"updates_applied", applied_in_round}, {"updates_rejected", rejected_in_round},
                          {"model_version", version}, {"staleness_mean", tau_mean}, {"staleness_max", tau_max},
                          {"train_loss", samples > 0 ? loss_sum / samples : 0.0}, {"samples_processed", processed},
                          {"bytes_sent_total", sent}, {"bytes_received_total", received},
                          {"processes", co.per_process_bytes(bytes_before, co.hosted())},
                          {"wait_seconds", std::chrono::duration<double>(Clock::now() - t_round).count()},
                          {"elapsed_seconds", std::chrono::duration<double>(Clock::now() - t_start).count() - eval_seconds}};
    const auto t_eval = Clock::now();
    const bool stop = run.end_round(r, rec, co,
                                    fmt::format("{} updates (staleness mean {:.2f}, max {}, {} rejected)",
                                                applied_in_round, tau_mean, tau_max, rejected_in_round));
    eval_seconds += std::chrono::duration<double>(Clock::now() - t_eval).count();
    applied_in_round = rejected_in_round = 0;
    loss_sum = samples = processed = 0;
    taus.clear();
    bytes_before = co.bytes_snapshot();
    t_round = Clock::now();
    if (stop) break;
    ++r;
  }
}

}  // namespace fedpar
