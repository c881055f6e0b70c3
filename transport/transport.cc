// The ZeroMQ transport and channel; see transport.h.
#include "transport/transport.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <random>
#include <zmq_addon.hpp>

#include "core/check.h"
#include "core/stop_signal.h"
#include "transport/zmq_interrupted.h"

namespace fedpar {
namespace {

// Why a tcp:// endpoint's host has no address ("" when it has one, or when the resolver could
// not say). ZeroMQ resolves a host at each connection attempt and retries a name that does not
// exist as it would a server not there yet (right for a cluster's name that appears with its
// server), so a waiting client says which it is.
std::string unknown_host(const std::string& endpoint) {
  if (!endpoint.starts_with("tcp://")) return "";
  std::string host = endpoint.substr(6);
  if (const auto semi = host.find(';'); semi != std::string::npos) host.erase(0, semi + 1);
  host = host.substr(0, host.rfind(':'));
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found) ::freeaddrinfo(found);
  if (rc != EAI_NONAME && rc != EAI_NODATA && rc != EAI_FAIL) return "";
  return fmt::format("no address for the host '{}' ({})", host, ::gai_strerror(rc));
}

// ZMTP heartbeats end a connection whose peer sent no whole message for this long (its host
// vanished: no FIN, no RST). libzmq restarts the count only when a message completes, and a PONG
// waits behind the frame its sender is sending, so the wait must outlast the slowest frame: a
// 100 MB model at 15 Mbit/s.
constexpr int kHeartbeatTimeoutMs = 60'000;

// A ping every second; a connection silent for kHeartbeatTimeoutMs ends.
void set_heartbeats(zmq::socket_t& sock) {
  sock.set(zmq::sockopt::heartbeat_ivl, 1000);
  sock.set(zmq::sockopt::heartbeat_timeout, kHeartbeatTimeoutMs);
}

// 16 random bytes naming a client process to the server's ROUTER for the whole run (a leading
// zero byte is ZeroMQ's, so the first is never 0). Unguessable, so no other peer can take it.
std::string random_routing_id() {
  std::random_device rd;
  std::string id(16, '\0');
  for (char& b : id) b = char(rd());
  id[0] = char(uint8_t(id[0]) | 1u);
  return id;
}

// Owns a context unless it was given one (inproc peers share theirs).
class ZmqSocket {
 public:
  ZmqSocket(zmq::context_t* ctx, zmq::socket_type type)
      : own_(ctx ? nullptr : std::make_unique<zmq::context_t>()),
        ctx_(ctx),
        sock_(ctx ? *ctx : *own_, type) {}
  zmq::socket_t& get() { return sock_; }
  zmq::context_t& context() { return own_ ? *own_ : *ctx_; }

 private:
  std::unique_ptr<zmq::context_t> own_;
  zmq::context_t* ctx_;
  zmq::socket_t sock_;
};

class ZmqTransport final : public Transport {
 public:
  ZmqTransport(const std::string& endpoint, zmq::context_t* ctx, int64_t max_frame_bytes,
               const CurveServer* curve, bool quiet)
      : sock_(ctx, zmq::socket_type::router) {
    sock_.get().set(zmq::sockopt::linger, 2000);  // lets the final STOP reach the clients on close
    sock_.get().set(zmq::sockopt::maxmsgsize, max_frame_bytes);
    // A client that reconnects (its TCP connection dropped) comes back with its routing id: the
    // new connection takes the name over, so the server still knows the process.
    sock_.get().set(zmq::sockopt::router_handover, true);
    // A send to a peer that is not connected fails (PeerUnreachable) instead of vanishing, so
    // the engine need not wait out a deadline for an answer to a task that never left.
    sock_.get().set(zmq::sockopt::router_mandatory, true);
    // ZMTP heartbeats end the connection of a peer whose host vanished (no FIN, no RST), so
    // sends to it fail too rather than queue for ever.
    set_heartbeats(sock_.get());
    if (curve) {  // the guard answers ZAP before the first peer can connect
      guard_ = std::make_unique<CurveGuard>(sock_.context(), &sock_.get(), curve->allowed, quiet);
      make_curve_server(sock_.get(), *curve);
    }
    try {
      sock_.get().bind(endpoint);
    } catch (const zmq::error_t& e) {
      throw Error(fmt::format(
          "cannot bind {}: {} ({})", endpoint, e.what(),
          e.num() == EADDRINUSE
              ? "another process listens there: pick another port, or port * for a free one"
              : "bind takes tcp://ADDRESS:PORT with an address of this host (tcp://0.0.0.0:PORT "
                "for every interface, tcp://127.0.0.1:PORT for this machine alone: a host name "
                "is not looked up), or ipc://PATH"));
    }
    endpoint_ = sock_.get().get(zmq::sockopt::last_endpoint);
  }
  const std::string& endpoint() const override { return endpoint_; }
  size_t send(const std::string& peer, const WireMessage& m) override {
    try {
      // never blocks: a peer whose queue is full (it stopped reading) is unreachable too
      if (const auto bytes = send_message(sock_.get(), m, &peer, zmq::send_flags::dontwait))
        return *bytes;
      throw PeerUnreachable("the peer's queue is full");
    } catch (const zmq::error_t& e) {
      if (e.num() != EHOSTUNREACH) throw;
      throw PeerUnreachable("the peer is not connected");
    }
  }
  std::optional<Received> receive(Clock::time_point deadline) override {
    if (!wait_readable(sock_.get(), deadline)) return std::nullopt;
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(sock_.get(), std::back_inserter(parts), zmq::recv_flags::dontwait))
      return std::nullopt;
    Received r;
    r.peer = parts[0].to_string();
    note_connection(r.peer, parts);
    for (size_t i = 1; i < parts.size(); ++i) r.frames.push_back(std::move(parts[i]));
    return r;
  }
  void forget(const std::string& peer) override { connections_.erase(peer); }
  bool connected(const std::string& peer) const override {
    const auto it = connections_.find(peer);
    return it == connections_.end() ||
           (it->second.inode != 0 && socket_inode(it->second.fd) == it->second.inode);
  }

