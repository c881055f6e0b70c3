// Emulated network conditions ([network] mode = "emulated", docs/network.md): decorators of the
// server's Transport and of a client's Channel that hand a received message to the code above only
// at its emulated arrival time. The moment the receiver reads the bytes off the socket (loopback,
// ipc or inproc: microseconds) stands for the send time; each link then serializes its messages at
// its bandwidth and adds latency and jitter:
//   start   = max(received, link free)
//   free    = start + bytes * 8 / bandwidth       (the link is busy until the last bit is out)
//   arrival = max(free + latency + jitter, previous arrival on this link)   (in order, like TCP)
// Messages wait in a delay queue that receive(deadline) drains in arrival order while it keeps
// reading the socket: no extra threads. A lost TASK (downlink) or UPDATE (uplink) is dropped, and
// the engine's deadlines see a missing client. The uplink (client -> server) is shaped at the
// server per client process, the downlink (server -> client) at the client; a process's link is
// the profile of the first virtual client it hosts.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/network.h"
#include "transport/transport.h"

namespace fedpar {

// One direction of one link, in seconds on any clock: pure arithmetic (tested by hand).
class LinkClock {
 public:
  explicit LinkClock(double bps) : bps_(bps) {}
  // The arrival time of a message of `bytes` handed to the link at `now`, with `delay` (latency
  // plus jitter) after its last bit; the link stays busy until that last bit is out.
  double admit(double now, uint64_t bytes, double delay);
  double free_at() const { return free_; }

 private:
  double bps_;
  double free_ = -std::numeric_limits<double>::infinity();
  double last_ = -std::numeric_limits<double>::infinity();
};

// What a lossy message's draws are keyed by (core/network.h): the virtual client of an UPDATE,
// the process's link for a TASK (one goes to the whole process), and the header's round.
struct DrawKey {
  uint32_t id = 0;
  uint64_t round = 0;
};

// One shaped link direction: its clock, profile numbers and the seeded draws of its messages.
class ShapedLink {
 public:
  ShapedLink(double bps, double latency, double jitter, double loss, JitterKind kind, uint64_t seed,
             const char* direction, uint32_t link);
  // The arrival time of `r`, read off the socket at `now`; nullopt: the message is lost. Only
  // messages with a `lossy` key (the round's TASKs and UPDATEs) can be lost: setup and STOP
  // always arrive, with jitter drawn from the link's own count of them.
  std::optional<Clock::time_point> admit(const Received& r, Clock::time_point now,
                                         std::optional<DrawKey> lossy);
  uint64_t lost() const { return lost_; }

 private:
  uint32_t repeat_of(const DrawKey& k);  // messages right before with the same id and round

  LinkClock clock_;
  double latency_, jitter_, loss_;
  JitterKind kind_;
  uint64_t seed_;
  std::string direction_, control_;  // "up", "up-control" (the unlossy messages' jitter)
  uint32_t link_;
  uint64_t control_messages_ = 0, lost_ = 0;
  std::map<uint32_t, std::pair<uint64_t, uint32_t>> last_;  // id -> (its last round, repeats)
};

// Messages held until their arrival time, released in arrival order (ties: in the order read).
class DelayQueue {
 public:
  void hold(Clock::time_point at, Received r);
  std::optional<Clock::time_point> next() const;
  std::optional<Received> pop_due(Clock::time_point now);  // the earliest, if it is due
  size_t size() const { return held_.size(); }
  bool holds_from(const std::string& peer) const;

 private:
  std::map<std::pair<Clock::time_point, uint64_t>, Received> held_;
  uint64_t serial_ = 0;
};

// The server's transport with each client process's uplink shaped. Peers are unshaped until
// assign() names the virtual clients they host (HELLO and WELCOME go as they are).
class ShapedTransport final : public Transport {
 public:
  ShapedTransport(std::unique_ptr<Transport> inner, NetworkSpec n, uint64_t seed);
  const std::string& endpoint() const override { return inner_->endpoint(); }
  size_t send(const std::string& peer, const WireMessage& m) override {
    return inner_->send(peer, m);
  }
  std::optional<Received> receive(Clock::time_point deadline) override;
  void assign(const std::string& peer, const std::vector<uint32_t>& clients) override;
  // A message still on its emulated way is one more to come, whatever the socket says.
  bool connected(const std::string& peer) const override {
    return queue_.holds_from(peer) || inner_->connected(peer);
  }
  void forget(const std::string& peer) override { inner_->forget(peer); }
  // Shapes `peer`'s uplink with `p` from now on; `link` keys its jitter and loss draws.
  void shape(const std::string& peer, const LinkProfile& p, uint32_t link);
  uint64_t lost() const;  // messages dropped so far

 private:
  std::unique_ptr<Transport> inner_;
  NetworkSpec n_;
  uint64_t seed_;
  std::map<std::string, ShapedLink> links_;
  // The clients each shaped peer hosts: only their UPDATEs are lossy draws (another id is refused
  // by the engine anyway), which bounds what a peer's headers can make the link remember.
  std::map<std::string, std::set<uint32_t>> hosted_;
  DelayQueue queue_;
};

// A client process's channel with its downlink shaped (sends go out as they are).
class ShapedChannel final : public Channel {
 public:
  ShapedChannel(Channel& inner, const LinkProfile& p, JitterKind kind, uint64_t seed,
                uint32_t link);
  size_t send(const WireMessage& m) override { return inner_.send(m); }
  std::optional<Received> receive(Clock::time_point deadline) override;
  uint64_t lost() const { return link_.lost(); }

 private:
  Channel& inner_;
  ShapedLink link_;
  uint32_t link_id_;  // keys the TASKs' draws
  DelayQueue queue_;
};

// The server's transport for [network] `n`: shaped when the mode is "emulated", else `t` itself.
std::unique_ptr<Transport> shape_transport(std::unique_ptr<Transport> t, const NetworkSpec& n,
                                           uint64_t seed);
// A client process's channel once WELCOME named its virtual clients: shaped by the first one's
// profile when the mode is "emulated", else one that forwards to `c` as it is.
std::unique_ptr<Channel> shape_channel(Channel& c, const NetworkSpec& n, uint64_t seed,
                                       const std::vector<uint32_t>& clients);

}  // namespace fedpar
