// Link profiles and the network's seeded draws; see network.h and docs/network.md.
#include "core/network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/check.h"
#include "core/checkpoint.h"
#include "core/rng.h"
#include "core/run_records.h"
#include "core/shared_link.h"

namespace fedpar {

const std::vector<LinkProfile>& named_link_profiles() {
  // Illustrative numbers in the range of published measurements (docs/network.md), not
  // measurements of any one network.
  static const std::vector<LinkProfile> profiles = {
      {"datacenter", 25e9, 25e9, 10e-6, 0, 0, 1},
      {"wifi", 50e6, 20e6, 5e-3, 2e-3, 0, 1},
      {"lte", 20e6, 5e6, 40e-3, 10e-3, 0, 1},
      {"3g", 2e6, 0.5e6, 150e-3, 30e-3, 0.01, 1},
  };
  return profiles;
}

std::string valid_profile_names() {
  std::string names;
  for (const auto& p : named_link_profiles()) names += p.name + ", ";
  return names + "custom";
}

const char* network_mode_name(NetworkMode m) {
  switch (m) {
    case NetworkMode::kOff:
      return "off";
    case NetworkMode::kEmulated:
      return "emulated";
    case NetworkMode::kSimulated:
      return "simulated";
  }
  return "?";
}

bool NetworkSpec::all_available() const {
  return std::all_of(profiles.begin(), profiles.end(),
                     [](const LinkProfile& p) { return p.availability >= 1.0; });
}

bool NetworkSpec::lossless() const {
  return std::all_of(profiles.begin(), profiles.end(),
                     [](const LinkProfile& p) { return p.loss == 0; });
}

void check_link_profile(const LinkProfile& p) {
  const auto need = [&](bool ok, const char* what) {
    if (!ok) throw Error(fmt::format("network profile '{}': {}", p.name, what));
  };
  need(p.down_bps > 0 && std::isfinite(p.down_bps), "down_bps must be > 0");
  need(p.up_bps > 0 && std::isfinite(p.up_bps), "up_bps must be > 0");
  need(p.latency_s >= 0 && std::isfinite(p.latency_s), "latency_seconds must be >= 0");
  need(p.jitter_s >= 0 && std::isfinite(p.jitter_s), "jitter_seconds must be >= 0");
  need(p.loss >= 0 && p.loss <= 1, "loss must be in [0, 1]");
  need(p.availability >= 0 && p.availability <= 1, "availability must be in [0, 1]");
}

LinkProfile link_profile(const std::string& name, const LinkProfile& custom,
                         const std::string& key) {
  if (name == "custom") {
    LinkProfile p = custom;
    p.name = "custom";
    check_link_profile(p);
    return p;
  }
  for (const auto& p : named_link_profiles())
    if (p.name == name) return p;
  throw Error(
      fmt::format("{}: unknown profile '{}' (valid: {})", key, name, valid_profile_names()));
}

namespace {

// "wifi:0.5,lte:0.3,3g:0.2" as (profile, weight) pairs; weights > 0 summing to 1.
std::vector<std::pair<LinkProfile, double>> parse_mixture(const std::string& text,
                                                          const LinkProfile& custom) {
  const std::string key = "network.heterogeneous";
  std::vector<std::pair<LinkProfile, double>> out;
  double total = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    std::erase(item, ' ');  // "wifi: 0.5, lte: 0.5" reads as written
    const size_t colon = item.find(':');
    char* end = nullptr;
    const double w = colon == std::string::npos ? 0 : std::strtod(item.c_str() + colon + 1, &end);
    if (colon == std::string::npos || colon + 1 == item.size() || *end != '\0' || !(w > 0))
      throw Error(fmt::format(
          "{}: '{}' is not \"profile:weight\" with a weight > 0 (e.g. \"wifi:0.5,lte:0.3,3g:0.2\")",
          key, item));
    out.emplace_back(link_profile(item.substr(0, colon), custom, key), w);
    total += w;
    start = comma + 1;
  }
  if (std::abs(total - 1.0) > 1e-6)
    throw Error(fmt::format("{}: the weights of '{}' sum to {}, not 1", key, text, total));
  return out;
}

}  // namespace

