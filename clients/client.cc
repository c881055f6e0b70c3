// The client's loop; see client.h.
#include "clients/client.h"

#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "clients/local_update.h"
#include "core/check.h"
#include "core/messages.h"
#include "core/model.h"
#include "server/run_config.h"
#include "server/zmq_frames.h"

namespace fedpar {
namespace {

struct Incoming {
  std::vector<zmq::message_t> frames;
  std::vector<std::span<const uint8_t>> spans() const { return frame_spans(frames); }
};

std::optional<Incoming> receive(zmq::socket_t& sock, double seconds) {
  zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(int64_t(seconds * 1000))) == 0) return std::nullopt;
  Incoming in;
  if (!zmq::recv_multipart(sock, std::back_inserter(in.frames), zmq::recv_flags::dontwait))
    return std::nullopt;
  return in;
}

void send(zmq::socket_t& sock, const WireMessage& m) { send_message(sock, m); }

template <typename T>
T need(const nlohmann::json& body, const char* name) {
  auto v = field<T>(body, name);
  if (auto* e = std::get_if<ProtocolError>(&v)) throw Error("malformed message from the server: " + e->reason);
  return std::get<T>(v);
}

}  // namespace

int run_client(const ClientOptions& o) {
  if (o.slots < 1) throw Error("--slots must be >= 1");
  zmq::context_t ctx;
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 0);
  try {
    sock.connect(o.server);
  } catch (const zmq::error_t& e) {
    throw Error(fmt::format("cannot connect to {}: {}", o.server, e.what()));
  }
  auto log = [&](const std::string& s) {
    if (!o.quiet) fmt::print(stderr, "client {}: {}\n", ::getpid(), s);
  };
  send(sock, encode_message(MessageType::kHello, 0, 0, 0, {{"slots", o.slots}, {"pid", ::getpid()}}));

  auto first = receive(sock, o.wait_seconds);
  if (!first) throw Error(fmt::format("no answer from the server at {} within {} s", o.server, o.wait_seconds));
  auto welcome = parse_message(first->spans());
  if (auto* e = std::get_if<ProtocolError>(&welcome)) throw Error("bad WELCOME: " + e->reason);
  const ParsedMessage& w = std::get<ParsedMessage>(welcome);
  if (w.header.type == MessageType::kError)
    throw Error("the server refused us: " + w.body.value("reason", std::string("?")));
  if (w.header.type != MessageType::kWelcome)
    throw Error(fmt::format("expected WELCOME, got {}", message_type_name(w.header.type)));

  Config cfg = make_run_config();
  cfg.merge_toml(need<std::string>(w.body, "config"), "WELCOME");
  const RunSetup s = resolve_run_setup(cfg);
  const auto ids = need<std::vector<uint32_t>>(w.body, "clients");
  const auto& shards_json = w.body.at("shards");
  std::map<uint32_t, std::vector<uint32_t>> shards;
  for (size_t i = 0; i < ids.size(); ++i) shards[ids[i]] = shards_json.at(i).get<std::vector<uint32_t>>();
  const uint64_t run = w.header.run;

  auto be = make_backend(o.device.empty() ? s.device : o.device, s.threads);
  log(fmt::format("computing on {}", be->describe()));
  TrainTest data = load_dataset(s.data);  // from this machine's own disk
  if (data.train.content_hash() != need<std::string>(w.body, "dataset_hash"))
    throw Error("this machine's dataset differs from the server's (content hash mismatch): "
                "fetch the same data (scripts/setup.sh) or pass the same data options");
  Model model(*be, s.model, data.train.shape, data.train.num_classes);
  BatchBuffer buffer(*be, data.train.dim());  // a full shard stays loaded across rounds
  const std::vector<size_t> expect = {model.num_params()};
  log(fmt::format("hosting {} virtual client(s)", ids.size()));

  while (true) {
    auto msg = receive(sock, o.wait_seconds);
    if (!msg) throw Error(fmt::format("the server was silent for {} s; giving up", o.wait_seconds));
    auto parsed = parse_message(msg->spans(), {});
    if (auto* e = std::get_if<ProtocolError>(&parsed)) {
      log("dropped a malformed message from the server: " + e->reason);
      continue;
    }
    const ParsedMessage& m = std::get<ParsedMessage>(parsed);
    if (m.header.type == MessageType::kStop) return 0;
    if (m.header.type == MessageType::kError) {
      log("the server rejected a message: " + m.body.value("reason", std::string("?")));
      continue;
    }
    if (m.header.type != MessageType::kTask || m.vectors.size() != 1 || m.vectors[0].size() != expect[0]) {
      log(fmt::format("ignored an unexpected {} message", message_type_name(m.header.type)));
      continue;
    }
    Task task;
    task.kind = need<std::string>(m.body, "kind") == "gradient" ? TaskKind::kGradient : TaskKind::kLocalTrain;
    task.round = m.header.round;
    task.batch = need<int64_t>(m.body, "batch");
    task.local_steps = int(need<int64_t>(m.body, "steps"));
    task.local_epochs = int(need<int64_t>(m.body, "epochs"));
    task.lr = float(need<double>(m.body, "lr"));
    task.sgd.momentum = float(need<double>(m.body, "momentum"));
    task.drift = m.body.value("drift", false);
    for (uint32_t c : need<std::vector<uint32_t>>(m.body, "clients")) {
      auto it = shards.find(c);
      if (it == shards.end()) continue;  // the TASK lists every participant; another process hosts c
      const auto t0 = std::chrono::steady_clock::now();
      LocalResult r = compute_update(model, data.train, it->second, m.vectors[0], task, s.seed, c, &buffer);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // The update (and, for drift, the linear update after it) goes out without a copy.
      auto owned = std::make_shared<std::pair<std::vector<float>, std::vector<float>>>(
          std::move(r.values), std::move(r.linear));
      std::vector<std::span<const float>> vecs = {owned->first};
      if (task.drift) vecs.push_back(owned->second);
      send(sock, encode_message(MessageType::kUpdate, c, run, task.round,
                                {{"num_samples", r.num_samples}, {"loss_sum", r.loss_sum},
                                 {"samples_processed", r.samples_processed}, {"compute_seconds", secs},
                                 {"parameter_bytes", model.parameter_bytes()},
                                 {"activation_bytes", model.activation_bytes_held()}},
                                vecs, owned));
    }
  }
}

}  // namespace fedpar
