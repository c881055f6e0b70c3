// The `master` topology (the single-process DataParallel scheme, across processes): the server
// names each worker's slice of the batch and sends the model; workers return logits; the server
// takes the loss over the whole batch and returns each worker d(loss)/d(its logits); workers
// return parameter gradients, which the server sums (client order), steps and broadcasts. The
// server holds the loss, so it sends and receives N times a worker's traffic. See rounds.h.
#include <algorithm>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "clients/local_update.h"
#include "core/check.h"
#include "server/rounds.h"
#include "server/strategy.h"

namespace fedpar {
namespace {

struct Phase {
  std::map<uint32_t, Incoming> got;  // client -> its message
  double max_compute_seconds = 0;
};

// One UPDATE of `phase` ("logits" | "gradient") from every client, each holding one vector of
// `floats(client)` finite values, from the process that hosts it; anything else is rejected.
Phase collect(Coordinator& co, const RunSetup& s, const char* phase, const std::function<size_t(uint32_t)>& floats) {
  Phase out;
  const auto deadline = deadline_after(s.wait_seconds);
  while (out.got.size() < co.num_clients) {
    auto in = co.receive_parsed(deadline, {}, /*require_finite=*/true);
    if (!in) break;
    const ParsedMessage& m = in->parsed;
    const uint32_t c = m.header.client;
    std::string why;
    if (m.header.type != MessageType::kUpdate) why = fmt::format("expected UPDATE, got {}", message_type_name(m.header.type));
    else if (m.header.round != co.round) why = fmt::format("update for round {} during round {}", m.header.round, co.round);
    else if (!co.hosts(in->msg.identity, c)) why = fmt::format("client {} is not hosted by this process", c);
    else if (m.body.value("phase", std::string()) != phase) why = fmt::format("expected the {} phase", phase);
    else if (out.got.count(c)) why = fmt::format("a second {} message from client {}", phase, c);
    else if (m.vectors.size() != 1 || m.vectors[0].size() != floats(c))
      why = fmt::format("{} of client {}: expected one vector of {} values", phase, c, floats(c));
    if (!why.empty()) {
      co.reject(in->msg, why);
      continue;
    }
    out.max_compute_seconds = std::max(out.max_compute_seconds, m.body.value("compute_seconds", 0.0));
    out.got.emplace(c, std::move(*in));
  }
  if (out.got.size() < co.num_clients) {
    std::vector<uint32_t> missing;
    for (uint32_t c = 0; c < co.num_clients; ++c) if (!out.got.count(c)) missing.push_back(c);
    throw Error(fmt::format("round {}: no {} from client(s) {} within {} s (the master needs every "
                            "slice of the batch)", co.round + 1, phase, fmt::join(missing, ", "), s.wait_seconds));
  }
  return out;
}

}  // namespace

void run_master_rounds(Coordinator& co, RunContext& run) {
  const RunSetup& s = run.s;
  const size_t classes = size_t(run.data.train.num_classes);
  auto strategy = make_gradient_averaging(Weighting::kSum, LrSchedule{.base_lr = s.sgd_lr}, {.momentum = s.sgd_momentum});
  std::vector<uint32_t> everyone(co.num_clients);
  for (uint32_t c = 0; c < co.num_clients; ++c) everyone[c] = c;
  for (int r = 0; r < s.rounds; ++r) {
    co.round = uint64_t(r);
    const auto t0 = Clock::now();
    const auto bytes_before = co.bytes_snapshot();
    // The batch: each client's rows, the same ones the workers draw (gradient_batch).
    std::map<uint32_t, std::vector<uint32_t>> rows;
    size_t total = 0;
    for (uint32_t c : everyone) {
      rows[c] = gradient_batch(run.manifest.clients[c].indices, s.sgd_batch, s.seed, c, co.round);
      total += rows[c].size();
    }

    // 1. The model out, logits back.
    const auto snapshot = std::make_shared<const std::vector<float>>(run.params);
    const std::vector<std::span<const float>> model_vec = {*snapshot};
    const WireMessage fwd = encode_message(MessageType::kTask, 0, co.run_id, co.round,
                                           {{"kind", "forward"}, {"batch", s.sgd_batch}, {"clients", everyone}},
                                           model_vec, snapshot);
    for (const auto& id : co.order) co.send(id, fwd);
    const Phase logits = collect(co, s, "logits", [&](uint32_t c) { return rows[c].size() * classes; });

    // 2. The loss over the whole batch, and each slice's share of d(mean loss)/d(logits).
    const auto t_loss = Clock::now();
    std::vector<float> all_logits;
    std::vector<int32_t> labels;
    all_logits.reserve(total * classes);
    for (uint32_t c : everyone) {
      const auto v = logits.got.at(c).parsed.vectors[0];
      all_logits.insert(all_logits.end(), v.begin(), v.end());
      for (uint32_t i : rows[c]) labels.push_back(run.data.train.y[i]);
    }
    auto dlogits = std::make_shared<std::vector<float>>(all_logits.size());
    // The server's model lives on the CPU backend: host pointers are its device pointers.
    const double loss_sum = run.model.loss_sum(dlogits->data(), all_logits.data(), labels.data(), int(total),
                                               1.0f / float(total));
    const double loss_seconds = std::chrono::duration<double>(Clock::now() - t_loss).count();
    size_t offset = 0;
    std::map<uint32_t, std::span<const float>> slice;
    for (uint32_t c : everyone) {
      slice[c] = std::span<const float>(*dlogits).subspan(offset, rows[c].size() * classes);
      offset += rows[c].size() * classes;
    }
    for (const auto& id : co.order) {
      std::vector<std::span<const float>> vecs;
      for (uint32_t c : co.peers[id].clients) vecs.push_back(slice[c]);
      co.send(id, encode_message(MessageType::kTask, 0, co.run_id, co.round,
                                 {{"kind", "backward"}, {"clients", co.peers[id].clients}}, vecs, dlogits));
    }

    // 3. Parameter gradients back: summed in client order, one SGD step.
    const Phase grads = collect(co, s, "gradient", [&](uint32_t) { return run.params.size(); });
    const auto t_agg = Clock::now();
    std::vector<ClientUpdate> updates;
    for (const auto& [c, in] : grads.got) updates.push_back({c, co.round, rows[c].size(), in.parsed.vectors[0]});
    strategy->apply(updates, run.params);
    const auto t_done = Clock::now();

    const auto [sent, received] = co.total_bytes();
    const nlohmann::json procs = co.per_process_bytes(bytes_before, co.hosted());
    uint64_t master_down = 0, master_up = 0;
    for (const auto& p : procs) master_down += p["bytes_down"].get<uint64_t>(), master_up += p["bytes_up"].get<uint64_t>();
    nlohmann::json rec = {{"kind", "round"}, {"round", r + 1}, {"topology", "master"},
                          {"participants", co.num_clients}, {"received", co.num_clients},
                          {"train_loss", total > 0 ? loss_sum / double(total) : 0.0},
                          {"batch", total}, {"samples_processed", total},
                          {"bytes_sent_total", sent}, {"bytes_received_total", received},
                          {"master_bytes_sent", master_down}, {"master_bytes_received", master_up},
                          {"processes", procs},
                          {"worker_forward_seconds", logits.max_compute_seconds},
                          {"worker_backward_seconds", grads.max_compute_seconds},
                          {"master_loss_seconds", loss_seconds},
                          {"aggregate_seconds", std::chrono::duration<double>(t_done - t_agg).count()},
                          {"wait_seconds", std::chrono::duration<double>(t_agg - t0).count() - loss_seconds}};
    if (run.end_round(r, rec, co, fmt::format("batch of {} over {} workers", total, co.num_clients))) break;
  }
}

}  // namespace fedpar
