// How the server and its client processes reach each other: the server side is a Transport (one
// endpoint, many peers, each named by an identity), a client a Channel to the server. Both move
// framed messages (protocol/frames.h) and know bytes, not training. ZeroMQ carries them over tcp,
// ipc, or inproc (threads sharing one context: a whole run as a unit test).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/check.h"
#include "protocol/frames.h"
#include "transport/curve.h"

namespace fedpar {

using Clock = std::chrono::steady_clock;

// The time point `seconds` from now (the deadlines every receive takes); a wait over 30 years
// (wait_seconds = 1e10: "forever") is 30 years, not an overflow into the past.
inline Clock::time_point deadline_after(double seconds) {
  return std::chrono::time_point_cast<Clock::duration>(
      Clock::now() + std::chrono::duration<double>(std::min(seconds, 1e9)));
}

// Seconds since `t0` (round and compute timings).
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One received multipart message and who sent it. Moving it keeps its frames' memory in place,
// so parsed views into them stay valid.
struct Received {
  std::string peer;
  std::vector<zmq::message_t> frames;  // without the routing identity
  std::vector<std::span<const uint8_t>> spans() const;
  size_t bytes() const;
  std::string peer_address() const;  // the sender's IP as the socket saw it ("" if unknown)
};

// After install_stop_handlers() (core/stop_signal.h), a stop signal makes the next receive
// throw Interrupted.

// A send to a peer that is not connected (its process died, or its connection dropped and has
// not come back) or whose queue is full: nothing was sent.
class PeerUnreachable : public Error {
 public:
  using Error::Error;
};

// The server's side: binds one endpoint; every peer that connects is named by its identity.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual const std::string& endpoint() const = 0;  // as bound (a tcp port * resolved)
  // Returns the bytes of the message's frames (the identity is the transport's, not ours);
  // throws PeerUnreachable when `peer` is not connected now.
  virtual size_t send(const std::string& peer, const WireMessage& m) = 0;
  // The next message, or nullopt at the deadline.
  virtual std::optional<Received> receive(Clock::time_point deadline) = 0;
  // The virtual clients `peer` hosts, once dealt (a shaped transport picks its link from them).
  virtual void assign(const std::string& /*peer*/, const std::vector<uint32_t>& /*clients*/) {}
  // False once the connection `peer`'s last message came on has closed (its process died, or
  // the connection dropped and no message has come on a new one yet): no answer is on its way.
  // A peer not heard from yet, or one whose connection cannot be told (inproc), counts as
  // connected.
  virtual bool connected(const std::string& /*peer*/) const { return true; }
  // Drops what the transport remembers of `peer` (not one of the run's: a stranger's connection
  // is not worth keeping, however many come).
  virtual void forget(const std::string& /*peer*/) {}
};

// A client's connection to the server.
class Channel {
 public:
  virtual ~Channel() = default;
  virtual size_t send(const WireMessage& m) = 0;
  virtual std::optional<Received> receive(Clock::time_point deadline) = 0;
  // How the connection stands, for a client still waiting for the server's first answer.
  enum class State {
    kUnknown,      // the channel cannot tell (or nothing has happened yet)
    kNoListener,   // connection attempts fail: nothing accepts connections there
    kNoHandshake,  // connected, but no ZeroMQ handshake completed: not a ZeroMQ peer?
    kGreeted,      // a handshake completed: a server is there
    kRefused,      // handshakes fail: [security] keys that do not match
    kNoAddress,    // the host name has no address (yet, or a typo)
  };
  virtual State state() const { return State::kUnknown; }
  // Connections made so far (handshakes completed; 0 where the channel cannot tell): one more
  // than before is a reconnection, after which a client waiting for its WELCOME says HELLO again
  // (the server may have given its place up meanwhile).
  virtual int sessions() const { return 0; }
};
// One line a waiting client prints for `s` ("" for kUnknown).
std::string describe(Channel::State s);

// ZeroMQ ROUTER / DEALER. `ctx` null: a context of its own; inproc endpoints need the peers'
// context shared. Throws Error naming the endpoint when it cannot bind or connect. A peer that
// sends a frame of more than `max_frame_bytes` (-1: no limit) is disconnected by ZeroMQ before
// the frame is buffered (tcp and ipc; inproc peers share memory and are not checked).
// With `curve`, the socket speaks CURVE only (transport/curve.h): peers whose key is not on its
// allow-list are refused and logged (unless `quiet`) before any message of theirs is read.
std::unique_ptr<Transport> bind_zmq_transport(const std::string& endpoint,
                                              zmq::context_t* ctx = nullptr,
                                              int64_t max_frame_bytes = -1,
                                              const CurveServer* curve = nullptr,
                                              bool quiet = false);
// A client's DEALER: frames above `max_frame_bytes` from the server (-1: no limit) drop the
// connection unread, as on the server's side.
std::unique_ptr<Channel> connect_zmq_channel(const std::string& endpoint,
                                             zmq::context_t* ctx = nullptr,
                                             int64_t max_frame_bytes = -1,
                                             const CurveClient* curve = nullptr);

// Sends `m` on a ZeroMQ socket, preceded by a routing identity when one is given. Vector frames go
// to ZeroMQ without a copy when `m.owner` holds their memory (ZeroMQ releases it once sent).
// Returns the bytes sent; nullopt when `flags` has dontwait and the socket would block.
std::optional<size_t> send_message(zmq::socket_t& sock, const WireMessage& m,
                                   const std::string* identity = nullptr,
                                   zmq::send_flags flags = zmq::send_flags::none);

}  // namespace fedpar