 private:
  // A connection is the socket a message came on, told by its file descriptor and the inode
  // behind it: libzmq closes the descriptor when the connection ends, and a descriptor reused by
  // a later connection names another socket inode (tcp and ipc; inproc has no descriptor).
  struct Connection {
    int fd = -1;
    ino_t inode = 0;  // 0: closed already
  };
  static ino_t socket_inode(int fd) {
    struct stat st;
    return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? st.st_ino : 0;
  }
  // The descriptor a message came on, as its frames carry it (not always the routing id's).
  void note_connection(const std::string& peer, std::vector<zmq::message_t>& parts) {
    for (auto& p : parts)
      if (const int fd = zmq_msg_get(p.handle(), ZMQ_SRCFD); fd >= 0) {
        connections_[peer] = {fd, socket_inode(fd)};
        return;
      }
  }

  ZmqSocket sock_;
  std::unique_ptr<CurveGuard> guard_;  // destroyed first: its thread uses sock_'s context
  std::string endpoint_;
  std::map<std::string, Connection> connections_;  // by peer: its last message's
};

class ZmqChannel final : public Channel {
 public:
  ZmqChannel(const std::string& endpoint, zmq::context_t* ctx, int64_t max_frame_bytes,
             const CurveClient* curve)
      : sock_(ctx, zmq::socket_type::dealer), endpoint_(endpoint) {
    // a client that cannot start sends its ERROR and exits: up to a second lets it leave; a
    // server that is gone costs the exit no more
    sock_.get().set(zmq::sockopt::linger, 1000);
    sock_.get().set(zmq::sockopt::maxmsgsize, max_frame_bytes);
    // One name for the whole run: after a dropped connection ZeroMQ reconnects, and the updates
    // queued meanwhile reach the server as this process's (a ROUTER would name a new connection
    // anew and refuse them as a stranger's).
    sock_.get().set(zmq::sockopt::routing_id, random_routing_id());
    // ZMTP heartbeats end a connection whose server host went silent; a server process that
    // died ends it at once. The monitor tells receive() when the connection is gone.
    set_heartbeats(sock_.get());
    static std::atomic<int> channels{0};
    const std::string monitor = fmt::format("inproc://fedpar-channel-monitor-{}", channels++);
    if (zmq_socket_monitor(sock_.get().handle(), monitor.c_str(),
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED | kHandshakeFailed |
                               ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_CONNECT_RETRIED) == 0) {
      monitor_.emplace(sock_.context(), zmq::socket_type::pair);
      monitor_->set(zmq::sockopt::linger, 0);
      monitor_->connect(monitor);
    }
    if (curve) make_curve_client(sock_.get(), *curve);
    try {
      sock_.get().connect(endpoint);
    } catch (const zmq::error_t& e) {
      throw Error(
          fmt::format("cannot connect to {}: {} (an endpoint is tcp://HOST:PORT or "
                      "ipc://PATH)",
                      endpoint, e.what()));
    }
  }
  ~ZmqChannel() override {
    if (monitor_) zmq_socket_monitor(sock_.get().handle(), nullptr, 0);
  }
  size_t send(const WireMessage& m) override { return *send_message(sock_.get(), m); }
  State state() const override {
    if (greeted_) return State::kGreeted;
    if (refused_since_) return State::kRefused;
    if (connected_) return State::kNoHandshake;
    if (!unknown_host(endpoint_).empty()) return State::kNoAddress;
    return retries_ > 0 ? State::kNoListener : State::kUnknown;
  }
  int sessions() const override { return sessions_; }
  std::optional<Received> receive(Clock::time_point deadline) override {
    while (true) {
      if (wait_readable(sock_.get(), std::min(deadline, deadline_after(0.2)))) {
        Received r;
        if (!zmq::recv_multipart(sock_.get(), std::back_inserter(r.frames),
                                 zmq::recv_flags::dontwait))
          return std::nullopt;
        return r;
      }
      throw_if_server_gone();
      if (Clock::now() >= deadline) return std::nullopt;
    }
  }

