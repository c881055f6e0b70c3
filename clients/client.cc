// The client's loop; see client.h.
#include "clients/client.h"

#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "clients/allreduce_worker.h"
#include "clients/local_update.h"
#include "clients/master_worker.h"
#include "clients/straggle.h"
#include "core/hash.h"
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
  log(fmt::format("hosting {} virtual client(s)", ids.size()));

  std::optional<AllReduceWorker> ring;
  if (s.topology == Topology::kAllReduce) {
    ring.emplace(ctx, s);
    send(sock, encode_message(MessageType::kRing, 0, run, 0, {{"endpoint", ring->endpoint()}}));
  }
  std::optional<MasterWorker> master;
  if (s.topology == Topology::kMaster) master.emplace(*be, s.model, data.train);

  // Replies with `vs` (the update and what goes with it), owned by the message until ZeroMQ has sent it.
  auto reply = [&](uint32_t client, uint64_t round, const nlohmann::json& body, std::vector<std::vector<float>> vs) {
    auto owned = std::make_shared<std::vector<std::vector<float>>>(std::move(vs));
    std::vector<std::span<const float>> vecs(owned->begin(), owned->end());
    send(sock, encode_message(MessageType::kUpdate, client, run, round, body, vecs, owned));
  };
  auto shard_of = [&](uint32_t c) -> const std::vector<uint32_t>* {
    auto it = shards.find(c);
    return it == shards.end() ? nullptr : &it->second;  // the TASK lists every participant
  };

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
    if (m.header.type == MessageType::kRing && ring) {
      ring->join(int(need<int64_t>(m.body, "rank")), int(need<int64_t>(m.body, "size")),
                 need<std::string>(m.body, "next"));
      continue;
    }
    if (m.header.type != MessageType::kTask) {
      log(fmt::format("ignored an unexpected {} message", message_type_name(m.header.type)));
      continue;
    }
    const std::string kind = need<std::string>(m.body, "kind");
    const uint64_t round = m.header.round;

    if (kind == "allreduce" && ring) {
      if (!m.vectors.empty()) ring->set_replica(m.vectors[0]);  // the first task carries the model
      AllReduceStep st;
      try {
        st = ring->step(model, data.train, shards, need<int64_t>(m.body, "batch"), round,
                        need<double>(m.body, "total_weight"), buffer);
      } catch (const Error& e) {  // tell the server why before leaving: it stops the run with it
        send(sock, encode_message(MessageType::kError, uint32_t(ring->rank()), run, round, {{"reason", e.what()}}));
        throw;
      }
      nlohmann::json body = {{"num_samples", st.num_samples}, {"loss_sum", st.loss_sum},
                             {"compute_seconds", st.compute_seconds}, {"allreduce_seconds", st.allreduce_seconds},
                             {"ring_bytes_sent", st.ring_bytes_sent}, {"ring_bytes_received", st.ring_bytes_received},
                             {"parameter_bytes", model.parameter_bytes()},
                             {"activation_bytes", model.activation_bytes_held()}};
      if (m.body.value("hash", false))
        body["hash"] = hash_hex(hash_bytes(ring->replica().data(), ring->replica().size() * sizeof(float)));
      std::vector<std::vector<float>> vs;
      if (m.body.value("send_params", false)) vs.push_back(ring->replica());
      reply(uint32_t(ring->rank()), round, body, std::move(vs));
      continue;
    }

    if ((kind == "forward" || kind == "backward") && master) {
      const auto clients = need<std::vector<uint32_t>>(m.body, "clients");
      size_t v = 0;  // backward: one dlogits vector per client listed, in order
      for (uint32_t c : clients) {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<float> out;
        nlohmann::json body;
        if (kind == "forward") {
          const auto* shard = shard_of(c);
          if (!shard) continue;
          if (m.vectors.size() != 1) throw Error("malformed message from the server: forward without the model");
          const auto rows = gradient_batch(*shard, need<int64_t>(m.body, "batch"), s.seed, c, round);
          out = master->forward(c, rows, m.vectors[0]);
          body = {{"phase", "logits"}, {"num_samples", rows.size()}};
        } else {
          if (v >= m.vectors.size()) throw Error("malformed message from the server: fewer dlogits than clients");
          out = master->backward(c, m.vectors[v++]);
          body = {{"phase", "gradient"}, {"parameter_bytes", model.parameter_bytes()}};
        }
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        body["compute_seconds"] = straggle(s, c, secs);
        std::vector<std::vector<float>> vs;
        vs.push_back(std::move(out));
        reply(c, round, body, std::move(vs));
      }
      continue;
    }

    if ((kind != "gradient" && kind != "local") || m.vectors.size() != 1 || m.vectors[0].size() != model.num_params()) {
      log(fmt::format("ignored a TASK of kind '{}' this process cannot serve", kind));
      continue;
    }
    Task task;
    task.kind = kind == "gradient" ? TaskKind::kGradient : TaskKind::kLocalTrain;
    // Async tasks name their batch draw (the client's task count); synchronous ones use the round.
    task.round = m.body.value("draw", round);
    task.batch = need<int64_t>(m.body, "batch");
    task.local_steps = int(need<int64_t>(m.body, "steps"));
    task.local_epochs = int(need<int64_t>(m.body, "epochs"));
    task.lr = float(need<double>(m.body, "lr"));
    task.sgd.momentum = float(need<double>(m.body, "momentum"));
    task.drift = m.body.value("drift", false);
    for (uint32_t c : need<std::vector<uint32_t>>(m.body, "clients")) {
      const auto* shard = shard_of(c);
      if (!shard) continue;
      const auto t0 = std::chrono::steady_clock::now();
      LocalResult r = compute_update(model, data.train, *shard, m.vectors[0], task, s.seed, c, &buffer);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // The update (and, for drift, the linear update after it) goes out without a copy.
      std::vector<std::vector<float>> vs;
      vs.push_back(std::move(r.values));
      if (task.drift) vs.push_back(std::move(r.linear));
      reply(c, round,
            {{"num_samples", r.num_samples}, {"loss_sum", r.loss_sum},
             {"samples_processed", r.samples_processed}, {"compute_seconds", straggle(s, c, secs)},
             {"parameter_bytes", model.parameter_bytes()},
             {"activation_bytes", model.activation_bytes_held()}},
            std::move(vs));
    }
  }
}

}  // namespace fedpar