NetworkSpec resolve_network(NetworkMode mode, JitterKind jitter, const std::string& profile,
                            const std::string& heterogeneous,
                            const std::vector<std::pair<uint32_t, std::string>>& overrides,
                            const LinkProfile& custom_in, uint64_t seed, size_t clients) {
  LinkProfile custom = custom_in;
  custom.name = "custom";
  NetworkSpec n{.mode = mode, .jitter = jitter};
  const auto index_of = [&](const LinkProfile& p) {
    for (size_t i = 0; i < n.profiles.size(); ++i)
      if (n.profiles[i].name == p.name) return uint32_t(i);
    n.profiles.push_back(p);
    return uint32_t(n.profiles.size() - 1);
  };
  const LinkProfile base = link_profile(profile, custom, "network.profile");
  if (heterogeneous.empty()) {
    n.client_profile.assign(clients, index_of(base));
  } else {
    const auto mixture = parse_mixture(heterogeneous, custom);
    for (size_t c = 0; c < clients; ++c) {
      const double u = Rng(seed, "net-profile", uint32_t(c)).uniform_double();
      double acc = 0;
      size_t pick = mixture.size() - 1;  // the last takes what rounding leaves
      for (size_t i = 0; i < mixture.size(); ++i)
        if (u < (acc += mixture[i].second)) {
          pick = i;
          break;
        }
      n.client_profile.push_back(index_of(mixture[pick].first));
    }
  }
  for (const auto& [c, name] : overrides) {
    if (c >= clients)
      throw Error(fmt::format(
          "network.profiles: client {} does not exist (partition.clients = {}: ids 0..{})", c,
          clients, clients - 1));
    n.client_profile[c] = index_of(link_profile(name, custom, "network.profiles"));
  }
  if (n.profiles.empty()) n.profiles.push_back(base);  // no clients: keep of() defined
  return n;
}

bool client_available(const NetworkSpec& n, uint64_t seed, uint32_t client, uint64_t round) {
  const double a = n.of(client).availability;
  if (a >= 1.0) return true;  // no draw: a run without unavailability draws nothing
  uint64_t stretch = round;
  if (const uint32_t l = n.availability_rounds; l > 1)
    stretch = (round + Rng(seed, "net-available-offset", client).below(l)) / l;
  return Rng(seed, "net-available", client, uint32_t(stretch)).uniform_double() < a;
}

namespace {

// The stream of one (direction, id, round, repeat) draw: a repeat gets its own purpose.
Rng draw_stream(std::string_view what, std::string_view direction, uint64_t seed, uint32_t id,
                uint32_t round, uint32_t repeat) {
  const std::string purpose = repeat == 0 ? fmt::format("net-{}-{}", what, direction)
                                          : fmt::format("net-{}-{}-{}", what, direction, repeat);
  return Rng(seed, purpose, id, round);
}

}  // namespace

double jitter_seconds(JitterKind kind, double scale, uint64_t seed, std::string_view direction,
                      uint32_t id, uint32_t round, uint32_t repeat) {
  if (scale <= 0) return 0;
  Rng r = draw_stream("jitter", direction, seed, id, round, repeat);
  return kind == JitterKind::kUniform ? scale * r.uniform_double() : scale * std::abs(r.normal());
}

bool message_lost(double loss, uint64_t seed, std::string_view direction, uint32_t id,
                  uint32_t round, uint32_t repeat) {
  if (loss <= 0) return false;
  return draw_stream("loss", direction, seed, id, round, repeat).uniform_double() < loss;
}

std::vector<uint32_t> network_participants(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                           std::vector<uint32_t> sampled, RoundRecord& rec) {
  if (!n.on()) return sampled;
  std::vector<uint32_t> asked, unavailable, lost;
  for (uint32_t c : sampled) {
    if (!client_available(n, seed, c, round)) {
      unavailable.push_back(c);
    } else if (n.mode == NetworkMode::kSimulated &&
               (message_lost(n.of(c).loss, seed, "down", c, uint32_t(round)) ||
                message_lost(n.of(c).loss, seed, "up", c, uint32_t(round)))) {
      lost.push_back(c);
    } else {
      asked.push_back(c);
    }
  }
  rec.unavailable = std::move(unavailable);
  if (n.mode == NetworkMode::kSimulated) rec.simulated_lost = std::move(lost);
  return asked;
}

double message_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round, uint32_t client,
                       std::string_view direction, uint64_t bytes, uint32_t repeat) {
  const LinkProfile& p = n.of(client);
  return transfer_seconds(bytes, direction == "down" ? p.down_bps : p.up_bps) + p.latency_s +
         jitter_seconds(n.jitter, p.jitter_s, seed, direction, client, uint32_t(round), repeat);
}

