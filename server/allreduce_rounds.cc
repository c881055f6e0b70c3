// The `allreduce` topology's server side: rendezvous, then per round a small TASK to each rank,
// one report back, replica hash checks, and the model from rank 0 when it is to be evaluated or
// saved. The gradients never pass through the server. See rounds.h and docs/topologies.md.
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/check.h"
#include "core/hash.h"
#include "server/rounds.h"

namespace fedpar {
namespace {

// The ring: every process sends RING with the endpoint it listens on; each then hears its rank
// (HELLO order), the ring size and its next neighbour's endpoint. Workers on several hosts listen
// on every interface (allreduce.bind = "tcp://0.0.0.0:*") and are named by their address as the
// server sees it.
void form_ring(Coordinator& co, double wait_seconds) {
  std::map<std::string, std::string> endpoints;
  const auto deadline = deadline_after(wait_seconds);
  while (endpoints.size() < co.order.size()) {
    auto in = co.receive_parsed(deadline);
    if (!in) throw Error(fmt::format("only {} of {} workers sent their ring endpoint within {} s",
                                     endpoints.size(), co.order.size(), wait_seconds));
    auto ep = field<std::string>(in->parsed.body, "endpoint");
    if (in->parsed.header.type != MessageType::kRing || !co.peers.count(in->msg.identity) ||
        std::holds_alternative<ProtocolError>(ep)) {
      co.reject(in->msg, "expected RING with the worker's endpoint");
      continue;
    }
    std::string endpoint = std::get<std::string>(ep);
    if (const std::string any = "tcp://0.0.0.0:"; endpoint.starts_with(any)) {
      // A worker listening on every interface is reached at the address its RING came from.
      std::string host;
      try {
        host = in->msg.frames[0].gets("Peer-Address");
      } catch (const zmq::error_t&) {
      }
      if (host.empty()) {
        co.reject(in->msg, "a ring endpoint on every interface needs a tcp connection to the server");
        continue;
      }
      if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6
      endpoint = "tcp://" + host + ":" + endpoint.substr(any.size());
    }
    endpoints[in->msg.identity] = endpoint;
  }
  const int n = int(co.order.size());
  for (int rank = 0; rank < n; ++rank)
    co.send(co.order[size_t(rank)],
            encode_message(MessageType::kRing, 0, co.run_id, 0,
                           {{"rank", rank}, {"size", n}, {"next", endpoints[co.order[size_t((rank + 1) % n)]]}}));
  std::vector<std::string> order;
  for (const auto& id : co.order) order.push_back(endpoints[id]);
  co.log(fmt::format("ring of {} workers formed: {}", n, fmt::join(order, " -> ")));
}

// Sum of the weights the ring divides by: every client's n_k (or 1 each with uniform weighting).
double total_weight(const RunSetup& s, const Manifest& m) {
  double t = 0;
  for (const auto& c : m.clients) {
    const double n = double(c.indices.size());
    t += s.weighting == Weighting::kUniform ? 1.0 : s.sgd_batch > 0 ? std::min(n, double(s.sgd_batch)) : n;
  }
  return t;
}

}  // namespace

void run_allreduce_rounds(Coordinator& co, RunContext& run) {
  const RunSetup& s = run.s;
  form_ring(co, s.wait_seconds);
  const double weight = total_weight(s, run.manifest);
  for (int r = 0; r < s.rounds; ++r) {
    co.round = uint64_t(r);
    const auto t0 = Clock::now();
    const auto bytes_before = co.bytes_snapshot();
    const bool last = r + 1 == s.rounds;
    const bool check = (r + 1) % s.hash_every == 0 || last;
    // Rank 0's replica comes back when the server evaluates or saves it.
    const bool need_params = (r + 1) % s.eval_every == 0 || last ||
                             (s.save_params_every > 0 && (r + 1) % s.save_params_every == 0);
    // The starting model goes out once, with the first TASK; later TASKs carry no vector.
    const auto start = r == 0 ? std::make_shared<const std::vector<float>>(run.params) : nullptr;
    std::vector<std::span<const float>> vecs;
    if (start) vecs.push_back(*start);
    for (size_t rank = 0; rank < co.order.size(); ++rank) {
      const nlohmann::json body = {{"kind", "allreduce"}, {"batch", s.sgd_batch}, {"total_weight", weight},
                                   {"hash", check}, {"send_params", need_params && rank == 0}};
      co.send(co.order[rank], encode_message(MessageType::kTask, 0, co.run_id, co.round, body, vecs, start));
    }
    std::map<int, nlohmann::json> reports;  // rank -> body
    // The ranks leave the all-reduce together, so once one has reported the others have at most
    // the ring's deadline: a rank that died after its part of the ring is found that fast too.
    auto deadline = deadline_after(s.wait_seconds);
    double wait = s.wait_seconds;
    while (reports.size() < co.order.size()) {
      auto in = co.receive_parsed(deadline, {}, /*require_finite=*/true);
      if (!in) break;
      const ParsedMessage& m = in->parsed;
      const int rank = co.process_index(in->msg.identity);
      if (rank >= 0 && m.header.type == MessageType::kError)
        throw Error(fmt::format("round {}: worker {} failed: {}", r + 1, rank, m.body.value("reason", std::string("?"))));
      auto n = field<uint64_t>(m.body, "num_samples");
      auto l = field<double>(m.body, "loss_sum");
      const size_t want_vectors = need_params && rank == 0 ? 1 : 0;
      std::string why;
      if (rank < 0) why = "not a worker of this run";
      else if (m.header.type != MessageType::kUpdate) why = fmt::format("expected UPDATE, got {}", message_type_name(m.header.type));
      else if (m.header.round != co.round) why = fmt::format("report for round {} during round {}", m.header.round, co.round);
      else if (reports.count(rank)) why = fmt::format("a second report from worker {}", rank);
      else if (std::holds_alternative<ProtocolError>(n) || std::holds_alternative<ProtocolError>(l)) why = "report without num_samples / loss_sum";
      else if (check && !m.body.contains("hash")) why = "report without the replica hash asked for";
      else if (m.vectors.size() != want_vectors || (want_vectors && m.vectors[0].size() != run.params.size()))
        why = fmt::format("report with {} vector(s), expected {} of {} values", m.vectors.size(), want_vectors, run.params.size());
      if (!why.empty()) {
        co.reject(in->msg, why);
        continue;
      }
      if (want_vectors) std::copy(m.vectors[0].begin(), m.vectors[0].end(), run.params.begin());
      nlohmann::json body = m.body;
      body["bytes_up"] = in->msg.bytes();
      reports[rank] = std::move(body);
      if (reports.size() == 1 && s.ring_deadline_seconds < s.wait_seconds) {
        wait = s.ring_deadline_seconds;
        deadline = std::min(deadline, deadline_after(wait));
      }
    }
    if (reports.size() < co.order.size()) {
      std::vector<int> silent;
      for (int k = 0; k < int(co.order.size()); ++k) if (!reports.count(k)) silent.push_back(k);
      throw Error(fmt::format("round {}: no report from worker(s) {} within {} s{} (did it die? the ring "
                              "cannot go on without it)", r + 1, fmt::join(silent, ", "), wait,
                              reports.empty() ? "" : " of the others'"));
    }
    if (check) {  // every replica must hold the same bytes, and rank 0's copy here must match
      std::map<std::string, std::vector<int>> by_hash;
      for (const auto& [rank, body] : reports) by_hash[body["hash"].get<std::string>()].push_back(rank);
      if (need_params) by_hash[hash_hex(hash_bytes(run.params.data(), run.params.size() * sizeof(float)))];
      if (by_hash.size() > 1) {
        std::vector<std::string> parts;
        for (const auto& [h, ranks] : by_hash)
          parts.push_back(ranks.empty() ? fmt::format("{} (the model rank 0 sent)", h)
                                        : fmt::format("{} (worker(s) {})", h, fmt::join(ranks, ", ")));
        throw Error(fmt::format("round {}: the replicas drifted apart: {}", r + 1, fmt::join(parts, "; ")));
      }
    }
    const auto t_done = Clock::now();
    double loss_sum = 0, samples = 0;
    nlohmann::json per_worker = nlohmann::json::array();
    for (const auto& [rank, b] : reports) {
      loss_sum += b["loss_sum"].get<double>();
      samples += double(b["num_samples"].get<uint64_t>());
      per_worker.push_back({{"process", rank}, {"compute_seconds", b.value("compute_seconds", 0.0)},
                            {"allreduce_seconds", b.value("allreduce_seconds", 0.0)},
                            {"ring_bytes_sent", b.value("ring_bytes_sent", uint64_t{0})},
                            {"ring_bytes_received", b.value("ring_bytes_received", uint64_t{0})},
                            {"parameter_bytes", b.value("parameter_bytes", uint64_t{0})},
                            {"activation_bytes", b.value("activation_bytes", uint64_t{0})},
                            {"bytes_up", b["bytes_up"]}});
    }
    const auto [sent, received] = co.total_bytes();
    nlohmann::json rec = {{"kind", "round"}, {"round", r + 1}, {"topology", "allreduce"},
                          {"participants", co.num_clients}, {"received", co.num_clients},
                          {"train_loss", samples > 0 ? loss_sum / samples : 0.0},
                          {"samples_processed", samples}, {"bytes_sent_total", sent}, {"bytes_received_total", received},
                          {"workers", per_worker}, {"processes", co.per_process_bytes(bytes_before, co.hosted())},
                          {"replicas_checked", check},
                          {"wait_seconds", std::chrono::duration<double>(t_done - t0).count()}};
    if (run.end_round(r, rec, co, fmt::format("{} workers{}", reports.size(), check ? ", replicas identical" : "")))
      break;
  }
}

}  // namespace fedpar
