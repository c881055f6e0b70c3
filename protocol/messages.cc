// Typed messages: one encode and one decode each; see messages.h.
#include "protocol/messages.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

namespace fedpar {
namespace {

constexpr std::array<std::pair<TaskKind, const char*>, 8> kKinds = {
    {{TaskKind::kGradient, "gradient"},
     {TaskKind::kLocalTrain, "local"},
     {TaskKind::kForward, "forward"},
     {TaskKind::kBackward, "backward"},
     {TaskKind::kAllReduce, "allreduce"},
     {TaskKind::kPipeline, "pipeline"},
     {TaskKind::kTensor, "tensor"},
     {TaskKind::kState, "state"}}};

// A ring rank's or a model-parallel process's report (its links' time and bytes, its hash).
bool worker_report(TaskKind k) {
  return k == TaskKind::kAllReduce || k == TaskKind::kPipeline || k == TaskKind::kTensor;
}

std::optional<TaskKind> kind_named(const std::string& name) {
  for (const auto& [k, n] : kKinds)
    if (name == n) return k;
  return std::nullopt;
}

// Reads fields one by one; the first failure is kept and every later read is skipped, so a decode
// is a list of reads and one check at the end.
class Reader {
 public:
  explicit Reader(const nlohmann::json& body) : body_(body) {}

  template <typename T>
  void get(const char* name, T& into) {
    if (error_) return;
    auto v = field<T>(body_, name);
    if (auto* e = std::get_if<ProtocolError>(&v))
      error_ = *e;
    else
      into = std::move(std::get<T>(v));
  }
  template <typename T>
  void get_optional(const char* name, T& into) {
    if (body_.contains(name)) get(name, into);
  }
  void get_kind(const char* name, TaskKind& into) {
    std::string s;
    get(name, s);
    if (error_) return;
    if (auto k = kind_named(s))
      into = *k;
    else
      fail(
          fmt::format("field '{}' names no task kind ('{}'; expected gradient, local, forward, "
                      "backward, allreduce, pipeline or tensor)",
                      name, s));
  }
  void require(bool ok, const std::string& why) {
    if (!error_ && !ok) fail(why);
  }
  void fail(std::string why) { error_ = ProtocolError{std::move(why)}; }

  template <typename T>
  Decoded<T> result(T&& value) {
    if (error_) return *error_;
    return std::forward<T>(value);
  }

