// The ZeroMQ transport and channel; see transport.h.
#include "transport/transport.h"

#include <fmt/format.h>

#include <csignal>
#include <zmq_addon.hpp>

#include "core/check.h"

namespace fedpar {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

// Waits for `sock` to be readable until the deadline, in slices of at most 100 ms: a stop signal
// may be handled on another thread (OpenMP's), which leaves this thread's poll uninterrupted.
bool wait_readable(zmq::socket_t& sock, Clock::time_point deadline) {
  while (true) {
    if (g_stop_signal) throw Error(fmt::format("stopped by signal {}", int(g_stop_signal)));
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, std::min(left, std::chrono::milliseconds(100))) > 0) return true;
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

// Owns a context unless it was given one (inproc peers share theirs).
class ZmqSocket {
 public:
  ZmqSocket(zmq::context_t* ctx, zmq::socket_type type)
      : own_(ctx ? nullptr : std::make_unique<zmq::context_t>()), sock_(ctx ? *ctx : *own_, type) {}
  zmq::socket_t& get() { return sock_; }

 private:
  std::unique_ptr<zmq::context_t> own_;
  zmq::socket_t sock_;
};

class ZmqTransport final : public Transport {
 public:
  ZmqTransport(const std::string& endpoint, zmq::context_t* ctx, int64_t max_frame_bytes)
      : sock_(ctx, zmq::socket_type::router) {
    sock_.get().set(zmq::sockopt::linger, 2000);  // lets the final STOP reach the clients on close
    sock_.get().set(zmq::sockopt::maxmsgsize, max_frame_bytes);
    try {
      sock_.get().bind(endpoint);
    } catch (const zmq::error_t& e) {
      throw Error(fmt::format("cannot bind {}: {}", endpoint, e.what()));
    }
    endpoint_ = sock_.get().get(zmq::sockopt::last_endpoint);
  }
  const std::string& endpoint() const override { return endpoint_; }
  size_t send(const std::string& peer, const WireMessage& m) override {
    return send_message(sock_.get(), m, &peer);
  }
  std::optional<Received> receive(Clock::time_point deadline) override {
    if (!wait_readable(sock_.get(), deadline)) return std::nullopt;
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(sock_.get(), std::back_inserter(parts), zmq::recv_flags::dontwait))
      return std::nullopt;
    Received r;
    r.peer = parts[0].to_string();
    for (size_t i = 1; i < parts.size(); ++i) r.frames.push_back(std::move(parts[i]));
    return r;
  }

 private:
  ZmqSocket sock_;
  std::string endpoint_;
};

class ZmqChannel final : public Channel {
 public:
  ZmqChannel(const std::string& endpoint, zmq::context_t* ctx)
      : sock_(ctx, zmq::socket_type::dealer) {
    sock_.get().set(zmq::sockopt::linger, 0);
    try {
      sock_.get().connect(endpoint);
    } catch (const zmq::error_t& e) {
      throw Error(fmt::format("cannot connect to {}: {}", endpoint, e.what()));
    }
  }
  size_t send(const WireMessage& m) override { return send_message(sock_.get(), m); }
  std::optional<Received> receive(Clock::time_point deadline) override {
    if (!wait_readable(sock_.get(), deadline)) return std::nullopt;
    Received r;
    if (!zmq::recv_multipart(sock_.get(), std::back_inserter(r.frames), zmq::recv_flags::dontwait))
      return std::nullopt;
    return r;
  }

 private:
  ZmqSocket sock_;
};

}  // namespace

std::vector<std::span<const uint8_t>> Received::spans() const {
  std::vector<std::span<const uint8_t>> s;
  for (const auto& f : frames) s.emplace_back(static_cast<const uint8_t*>(f.data()), f.size());
  return s;
}

size_t Received::bytes() const {
  size_t n = 0;
  for (const auto& f : frames) n += f.size();
  return n;
}

std::string Received::peer_address() const {
  if (frames.empty()) return "";
  try {
    return const_cast<zmq::message_t&>(frames[0]).gets("Peer-Address");  // gets() is not const
  } catch (const zmq::error_t&) {
    return "";  // inproc and ipc have none
  }
}

void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

std::unique_ptr<Transport> bind_zmq_transport(const std::string& endpoint, zmq::context_t* ctx,
                                              int64_t max_frame_bytes) {
  return std::make_unique<ZmqTransport>(endpoint, ctx, max_frame_bytes);
}

std::unique_ptr<Channel> connect_zmq_channel(const std::string& endpoint, zmq::context_t* ctx) {
  return std::make_unique<ZmqChannel>(endpoint, ctx);
}

size_t send_message(zmq::socket_t& sock, const WireMessage& m, const std::string* identity) {
  std::vector<zmq::message_t> parts;
  if (identity) parts.emplace_back(identity->data(), identity->size());
  size_t bytes = 0;
  for (const auto& f : m.frames) {
    parts.emplace_back(f.data(), f.size());
    bytes += f.size();
  }
  for (const auto& v : m.vectors) {
    bytes += v.size_bytes();
    if (!m.owner || v.empty()) {
      parts.emplace_back(v.data(), v.size_bytes());
      continue;
    }
    auto* hold = new std::shared_ptr<const void>(m.owner);  // released by ZeroMQ's free function
    parts.emplace_back(
        const_cast<float*>(v.data()), v.size_bytes(),
        [](void*, void* h) { delete static_cast<std::shared_ptr<const void>*>(h); }, hold);
  }
  zmq::send_multipart(sock, parts);
  return bytes;
}

}  // namespace fedpar
