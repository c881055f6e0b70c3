// The server's run loop; see server.h.
#include "server/server.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/check.h"
#include "core/hash.h"
#include "core/messages.h"
#include "core/model.h"
#include "core/results_dir.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "core/trainer.h"
#include "partitioners/partition.h"
#include "server/diagnostics.h"
#include "server/run_config.h"
#include "server/zmq_frames.h"

namespace fedpar {
namespace {

using Clock = std::chrono::steady_clock;

// SIGINT/SIGTERM end the run at the next wait, through the normal error path: clients hear STOP
// and the partial results folder is removed.
volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

struct Peer {
  std::string identity;
  int slots = 1;
  std::vector<uint32_t> clients;
  uint64_t bytes_sent = 0, bytes_received = 0;
};

struct Received {
  std::string identity;
  std::vector<zmq::message_t> frames;  // without the identity frame
  std::vector<std::span<const uint8_t>> spans() const { return frame_spans(frames); }
  size_t bytes() const {
    size_t n = 0;
    for (const auto& f : frames) n += f.size();
    return n;
  }
};

class Server {
 public:
  Server(const Config& cfg, const RunSetup& s, const ServerOptions& o)
      : cfg_(cfg), s_(s), opts_(o), sock_(ctx_, zmq::socket_type::router) {
    sock_.set(zmq::sockopt::linger, 2000);  // lets the final STOP reach the clients on close
    try {
      sock_.bind(s_.bind);
    } catch (const zmq::error_t& e) {
      throw Error(fmt::format("cannot bind {}: {}", s_.bind, e.what()));
    }
    endpoint_ = sock_.get(zmq::sockopt::last_endpoint);
    if (!opts_.endpoint_file.empty()) {
      const std::string tmp = opts_.endpoint_file + ".tmp";
      std::ofstream(tmp) << endpoint_ << "\n";
      std::filesystem::rename(tmp, opts_.endpoint_file);
    }
  }
  const std::string& endpoint() const { return endpoint_; }

  // Waits up to the deadline for one message; nullopt on timeout.
  std::optional<Received> receive(Clock::time_point deadline) {
    // Polls in slices of at most 100 ms: a stop signal may be handled on another thread (OpenMP's),
    // which leaves this thread's poll uninterrupted.
    int ready = 0;
    while (ready == 0) {
      if (g_stop_signal) throw Error(fmt::format("stopped by signal {}", int(g_stop_signal)));
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      zmq::pollitem_t item{sock_.handle(), 0, ZMQ_POLLIN, 0};
      try {
        ready = zmq::poll(&item, 1, std::min(left, std::chrono::milliseconds(100)));
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
      }
    }
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(sock_, std::back_inserter(parts), zmq::recv_flags::dontwait))
      return std::nullopt;
    Received r;
    r.identity = parts[0].to_string();
    for (size_t i = 1; i < parts.size(); ++i) r.frames.push_back(std::move(parts[i]));
    if (auto it = peers_.find(r.identity); it != peers_.end()) it->second.bytes_received += r.bytes();
    return r;
  }

  void send(const std::string& identity, const WireMessage& m) {
    const size_t bytes = send_message(sock_, m, &identity);
    if (auto it = peers_.find(identity); it != peers_.end()) it->second.bytes_sent += bytes;
  }

  void reject(const Received& r, const std::string& reason) {
    log(fmt::format("dropped a message from a peer: {}", reason));
    send(r.identity, encode_message(MessageType::kError, 0, run_id_, round_, {{"reason", reason}}));
  }

  void log(const std::string& line) {
    if (!opts_.quiet) fmt::print(stderr, "server: {}\n", line);
  }

  int run();

 private:
  void wait_for_clients(const Manifest& manifest, size_t num_params);
  std::vector<uint32_t> sample_participants(uint64_t round) const;