 private:
  const nlohmann::json& body_;
  std::optional<ProtocolError> error_;
};

// The header's type must be `t`; names what came instead.
std::optional<ProtocolError> wrong_type(const ParsedMessage& p, MessageType t) {
  if (p.header.type == t) return std::nullopt;
  return ProtocolError{
      fmt::format("expected {}, got {}", message_type_name(t), message_type_name(p.header.type))};
}

constexpr std::pair<StopOutcome, const char*> kOutcomes[] = {
    {StopOutcome::kCompleted, "completed"},
    {StopOutcome::kStopped, "stopped"},
    {StopOutcome::kFailed, "failed"},
    {StopOutcome::kLeftOut, "left-out"},
};

}  // namespace

const char* stop_outcome_name(StopOutcome o) {
  for (const auto& [outcome, n] : kOutcomes)
    if (outcome == o) return n;
  return "unknown";
}

const char* task_kind_name(TaskKind k) {
  for (const auto& [kind, n] : kKinds)
    if (kind == k) return n;
  return "unknown";
}

WireMessage encode(const HelloMsg& m) {
  nlohmann::json body = {{"slots", m.slots}, {"pid", m.pid}};
  if (!m.run_config.empty()) body["run_config"] = m.run_config;
  if (!m.device.empty()) body["device"] = m.device;
  if (!m.build.empty()) body["build"] = m.build;
  if (!m.machine.empty()) body["machine"] = m.machine;
  return encode_message(MessageType::kHello, 0, 0, 0, std::move(body));
}

WireMessage encode(const WelcomeMsg& m, const Envelope& e) {
  nlohmann::json body = {{"config", m.config_toml},
                         {"clients", m.clients},
                         {"shards", m.shards},
                         {"num_params", m.num_params},
                         {"dataset_hash", m.dataset_hash}};
  if (!m.control_clients.empty()) body["control_clients"] = m.control_clients;
  // vectors: the controls, then the residuals and one vector of their learning rates
  std::vector<std::span<const float>> vectors = m.controls;
  if (!m.residual_clients.empty()) {
    body["residual_clients"] = m.residual_clients;
    vectors.insert(vectors.end(), m.residuals.begin(), m.residuals.end());
    vectors.emplace_back(m.residual_lrs);
  }
  return encode_message(MessageType::kWelcome, e.client, e.run, e.round, body, vectors);
}

WireMessage encode(const RingEndpointMsg& m, const Envelope& e) {
  nlohmann::json body = {{"endpoint", m.endpoint}};
  if (!m.replica_endpoint.empty()) body["replica_endpoint"] = m.replica_endpoint;
  if (!m.key.empty()) body["key"] = m.key;
  return encode_message(MessageType::kRing, e.client, e.run, e.round, body);
}

WireMessage encode(const RingAssignmentMsg& m, const Envelope& e) {
  nlohmann::json body = {{"rank", m.rank}, {"size", m.size}, {"next", m.next}, {"prev", m.prev}};
  if (m.replicas > 1)
    body.update(
        {{"replica", m.replica}, {"replicas", m.replicas}, {"replica_next", m.replica_next}});
  if (m.epoch > 0) body["epoch"] = m.epoch;
  if (!m.nccl_id.empty()) body["nccl_id"] = m.nccl_id;
  if (!m.keys.empty())
    body.update({{"next_key", m.next_key},
                 {"prev_key", m.prev_key},
                 {"replica_next_key", m.replica_next_key},
                 {"keys", m.keys}});
  return encode_message(MessageType::kRing, e.client, e.run, e.round, body);
}

WireMessage encode(TaskMsg m, const Envelope& e, std::shared_ptr<const void> owner) {
  nlohmann::json body = {
      {"kind", task_kind_name(m.kind)}, {"clients", m.clients}, {"batch", m.batch}};
  switch (m.kind) {
    case TaskKind::kGradient:
    case TaskKind::kLocalTrain:
      body.update({{"steps", m.steps},
                   {"epochs", m.epochs},
                   {"lr", m.lr},
                   {"momentum", m.momentum},
                   {"drift", m.drift}});
      if (m.draw) body["draw"] = *m.draw;
      if (m.delta) body["delta"] = true;
      if (m.control) body["control"] = true;
      break;
    case TaskKind::kAllReduce:
      body.update(
          {{"total_weight", m.total_weight}, {"hash", m.hash}, {"send_params", m.send_params}});
      if (m.send_state) body["send_state"] = true;
      break;
    case TaskKind::kPipeline:
    case TaskKind::kTensor:
      body.update({{"hash", m.hash}, {"send_params", m.send_params}});
      if (m.send_state) body["send_state"] = true;
      break;
    case TaskKind::kForward:
    case TaskKind::kBackward:
    case TaskKind::kState:
      break;
  }
  return encode_message(MessageType::kTask, e.client, e.run, e.round, body, m.vectors,
                        std::move(owner), std::move(m.encoded));
}

WireMessage encode(UpdateMsg m, const Envelope& e, std::shared_ptr<const void> owner) {
  nlohmann::json body = {{"kind", task_kind_name(m.kind)},
                         {"num_samples", m.num_samples},
                         {"loss_sum", m.loss_sum},
                         {"samples_processed", m.samples_processed},
                         {"compute_seconds", m.compute_seconds},
                         {"parameter_bytes", m.parameter_bytes},
                         {"activation_bytes", m.activation_bytes},
                         {"peak_rss_bytes", m.peak_rss_bytes}};
  if (worker_report(m.kind))
    body.update({{"allreduce_seconds", m.allreduce_seconds},
                 {"ring_bytes_sent", m.ring_bytes_sent},
                 {"ring_bytes_received", m.ring_bytes_received},
                 {"replica_seconds", m.replica_seconds},
                 {"replica_bytes_sent", m.replica_bytes_sent},
                 {"replica_bytes_received", m.replica_bytes_received},
                 {"hash", m.hash}});
  if (!m.op_seconds.empty()) body.update({{"op_seconds", m.op_seconds}, {"op_bytes", m.op_bytes}});
  if (m.ring_steps > 0) body["ring_steps"] = m.ring_steps;
  return encode_message(MessageType::kUpdate, e.client, e.run, e.round, body, m.vectors,
                        std::move(owner), std::move(m.encoded));
}

size_t simulation_extra_bytes(const UpdateMsg& m) {
  nlohmann::json extra = nlohmann::json::object();
  if (!m.op_seconds.empty()) extra.update({{"op_seconds", m.op_seconds}, {"op_bytes", m.op_bytes}});
  if (m.ring_steps > 0) extra["ring_steps"] = m.ring_steps;
  // in the body they are members among others: their text less the braces, plus a comma
  return extra.empty() ? 0 : extra.dump().size() - 1;
}

WireMessage encode(const ErrorMsg& m, const Envelope& e) {
  return encode_message(MessageType::kError, e.client, e.run, e.round, {{"reason", m.reason}});
}

WireMessage encode(const StopMsg& m, const Envelope& e) {
  return encode_message(MessageType::kStop, e.client, e.run, e.round,
                        {{"outcome", stop_outcome_name(m.outcome)}, {"reason", m.reason}});
}

WireMessage encode_ready(const Envelope& e) {
  return encode_message(MessageType::kReady, e.client, e.run, e.round, {});
}

WireMessage encode_ping(const Envelope& e) {
  return encode_message(MessageType::kPing, e.client, e.run, e.round, {});
}

Decoded<HelloMsg> decode_hello(const ParsedMessage& p) {
  if (auto e = wrong_type(p, MessageType::kHello)) return *e;
  HelloMsg m;
  Reader r(p.body);
  r.get("slots", m.slots);
  r.get_optional("pid", m.pid);
  r.get_optional("run_config", m.run_config);
  r.get_optional("device", m.device);
  r.get_optional("build", m.build);
  r.get_optional("machine", m.machine);
  r.require(m.slots >= 1 && m.slots <= HelloMsg::kMaxSlots,
            fmt::format("slots must be between 1 and {}", HelloMsg::kMaxSlots));
  r.require(m.run_config.size() <= 64, "run_config must be at most 64 characters");
  // any name: a device the process lacks fails it after WELCOME, which tells the server why
  r.require(m.device.size() <= 64, "device must be at most 64 characters");
  // informational: a long one is cut, not a reason to refuse the process
  if (m.build.size() > 256) m.build.resize(256);
  if (m.machine.size() > 256) m.machine.resize(256);
  return r.result(std::move(m));
}

Decoded<WelcomeMsg> decode_welcome(const ParsedMessage& p) {
  if (auto e = wrong_type(p, MessageType::kWelcome)) return *e;
  WelcomeMsg m;
  Reader r(p.body);
  r.get("config", m.config_toml);
  r.get("clients", m.clients);
  r.get("num_params", m.num_params);
  r.get("dataset_hash", m.dataset_hash);
  const auto shards = p.body.find("shards");
  r.require(shards != p.body.end() && shards->is_array() && shards->size() == m.clients.size(),
            "WELCOME needs 'shards': one list of sample indices per client");
  if (shards != p.body.end() && shards->is_array())
    for (const auto& s : *shards) {
      bool ok = s.is_array();
      for (const auto& i : s) ok = ok && i.is_number_unsigned() && i.get<uint64_t>() <= UINT32_MAX;
      r.require(ok, "WELCOME 'shards' must hold lists of sample indices");
      if (ok) m.shards.push_back(s.get<std::vector<uint32_t>>());
    }
  std::vector<uint32_t> sorted = m.clients;
  std::sort(sorted.begin(), sorted.end());
  r.require(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
            "WELCOME lists a client twice");
  r.get_optional("control_clients", m.control_clients);
  r.get_optional("residual_clients", m.residual_clients);
  const size_t nc = m.control_clients.size(), nr = m.residual_clients.size();
  r.require(nc + nr + (nr > 0) == p.vectors.size(),
            "WELCOME needs one control vector per 'control_clients' entry, one residual per "
            "'residual_clients' entry and their learning rates");
  for (const auto* given : {&m.control_clients, &m.residual_clients})
    for (uint32_t c : *given)
      r.require(std::find(m.clients.begin(), m.clients.end(), c) != m.clients.end(),
                "WELCOME gives a control variate or a residual to a client it does not give");
  if (nc + nr + (nr > 0) != p.vectors.size()) return r.result(std::move(m));
  for (size_t i = 0; i < nc + nr; ++i) {
    r.require(p.vectors[i].size() == m.num_params,
              "WELCOME's control and residual vectors must have num_params values");
    (i < nc ? m.controls : m.residuals).push_back(p.vectors[i]);
  }
  if (nr > 0) {
    const auto lrs = p.vectors.back();
    r.require(lrs.size() == nr, "WELCOME needs one learning rate per residual");
    m.residual_lrs.assign(lrs.begin(), lrs.end());
  }
  return r.result(std::move(m));
}

Decoded<RingEndpointMsg> decode_ring_endpoint(const ParsedMessage& p) {
  if (auto e = wrong_type(p, MessageType::kRing)) return *e;
  RingEndpointMsg m;
  Reader r(p.body);
  r.get("endpoint", m.endpoint);
  r.get_optional("replica_endpoint", m.replica_endpoint);
  r.get_optional("key", m.key);
  r.require(!m.endpoint.empty(), "RING without the worker's endpoint");
  return r.result(std::move(m));
}

Decoded<RingAssignmentMsg> decode_ring_assignment(const ParsedMessage& p) {
  if (auto e = wrong_type(p, MessageType::kRing)) return *e;
  RingAssignmentMsg m;
  Reader r(p.body);
  r.get("rank", m.rank);
  r.get("size", m.size);
  r.get("next", m.next);
  r.get_optional("prev", m.prev);
  r.get_optional("replica", m.replica);
  r.get_optional("replicas", m.replicas);
  r.get_optional("replica_next", m.replica_next);
  r.get_optional("next_key", m.next_key);
  r.get_optional("prev_key", m.prev_key);
  r.get_optional("replica_next_key", m.replica_next_key);
  r.get_optional("keys", m.keys);
  r.get_optional("epoch", m.epoch);
  r.get_optional("nccl_id", m.nccl_id);
  r.require(m.epoch >= 0 && m.epoch < (1 << 16), fmt::format("ring epoch {}", m.epoch));
  r.require(
      m.nccl_id.empty() || (m.nccl_id.size() == 256 &&
                            m.nccl_id.find_first_not_of("0123456789abcdef") == std::string::npos),
      "nccl_id is not 256 lowercase hex digits");
  r.require(m.replicas >= 1 && m.replica >= 0 && m.replica < m.replicas,
            fmt::format("replica {} of {}", m.replica, m.replicas));
  r.require(m.size >= 1 && m.rank >= 0 && m.rank < m.size,
            fmt::format("rank {} of a ring of {}", m.rank, m.size));
  return r.result(std::move(m));
}

Decoded<TaskMsg> decode_task(const ParsedMessage& p) {
  if (auto e = wrong_type(p, MessageType::kTask)) return *e;
  TaskMsg m;
  Reader r(p.body);
  r.get_kind("kind", m.kind);
  r.get("clients", m.clients);
  r.get("batch", m.batch);
  r.require(m.batch >= 0, "batch must be >= 0");
  switch (m.kind) {
    case TaskKind::kGradient:
    case TaskKind::kLocalTrain: {
      r.get("steps", m.steps);
      r.get("epochs", m.epochs);
      r.get("lr", m.lr);
      r.get("momentum", m.momentum);
      r.get("drift", m.drift);
      uint64_t draw = 0;
      if (p.body.contains("draw")) r.get("draw", draw), m.draw = draw;
      r.get_optional("delta", m.delta);
      r.get_optional("control", m.control);
      r.require(m.steps >= 1 && m.epochs >= 0, "steps must be >= 1 and epochs >= 0");
      r.require(!m.control || m.kind == TaskKind::kLocalTrain,
                "only a local-train task carries a control");
      r.require(p.vectors.size() == 1 + size_t(m.control),
                m.control ? "a SCAFFOLD task carries the model and the control"
                          : "a training task carries the model");
      break;
    }
    case TaskKind::kForward:
      r.require(p.vectors.size() == 1, "a forward task carries the model");
      break;
    case TaskKind::kBackward:
      r.require(p.vectors.size() == m.clients.size(),
                "a backward task carries one dlogits vector per client");
      break;
    case TaskKind::kAllReduce:
      r.get("total_weight", m.total_weight);
      r.get("hash", m.hash);
      r.get("send_params", m.send_params);
      r.get_optional("send_state", m.send_state);
      r.require(m.total_weight > 0, "total_weight must be > 0");
      r.require(!m.send_state || m.send_params, "send_state comes with send_params");
      r.require(p.vectors.size() <= 2,
                "an allreduce task carries the model (and its velocity), or nothing");
      break;
    case TaskKind::kPipeline:
    case TaskKind::kTensor:
      r.get("hash", m.hash);
      r.get("send_params", m.send_params);
      r.get_optional("send_state", m.send_state);
      r.require(!m.send_state || m.send_params, "send_state comes with send_params");
      r.require(p.vectors.size() <= 2,
                "a model-parallel task carries the model (and its velocity), or nothing");
      break;
    case TaskKind::kState:
      r.require(p.vectors.empty(), "a state task carries no vector");
      break;
  }
  m.vectors = p.vectors;
  return r.result(std::move(m));
}

Decoded<UpdateMsg> decode_update(const ParsedMessage& p) {
  if (auto e = wrong_type(p, MessageType::kUpdate)) return *e;
  UpdateMsg m;
  Reader r(p.body);
  r.get_kind("kind", m.kind);
  r.get("num_samples", m.num_samples);
  // JSON has no NaN: a non-finite loss travels as null, and the server ends the run as diverged.
  if (const auto it = p.body.find("loss_sum"); it != p.body.end() && it->is_null())
    m.loss_sum = std::numeric_limits<double>::quiet_NaN();
  else
    r.get("loss_sum", m.loss_sum);
  r.get("samples_processed", m.samples_processed);
  r.get("compute_seconds", m.compute_seconds);
  r.get("parameter_bytes", m.parameter_bytes);
  r.get("activation_bytes", m.activation_bytes);
  r.get_optional("peak_rss_bytes", m.peak_rss_bytes);
  if (worker_report(m.kind)) {
    r.get("allreduce_seconds", m.allreduce_seconds);
    r.get("ring_bytes_sent", m.ring_bytes_sent);
    r.get("ring_bytes_received", m.ring_bytes_received);
    r.get_optional("replica_seconds", m.replica_seconds);
    r.get_optional("replica_bytes_sent", m.replica_bytes_sent);
    r.get_optional("replica_bytes_received", m.replica_bytes_received);
    r.get("hash", m.hash);
    r.get_optional("op_seconds", m.op_seconds);
    r.get_optional("op_bytes", m.op_bytes);
    r.get_optional("ring_steps", m.ring_steps);
    r.require(m.op_bytes.size() == m.op_seconds.size(),
              "op_seconds and op_bytes must have one entry per op");
    r.require(
        std::ranges::all_of(m.op_seconds, [](double t) { return std::isfinite(t) && t >= 0; }),
        "op_seconds must be finite and >= 0");
    r.require(std::isfinite(m.allreduce_seconds) && m.allreduce_seconds >= 0 &&
                  std::isfinite(m.replica_seconds) && m.replica_seconds >= 0,
              "allreduce_seconds and replica_seconds must be finite and >= 0");
  }
  r.require(m.compute_seconds >= 0, "compute_seconds must be >= 0");
  m.vectors = p.vectors;
  return r.result(std::move(m));
}

Decoded<ErrorMsg> decode_error(const ParsedMessage& p) {
  if (auto e = wrong_type(p, MessageType::kError)) return *e;
  ErrorMsg m;
  Reader r(p.body);
  r.get("reason", m.reason);
  return r.result(std::move(m));
}

Decoded<StopMsg> decode_stop(const ParsedMessage& p) {
  if (auto e = wrong_type(p, MessageType::kStop)) return *e;
  StopMsg m;
  Reader r(p.body);
  std::string outcome;
  r.get("outcome", outcome);
  r.get("reason", m.reason);
  const auto* it =
      std::ranges::find_if(kOutcomes, [&](const auto& o) { return outcome == o.second; });
  r.require(it != std::end(kOutcomes),
            fmt::format("field 'outcome' names no outcome ('{}'; expected completed, stopped, "
                        "failed or left-out)",
                        outcome));
  if (it != std::end(kOutcomes)) m.outcome = it->first;
  return r.result(std::move(m));
}

}  // namespace fedpar
