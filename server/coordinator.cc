// Coordinator; see coordinator.h.
#include "server/coordinator.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/check.h"

namespace fedpar {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

}  // namespace

size_t Received::bytes() const {
  size_t n = 0;
  for (const auto& f : frames) n += f.size();
  return n;
}

void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

Coordinator::Coordinator(const RunSetup& s, const ServerOptions& o)
    : s_(s), opts_(o), sock_(ctx_, zmq::socket_type::router) {
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

std::optional<Received> Coordinator::receive(Clock::time_point deadline) {
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
  if (auto it = peers.find(r.identity); it != peers.end()) it->second.bytes_received += r.bytes();
  return r;
}

std::optional<Incoming> Coordinator::receive_parsed(Clock::time_point deadline,
                                                    std::span<const size_t> expected_floats, bool require_finite) {
  while (auto r = receive(deadline)) {
    auto parsed = parse_message(r->spans(), expected_floats, require_finite);
    if (auto* e = std::get_if<ProtocolError>(&parsed)) {
      reject(*r, e->reason);
      continue;
    }
    return Incoming{std::move(*r), std::move(std::get<ParsedMessage>(parsed))};
  }
  return std::nullopt;
}

void Coordinator::send(const std::string& identity, const WireMessage& m) {
  const size_t bytes = send_message(sock_, m, &identity);
  if (auto it = peers.find(identity); it != peers.end()) it->second.bytes_sent += bytes;
}

void Coordinator::reject(const Received& r, const std::string& reason) {
  log(fmt::format("dropped a message from a peer: {}", reason));
  send(r.identity, encode_message(MessageType::kError, 0, run_id, round, {{"reason", reason}}));
}

void Coordinator::log(const std::string& line) const {
  if (!opts_.quiet) fmt::print(stderr, "server: {}\n", line);
}

void Coordinator::stop_all() {
  for (const auto& [id, p] : peers) send(id, encode_message(MessageType::kStop, 0, run_id, round, {}));
}

void Coordinator::wait_for_clients(const Manifest& manifest, size_t num_params, const std::string& config_toml) {
  num_clients = manifest.clients.size();
  log(fmt::format("listening on {}; waiting for {} client process(es)", endpoint_, s_.processes));
  const auto deadline = deadline_after(s_.wait_seconds);
  while (int(peers.size()) < s_.processes) {
    auto r = receive(deadline);
    if (!r)
      throw Error(fmt::format("only {} of {} client processes said HELLO within {} s (start them "
                              "with: fedpar client --server {})",
                              peers.size(), s_.processes, s_.wait_seconds, endpoint_));
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
    if (peers.count(r->identity)) continue;  // a repeated HELLO
    peers[r->identity] = Peer{r->identity, int(std::get<int64_t>(slots)), {}, 0, r->bytes()};
    order.push_back(r->identity);
    log(fmt::format("client process {} of {} connected ({} slots)", peers.size(), s_.processes,
                    std::get<int64_t>(slots)));
  }
  // Virtual clients are dealt in proportion to the processes' slots: each goes to the process
  // with the fewest clients per slot (earliest HELLO on ties). Results do not depend on this.
  for (uint32_t c = 0; c < num_clients; ++c) {
    const std::string* best = &order[0];
    for (const auto& id : order) {
      const Peer &p = peers[id], &b = peers[*best];
      if (p.clients.size() * size_t(b.slots) < b.clients.size() * size_t(p.slots)) best = &id;
    }
    peers[*best].clients.push_back(c);
    owner[c] = *best;
  }
  for (const auto& id : order)
    log(fmt::format("a process with {} slot(s) hosts {} virtual client(s)", peers[id].slots,
                    peers[id].clients.size()));
  for (const auto& id : order) {
    nlohmann::json shards = nlohmann::json::array();
    for (uint32_t c : peers[id].clients) shards.push_back(manifest.clients[c].indices);
    send(id, encode_message(MessageType::kWelcome, 0, run_id, 0,
                            {{"config", config_toml}, {"clients", peers[id].clients},
                             {"shards", shards}, {"num_params", num_params},
                             {"dataset_hash", manifest.dataset_hash}}));
  }
}

Coordinator::ByteSnapshot Coordinator::bytes_snapshot() const {
  ByteSnapshot b;
  for (const auto& [id, p] : peers) b[id] = {p.bytes_sent, p.bytes_received};
  return b;
}

nlohmann::json Coordinator::per_process_bytes(const ByteSnapshot& before,
                                              const std::map<std::string, std::vector<uint32_t>>& tasks) const {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < order.size(); ++i) {
    const Peer& p = peers.at(order[i]);
    const auto& b = before.at(order[i]);
    const auto t = tasks.find(order[i]);
    out.push_back({{"process", i}, {"tasks", t == tasks.end() ? 0 : t->second.size()},
                   {"bytes_down", p.bytes_sent - b.first}, {"bytes_up", p.bytes_received - b.second},
                   {"lost", lost.count(order[i]) > 0}});
  }
  return out;
}

std::pair<uint64_t, uint64_t> Coordinator::total_bytes() const {
  uint64_t sent = 0, received = 0;
  for (const auto& [id, p] : peers) sent += p.bytes_sent, received += p.bytes_received;
  return {sent, received};
}

int Coordinator::process_index(const std::string& identity) const {
  const auto it = std::find(order.begin(), order.end(), identity);
  return it == order.end() ? -1 : int(it - order.begin());
}

bool Coordinator::hosts(const std::string& identity, uint32_t client) const {
  const auto it = owner.find(client);
  return it != owner.end() && it->second == identity;
}

std::map<std::string, std::vector<uint32_t>> Coordinator::hosted() const {
  std::map<std::string, std::vector<uint32_t>> out;
  for (const auto& [id, p] : peers) out[id] = p.clients;
  return out;
}

nlohmann::json Coordinator::hosts_json() const {
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& id : order)
    hosts.push_back({{"slots", peers.at(id).slots}, {"clients", peers.at(id).clients}, {"lost", lost.count(id) > 0}});
  return hosts;
}

}  // namespace fedpar