std::vector<double> simulated_arrivals(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                       std::string_view direction,
                                       const std::vector<SimulatedMessage>& messages,
                                       uint32_t repeat) {
  std::vector<double> at;
  if (!n.server) {
    for (const SimulatedMessage& m : messages)
      at.push_back(m.start + message_seconds(n, seed, round, m.client, direction, m.bytes, repeat));
    return at;
  }
  const bool down = direction == "down";
  std::vector<Flow> flows;
  for (const SimulatedMessage& m : messages)
    flows.push_back({m.start, m.bytes, down ? n.of(m.client).down_bps : n.of(m.client).up_bps});
  const auto crossed = shared_link_finish(flows, down ? n.server->up_bps : n.server->down_bps);
  for (size_t i = 0; i < messages.size(); ++i) {
    const LinkProfile& p = n.of(messages[i].client);
    at.push_back(crossed[i] + p.latency_s + n.server->latency_s +
                 jitter_seconds(n.jitter, p.jitter_s, seed, direction, messages[i].client,
                                uint32_t(round), repeat));
  }
  return at;
}

namespace {

// One client's part of a synchronous exchange: a message down, compute, a message up.
struct Exchange {
  uint32_t client = 0;
  uint64_t down_bytes = 0;
  double compute_seconds = 0;
  uint64_t up_bytes = 0;
};

// When each reply of a synchronous exchange is in, in the clients' order.
std::vector<double> reply_times(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                const std::vector<Exchange>& clients, uint32_t repeat = 0) {
  std::vector<SimulatedMessage> down, up;
  for (const Exchange& c : clients) down.push_back({c.client, c.down_bytes, 0});
  const auto tasks = simulated_arrivals(n, seed, round, "down", down, repeat);
  for (size_t i = 0; i < clients.size(); ++i)
    up.push_back({clients[i].client, clients[i].up_bytes, tasks[i] + clients[i].compute_seconds});
  return simulated_arrivals(n, seed, round, "up", up, repeat);
}

// When the last reply of a synchronous exchange is in (0 without clients).
double last_reply(const NetworkSpec& n, uint64_t seed, uint64_t round,
                  const std::vector<Exchange>& clients, uint32_t repeat = 0) {
  const auto replies = reply_times(n, seed, round, clients, repeat);
  return replies.empty() ? 0 : *std::ranges::max_element(replies);
}

std::vector<Exchange> exchanges(const std::vector<SimulatedClient>& clients) {
  std::vector<Exchange> out;
  for (const auto& c : clients)
    out.push_back({c.client, c.down_bytes, c.compute_seconds, c.up_bytes});
  return out;
}

}  // namespace

std::vector<double> simulated_reply_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                            const std::vector<SimulatedClient>& clients) {
  return reply_times(n, seed, round, exchanges(clients));
}

double simulated_exchange_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                  const std::vector<SimulatedClient>& clients) {
  return last_reply(n, seed, round, exchanges(clients));
}

double simulated_round_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                               const std::vector<SimulatedClient>& clients, double deadline,
                               bool deadline_hit, double aggregate_seconds) {
  const double slowest = simulated_exchange_seconds(n, seed, round, clients);
  return (deadline_hit ? deadline : std::min(slowest, deadline)) + aggregate_seconds;
}

double simulated_master_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                const std::vector<SimulatedSlice>& slices, double loss_seconds,
                                double aggregate_seconds) {
  std::vector<Exchange> forward, backward;
  for (const auto& s : slices) {
    forward.push_back({s.client, s.model_bytes, s.forward_seconds, s.logits_bytes});
    backward.push_back({s.client, s.dlogits_bytes, s.backward_seconds, s.gradient_bytes});
  }
  return last_reply(n, seed, round, forward) + loss_seconds +
         last_reply(n, seed, round, backward, 1) + aggregate_seconds;
}

double simulated_ring_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                              const std::vector<SimulatedWorker>& workers,
                              double aggregate_seconds) {
  // The ring moves in lockstep: it starts when the last worker has its gradient, each step waits
  // for the slowest link, and the server waits for the last report.
  std::vector<SimulatedMessage> tasks, reports;
  double ring = 0;
  for (const auto& w : workers) {
    tasks.push_back({w.client, w.down_bytes, 0});
    reports.push_back({w.client, w.up_bytes, 0});
    ring =
        std::max(ring, ring_send_seconds(n, w.client, w.next_client, w.ring_bytes, w.ring_steps));
  }
  const auto task_in = simulated_arrivals(n, seed, round, "down", tasks);
  const auto report_in = simulated_arrivals(n, seed, round, "up", reports);
  double ready = 0, report = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    ready = std::max(ready, task_in[i] + workers[i].compute_seconds);
    report = std::max(report, report_in[i]);
  }
  return ready + ring + report + aggregate_seconds;
}