 private:
  // Reads the monitor's events; a connection lost for kServerGoneSeconds is the end of the run.
  void throw_if_server_gone() {
    if (!monitor_) return;
    std::vector<zmq::message_t> ev;
    while (zmq::recv_multipart(*monitor_, std::back_inserter(ev), zmq::recv_flags::dontwait)) {
      uint16_t id = 0;
      if (!ev.empty() && ev[0].size() >= sizeof id) std::memcpy(&id, ev[0].data(), sizeof id);
      if (id == ZMQ_EVENT_DISCONNECTED && !lost_since_) lost_since_ = Clock::now();
      if (id == ZMQ_EVENT_CONNECTED) lost_since_.reset(), connected_ = true;
      if ((id & kHandshakeFailed) && !refused_since_) refused_since_ = Clock::now();
      if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) refused_since_.reset(), greeted_ = true, ++sessions_;
      if (id == ZMQ_EVENT_CONNECT_RETRIED) ++retries_;
      ev.clear();
    }
    // a server that keeps refusing the handshake is there, but will not take this client
    if (refused_since_ && seconds_since(*refused_since_) > kServerGoneSeconds)
      throw RunFailed(fmt::format(
          "the server at {} has refused this client's handshake for {:.0f} s: a server with "
          "[security] keys lets in only clients started with --key (a key pair whose .pub is on "
          "its allow-list, security.clients) and --server-key (the server's .pub), and a server "
          "without keys refuses a client with them (docs/distributed.md)",
          endpoint_, seconds_since(*refused_since_)));
    if (lost_since_ && seconds_since(*lost_since_) > kServerGoneSeconds)
      throw RunFailed(
          fmt::format("lost the connection to the server at {} {:.0f} s ago and it did "
                      "not come back: the server stopped or its machine is gone",
                      endpoint_, seconds_since(*lost_since_)));
  }
  static constexpr double kServerGoneSeconds = 5;
  static constexpr int kHandshakeFailed = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
  ZmqSocket sock_;
  std::string endpoint_;
  std::optional<zmq::socket_t> monitor_;
  std::optional<Clock::time_point> lost_since_;     // the connection is down since
  std::optional<Clock::time_point> refused_since_;  // the handshakes fail since
  // for state(): a connection was made, a handshake completed, connection attempts failed
  bool connected_ = false, greeted_ = false;
  int retries_ = 0, sessions_ = 0;
};

}  // namespace

std::string describe(Channel::State s) {
  switch (s) {
    case Channel::State::kNoListener:
      return "nothing accepts connections there yet: is the server running, at that host and "
             "port?";
    case Channel::State::kNoHandshake:
      return "connected, but what listens there has not completed a ZeroMQ handshake: is it a "
             "fedpar server's port?";
    case Channel::State::kRefused:
      return "the server refuses the handshake: a server with [security] keys lets in only "
             "clients with --key and --server-key, and one without keys refuses a client with "
             "them";
    case Channel::State::kNoAddress:
      return "the host name has no address (yet?): is it spelled right?";
    case Channel::State::kGreeted:
      return "connected to the server, which starts the run once all its client processes have "
             "said HELLO";
    case Channel::State::kUnknown:
      break;
  }
  return "";
}

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

std::unique_ptr<Transport> bind_zmq_transport(const std::string& endpoint, zmq::context_t* ctx,
                                              int64_t max_frame_bytes, const CurveServer* curve,
                                              bool quiet) {
  return std::make_unique<ZmqTransport>(endpoint, ctx, max_frame_bytes, curve, quiet);
}

std::unique_ptr<Channel> connect_zmq_channel(const std::string& endpoint, zmq::context_t* ctx,
                                             int64_t max_frame_bytes, const CurveClient* curve) {
  return std::make_unique<ZmqChannel>(endpoint, ctx, max_frame_bytes, curve);
}

std::optional<size_t> send_message(zmq::socket_t& sock, const WireMessage& m,
                                   const std::string* identity, zmq::send_flags flags) {
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
  if (!send_parts(sock, parts, flags)) return std::nullopt;  // EAGAIN (dontwait)
  return bytes;
}

}  // namespace fedpar