  const Config& cfg_;
  const RunSetup& s_;
  const ServerOptions& opts_;
  zmq::context_t ctx_;
  zmq::socket_t sock_;
  std::string endpoint_;
  std::map<std::string, Peer> peers_;
  std::map<uint32_t, std::string> owner_;  // virtual client -> peer identity
  std::vector<std::string> order_;         // processes in HELLO order (their index in metrics)
  std::set<std::string> lost_;             // processes that missed a deadline: no more tasks
  uint64_t run_id_ = 0, round_ = 0;
  size_t num_clients_ = 0;
};

std::vector<uint32_t> Server::sample_participants(uint64_t round) const {
  std::vector<uint32_t> ids(num_clients_);
  std::iota(ids.begin(), ids.end(), 0u);
  const size_t k = std::max<size_t>(1, size_t(std::lround(s_.fraction * double(num_clients_))));
  if (k < ids.size()) {
    Rng(s_.seed, "sample", 0, uint32_t(round)).choose(std::span(ids), k);
    ids.resize(k);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void Server::wait_for_clients(const Manifest& manifest, size_t num_params) {
  log(fmt::format("listening on {}; waiting for {} client process(es)", endpoint_, s_.processes));
  const auto deadline = Clock::now() + std::chrono::duration<double>(s_.wait_seconds);
  std::vector<std::string>& order = order_;
  while (int(peers_.size()) < s_.processes) {
    auto r = receive(std::chrono::time_point_cast<Clock::duration>(deadline));
    if (!r)
      throw Error(fmt::format("only {} of {} client processes said HELLO within {} s (start them "
                              "with: fedpar client --server {})",
                              peers_.size(), s_.processes, s_.wait_seconds, endpoint_));
    auto parsed = parse_message(r->spans());
    if (auto* e = std::get_if<ProtocolError>(&parsed)) {
      reject(*r, e->reason);
      continue;
    }
    const auto& m = std::get<ParsedMessage>(parsed);
    if (m.header.type != MessageType::kHello) {
      reject(*r, fmt::format("expected HELLO before the run starts, got {}", message_type_name(m.header.type)));
      continue;
    }
    auto slots = field<int64_t>(m.body, "slots");
    if (auto* e = std::get_if<ProtocolError>(&slots);
        e || std::get<int64_t>(slots) < 1 || std::get<int64_t>(slots) > 1000000) {
      reject(*r, e ? e->reason : "slots must be between 1 and 1000000");
      continue;
    }
    if (peers_.count(r->identity)) continue;  // a repeated HELLO
    peers_[r->identity] = Peer{r->identity, int(std::get<int64_t>(slots)), {}, 0, r->bytes()};
    order.push_back(r->identity);
    log(fmt::format("client process {} of {} connected ({} slots)", peers_.size(), s_.processes,
                    std::get<int64_t>(slots)));
  }
  // Virtual clients are dealt in proportion to the processes' slots: each goes to the process
  // with the fewest clients per slot (earliest HELLO on ties). Results do not depend on this.
  for (uint32_t c = 0; c < num_clients_; ++c) {
    const std::string* best = &order[0];
    for (const auto& id : order) {
      const Peer &p = peers_[id], &b = peers_[*best];
      if (p.clients.size() * size_t(b.slots) < b.clients.size() * size_t(p.slots)) best = &id;
    }
    peers_[*best].clients.push_back(c);
    owner_[c] = *best;
  }
  for (const auto& id : order)
    log(fmt::format("a process with {} slot(s) hosts {} virtual client(s)", peers_[id].slots,
                    peers_[id].clients.size()));
  for (const auto& id : order) {
    nlohmann::json shards = nlohmann::json::array();
    for (uint32_t c : peers_[id].clients) shards.push_back(manifest.clients[c].indices);
    send(id, encode_message(MessageType::kWelcome, 0, run_id_, 0,
                            {{"config", cfg_.to_toml()}, {"clients", peers_[id].clients},
                             {"shards", shards}, {"num_params", num_params},
                             {"dataset_hash", manifest.dataset_hash}}));
  }
}

int Server::run() {
  auto be = make_backend("cpu", s_.threads);
  TrainTest data = load_dataset(s_.data);
  const Manifest manifest = partition({data.train.name, data.train.content_hash(), data.train.y,
                                       data.train.user, data.train.num_classes},
                                      s_.partition);
  num_clients_ = manifest.clients.size();
  Model model(*be, s_.model, data.train.shape, data.train.num_classes);
  model.init(s_.seed);
  std::vector<float> params = model.params_host();
  run_id_ = hash_bytes(&s_.seed, sizeof(s_.seed), ::getpid());

  std::unique_ptr<Strategy> strategy =
      s_.regime == Regime::kGradient
          ? make_gradient_averaging(s_.weighting, LrSchedule{.base_lr = s_.sgd_lr},
                                    {.momentum = s_.sgd_momentum})
          : make_model_averaging(s_.weighting, s_.server_lr);

  ResultsDir out(s_.results_dir, s_.name);
  out.write_text("config.resolved.toml", cfg_.to_toml());
  write_manifest(out.path() / "manifest.json", manifest);
  JsonlWriter metrics(out.path() / "metrics.jsonl");
  if (s_.save_params_every > 0) std::filesystem::create_directories(out.path() / "params");

  auto stop_all = [&] {
    for (const auto& [id, p] : peers_) send(id, encode_message(MessageType::kStop, 0, run_id_, round_, {}));
  };
  const bool drift = s_.drift && s_.regime == Regime::kModel;
  const std::vector<size_t> expect(drift ? 2 : 1, params.size());  // the update [, its linear part]
  nlohmann::json last_eval;
  int stopped_at = 0;  // the round stop_at_accuracy ended the run after, if it did
  try {
    wait_for_clients(manifest, params.size());  // inside: those that came hear STOP on failure
    for (int r = 0; r < s_.rounds; ++r) {
      round_ = uint64_t(r);
      const auto t0 = Clock::now();
      std::map<std::string, std::pair<uint64_t, uint64_t>> bytes_before;  // sent, received
      for (const auto& [id, p] : peers_) bytes_before[id] = {p.bytes_sent, p.bytes_received};
      const auto participants = sample_participants(round_);
      std::map<std::string, std::vector<uint32_t>> per_peer;
      size_t expected = 0;  // updates we wait for: those of processes still in the run
      for (uint32_t c : participants)
        if (!lost_.count(owner_[c])) per_peer[owner_[c]].push_back(c), ++expected;
      // One TASK for every process: it lists all participants and each process serves those it
      // hosts, so the message is encoded (and its CRC computed) once, and its model frame is one
      // snapshot that ZeroMQ sends to every process without further copies.
      const nlohmann::json body = {
          {"kind", s_.regime == Regime::kGradient ? "gradient" : "local"},
          {"batch", s_.regime == Regime::kGradient ? s_.sgd_batch : s_.local_batch},
          {"steps", s_.local_steps}, {"epochs", s_.local_epochs}, {"lr", s_.local_lr},
          {"momentum", s_.local_momentum}, {"drift", drift}, {"clients", participants}};
      const auto snapshot = std::make_shared<const std::vector<float>>(params);
      const std::vector<std::span<const float>> vecs = {*snapshot};
      const WireMessage task = encode_message(MessageType::kTask, 0, run_id_, round_, body, vecs, snapshot);
      const auto t_send = Clock::now();
      for (const auto& [id, ids] : per_peer) send(id, task);
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
      const auto deadline = Clock::now() + std::chrono::duration<double>(s_.wait_seconds);
      while (got.size() < expected) {
        auto msg = receive(std::chrono::time_point_cast<Clock::duration>(deadline));
        if (!msg) break;
        auto parsed = parse_message(msg->spans(), expect, /*require_finite=*/true);
        if (auto* e = std::get_if<ProtocolError>(&parsed)) {
          reject(*msg, e->reason);
          continue;
        }
        ParsedMessage& m = std::get<ParsedMessage>(parsed);
        const uint32_t c = m.header.client;
        auto n = field<uint64_t>(m.body, "num_samples");
        auto l = field<double>(m.body, "loss_sum");
        std::string why;
        if (lost_.count(msg->identity)) why = "this process missed a round deadline and was dropped from the run";
        else if (m.header.type != MessageType::kUpdate) why = fmt::format("expected UPDATE, got {}", message_type_name(m.header.type));
        else if (m.header.round != round_) why = fmt::format("update for round {} during round {}", m.header.round, round_);
        else if (!owner_.count(c) || owner_[c] != msg->identity) why = fmt::format("client {} is not hosted by this process", c);
        else if (!std::binary_search(participants.begin(), participants.end(), c)) why = fmt::format("client {} was not asked this round", c);
        else if (got.count(c)) why = fmt::format("a second update from client {}", c);
        else if (std::holds_alternative<ProtocolError>(n) || std::holds_alternative<ProtocolError>(l)) why = "UPDATE without num_samples / loss_sum";
        if (!why.empty()) {
          reject(*msg, why);
          continue;
        }
        const auto proc = std::find(order_.begin(), order_.end(), msg->identity) - order_.begin();
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
        const std::string what = fmt::format("round {}: no update from client(s) {}{}", round_ + 1,
                                             fmt::join(missing, ", "),
                                             got.size() < expected ? fmt::format(" within {} s", s_.wait_seconds) : "");
        if (got.empty() || (s_.regime == Regime::kGradient && !s_.continue_without_missing))
          throw Error(what + (s_.regime == Regime::kGradient
                                  ? " (gradient regime stops; set continue_without_missing = true to go on)"
                                  : ""));
        log(what + "; continuing with the rest");
        for (uint32_t c : missing) {
          if (lost_.insert(owner_[c]).second)
            log(fmt::format("a client process (virtual clients {}) missed the deadline; it gets no "
                            "more tasks in this run",
                            fmt::join(peers_[owner_[c]].clients, ", ")));
        }
      }
      std::vector<ClientUpdate> updates, linear;
      for (const auto& [c, a] : got) {
        updates.push_back({c, round_, a.num_samples, a.parsed.vectors[0]});
        if (drift) linear.push_back({c, round_, a.num_samples, a.parsed.vectors[1]});
      }
      strategy->apply(updates, params);
      const auto t_done = Clock::now();
      // Diagnostics are measurements, not part of the round: computed after its clock stops.
      const UpdateDiagnostics diag = diagnose_updates(updates);
      for (auto& pc : per_client)
        for (size_t k = 0; k < updates.size(); ++k)
          if (pc["client"] == updates[k].client) pc["update_norm"] = diag.norms[k];

      uint64_t sent = 0, received = 0;
      for (const auto& [id, p] : peers_) sent += p.bytes_sent, received += p.bytes_received;
      nlohmann::json per_process = nlohmann::json::array();  // this round's socket bytes
      for (size_t i = 0; i < order_.size(); ++i) {
        const Peer& p = peers_[order_[i]];
        per_process.push_back({{"process", i}, {"tasks", per_peer.count(order_[i]) ? per_peer[order_[i]].size() : 0},
                               {"bytes_down", p.bytes_sent - bytes_before[order_[i]].first},
                               {"bytes_up", p.bytes_received - bytes_before[order_[i]].second},
                               {"lost", lost_.count(order_[i]) > 0}});
      }
      nlohmann::json rec = {{"kind", "round"}, {"round", r + 1}, {"participants", participants.size()},
                            {"received", got.size()}, {"missing", missing},
                            {"train_loss", loss_samples > 0 ? loss_sum / loss_samples : 0.0},
                            {"bytes_sent_total", sent}, {"bytes_received_total", received},
                            {"bytes_down_per_task", params.size() * sizeof(float)},
                            {"clients", per_client}, {"processes", per_process},
                            {"mean_pairwise_cosine", diag.mean_pairwise_cosine},
                            {"gradient_diversity", diag.gradient_diversity},
                            {"broadcast_seconds", broadcast_seconds},
                            {"wait_seconds", std::chrono::duration<double>(t_wait - t0).count()},
                            {"aggregate_seconds", std::chrono::duration<double>(t_done - t_wait).count()}};
      if (drift) {
        rec["update_drift"] = update_drift(updates, linear, s_.weighting);
        rec["diagnostic_bytes_up"] = linear.size() * params.size() * sizeof(float);
      }
      if (s_.save_params_every > 0 && (r + 1) % s_.save_params_every == 0)
        save_safetensors(out.path() / "params" / fmt::format("round-{:04d}.safetensors", r + 1), model.layout(),
                         params, {{"format", "fedpar"}, {"model", s_.model.name}, {"round", std::to_string(r + 1)}});
      if ((r + 1) % s_.eval_every == 0 || r + 1 == s_.rounds) {
        model.set_params_host(params);
        const BatchStats st = evaluate(model, data.test);
        rec["test_loss"] = st.samples ? st.loss_sum / double(st.samples) : 0.0;
        rec["test_accuracy"] = st.samples ? double(st.correct) / double(st.samples) : 0.0;
        last_eval = rec;
      }
      metrics.write(rec);
      log(fmt::format("round {}/{}: {} updates, train loss {:.4f}{}", r + 1, s_.rounds, got.size(),
                      rec["train_loss"].get<double>(),
                      rec.contains("test_accuracy")
                          ? fmt::format(", test accuracy {:.2f}%", 100 * rec["test_accuracy"].get<double>())
                          : ""));
      if (s_.stop_at_accuracy > 0 && rec.contains("test_accuracy") &&
          rec["test_accuracy"].get<double>() >= s_.stop_at_accuracy) {
        log(fmt::format("test accuracy reached {:.2f}% after round {}; stopping (stop_at_accuracy)",
                        100 * s_.stop_at_accuracy, r + 1));
        stopped_at = r + 1;
        break;
      }
    }
  } catch (...) {
    stop_all();
    throw;
  }
  stop_all();
  save_safetensors(out.path() / "model.safetensors", model.layout(), params,
                   {{"format", "fedpar"}, {"model", s_.model.name}});
  const std::string hash = hash_hex(hash_bytes(params.data(), params.size() * sizeof(float)));
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& id : order_)
    hosts.push_back({{"slots", peers_[id].slots}, {"clients", peers_[id].clients}, {"lost", lost_.count(id) > 0}});
  out.write_json("summary.json", {{"command", "server"}, {"final", last_eval}, {"model_hash", hash},
                                  {"clients", num_clients_}, {"processes", s_.processes},
                                  {"hosts", hosts}, {"rounds_run", stopped_at ? stopped_at : s_.rounds},
                                  {"stopped_at_accuracy", stopped_at > 0}});
  const auto path = out.commit();
  log(fmt::format("results: {}", path.string()));
  fmt::print("final model hash: {}\n", hash);
  if (last_eval.contains("test_accuracy"))
    fmt::print("test accuracy: {:.2f}%\n", 100 * last_eval["test_accuracy"].get<double>());
  return 0;
}

}  // namespace

int run_server(Config cfg, const ServerOptions& opts) {
  const RunSetup s = resolve_run_setup(cfg);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  cfg.set("name", s.name);
  Server server(cfg, s, opts);
  return server.run();
}

}  // namespace fedpar