void NetworkClock::save(Checkpoint& c) const { c.meta["network_time"] = total_; }
void NetworkClock::load(const Checkpoint& c) { total_ = c.meta.value("network_time", 0.0); }

void NetworkClock::add_simulated_seconds(RoundRecord& rec, double seconds) {
  total_ += seconds;
  rec.simulated_seconds = seconds;
  rec.simulated_time = total_;
}

void NetworkClock::end_ring_round(RoundRecord& rec, uint64_t round,
                                  const std::vector<SimulatedWorker>& workers) {
  if (n_.mode == NetworkMode::kSimulated)
    add_simulated_seconds(
        rec, simulated_ring_seconds(n_, seed_, round, workers, rec.aggregate_seconds.value_or(0)));
}

void NetworkClock::end_master_round(RoundRecord& rec, uint64_t round,
                                    const std::vector<SimulatedSlice>& slices) {
  if (n_.mode == NetworkMode::kSimulated)
    add_simulated_seconds(
        rec, simulated_master_seconds(n_, seed_, round, slices, rec.master_loss_seconds.value_or(0),
                                      rec.aggregate_seconds.value_or(0)));
}

void NetworkClock::end_round(RoundRecord& rec, uint64_t round, double wall_seconds,
                             bool waited_for_missing) {
  if (n_.mode == NetworkMode::kEmulated) {
    total_ += wall_seconds;
    rec.emulated_seconds = wall_seconds;
    rec.emulated_time = total_;
  } else if (n_.mode == NetworkMode::kSimulated) {
    std::vector<SimulatedClient> clients;
    // a diagnostic sent with the updates (diagnostics.drift: one vector each) is not the round's
    const uint64_t diagnostic_each = rec.clients && !rec.clients->empty()
                                         ? rec.diagnostic_bytes_up.value_or(0) / rec.clients->size()
                                         : 0;
    if (rec.clients)
      for (const auto& c : *rec.clients)
        clients.push_back({c.client, rec.bytes_down_per_task.value_or(0),
                           c.bytes_up - diagnostic_each, c.compute_seconds});
    const bool deadline_hit = (rec.simulated_lost && !rec.simulated_lost->empty()) ||
                              (waited_for_missing && rec.missing && !rec.missing->empty()) ||
                              (rec.simulated_late && !rec.simulated_late->empty());
    const double slowest = simulated_exchange_seconds(n_, seed_, round, clients);
    over_deadline_.reset();
    if (!deadline_hit && slowest > deadline_) over_deadline_ = slowest;
    add_simulated_seconds(rec, (deadline_hit ? deadline_ : std::min(slowest, deadline_)) +
                                   rec.aggregate_seconds.value_or(0));
  }
}

nlohmann::json network_json(const NetworkSpec& n,
                            std::span<const std::vector<uint32_t>> processes) {
  nlohmann::json profiles = nlohmann::json::array(), clients = nlohmann::json::array();
  for (const auto& p : n.profiles)
    profiles.push_back({{"name", p.name},
                        {"down_bps", p.down_bps},
                        {"up_bps", p.up_bps},
                        {"latency_seconds", p.latency_s},
                        {"jitter_seconds", p.jitter_s},
                        {"loss", p.loss},
                        {"availability", p.availability}});
  for (uint32_t i : n.client_profile) clients.push_back(n.profiles[i].name);
  nlohmann::json server = nullptr;
  if (n.server)
    server = {{"name", n.server->name},
              {"up_bps", n.server->up_bps},
              {"down_bps", n.server->down_bps},
              {"latency_seconds", n.server->latency_s}};
  nlohmann::json out = {{"mode", network_mode_name(n.mode)},
                        {"jitter", n.jitter == JitterKind::kUniform ? "uniform" : "normal"},
                        {"profiles", profiles},
                        {"clients", clients},
                        {"server", server}};
  if (n.mode == NetworkMode::kEmulated && !processes.empty()) {
    nlohmann::json links = nlohmann::json::array();
    for (const auto& hosted : processes)
      links.push_back({{"clients", hosted},
                       {"link", hosted.empty() ? nullptr : nlohmann::json(n.of(hosted[0]).name)}});
    out["process_links"] = links;
  }
  return out;
}

}  // namespace fedpar
