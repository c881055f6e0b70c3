// The emulated links; see shaped_link.h.
#include "transport/shaped_link.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "protocol/header.h"

namespace fedpar {
namespace {

double to_seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

Clock::time_point from_seconds(double s) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)));
}

// The message's type, client and round (read, not validated: the engine validates what it is
// handed; a peer that lies only moves its own draws).
std::optional<HeaderPeek> peek(const Received& r) {
  if (r.frames.empty()) return std::nullopt;
  return peek_header({static_cast<const uint8_t*>(r.frames[0].data()), r.frames[0].size()});
}

// Reads `source` until the earliest held message is due or the deadline passes; each message read
// goes through `admit` (nullopt: dropped; a time: held until then).
template <typename Source, typename Admit>
std::optional<Received> drain(DelayQueue& q, Clock::time_point deadline, Source&& source,
                              Admit&& admit) {
  while (true) {
    if (auto due = q.pop_due(Clock::now())) return due;
    const auto now = Clock::now();
    if (now >= deadline) return std::nullopt;
    const auto wake = std::min(deadline, q.next().value_or(deadline));
    if (auto r = source(wake)) {
      if (const auto at = admit(*r, Clock::now())) q.hold(*at, std::move(*r));
      continue;
    }
    // The socket's poll counts whole milliseconds: sleep out what it leaves.
    const auto left = wake - Clock::now();
    if (left > Clock::duration::zero() && left < std::chrono::milliseconds(2))
      std::this_thread::sleep_until(wake);
  }
}

}  // namespace

double LinkClock::admit(double now, uint64_t bytes, double delay) {
  const double start = std::max(now, free_);
  free_ = start + transfer_seconds(bytes, bps_);
  last_ = std::max(free_ + delay, last_);
  return last_;
}

ShapedLink::ShapedLink(double bps, double latency, double jitter, double loss, JitterKind kind,
                       uint64_t seed, const char* direction, uint32_t link)
    : clock_(bps),
      latency_(latency),
      jitter_(jitter),
      loss_(loss),
      kind_(kind),
      seed_(seed),
      direction_(direction),
      control_(direction + std::string("-control")),
      link_(link) {}

uint32_t ShapedLink::repeat_of(const DrawKey& k) {
  auto [it, fresh] = last_.try_emplace(k.id, k.round, 0);
  auto& [round, repeats] = it->second;
  if (fresh || round != k.round) {
    round = k.round;
    repeats = 0;
  } else {
    ++repeats;
  }
  return repeats;
}

std::optional<Clock::time_point> ShapedLink::admit(const Received& r, Clock::time_point now,
                                                   std::optional<DrawKey> lossy) {
  double jitter = 0;
  if (lossy) {
    const uint32_t round = uint32_t(lossy->round), repeat = repeat_of(*lossy);
    if (message_lost(loss_, seed_, direction_, lossy->id, round, repeat)) {
      ++lost_;
      return std::nullopt;
    }
    jitter = jitter_seconds(kind_, jitter_, seed_, direction_, lossy->id, round, repeat);
  } else {
    jitter = jitter_seconds(kind_, jitter_, seed_, control_, link_, uint32_t(control_messages_++));
  }
  return from_seconds(clock_.admit(to_seconds(now), r.bytes(), latency_ + jitter));
}

void DelayQueue::hold(Clock::time_point at, Received r) {
  held_.emplace(std::pair(at, serial_++), std::move(r));
}

std::optional<Clock::time_point> DelayQueue::next() const {
  if (held_.empty()) return std::nullopt;
  return held_.begin()->first.first;
}

bool DelayQueue::holds_from(const std::string& peer) const {
  return std::ranges::any_of(held_, [&](const auto& h) { return h.second.peer == peer; });
}

std::optional<Received> DelayQueue::pop_due(Clock::time_point now) {
  if (held_.empty() || held_.begin()->first.first > now) return std::nullopt;
  Received r = std::move(held_.begin()->second);
  held_.erase(held_.begin());
  return r;
}

ShapedTransport::ShapedTransport(std::unique_ptr<Transport> inner, NetworkSpec n, uint64_t seed)
    : inner_(std::move(inner)), n_(std::move(n)), seed_(seed) {}

void ShapedTransport::shape(const std::string& peer, const LinkProfile& p, uint32_t link) {
  links_.insert_or_assign(
      peer, ShapedLink(p.up_bps, p.latency_s, p.jitter_s, p.loss, n_.jitter, seed_, "up", link));
}

void ShapedTransport::assign(const std::string& peer, const std::vector<uint32_t>& clients) {
  if (clients.empty()) return;
  shape(peer, n_.of(clients[0]), clients[0]);
  hosted_[peer] = std::set<uint32_t>(clients.begin(), clients.end());
}

uint64_t ShapedTransport::lost() const {
  uint64_t n = 0;
  for (const auto& [peer, link] : links_) n += link.lost();
  return n;
}

std::optional<Received> ShapedTransport::receive(Clock::time_point deadline) {
  return drain(
      queue_, deadline, [&](Clock::time_point t) { return inner_->receive(t); },
      [&](const Received& r, Clock::time_point now) -> std::optional<Clock::time_point> {
        const auto it = links_.find(r.peer);
        if (it == links_.end()) return now;  // not yet assigned: as it came
        const auto head = peek(r);
        if (head && head->type == MessageType::kUpdate && hosted_[r.peer].count(head->client))
          return it->second.admit(r, now, DrawKey{head->client, head->round});
        return it->second.admit(r, now, std::nullopt);
      });
}

ShapedChannel::ShapedChannel(Channel& inner, const LinkProfile& p, JitterKind kind, uint64_t seed,
                             uint32_t link)
    : inner_(inner),
      link_(p.down_bps, p.latency_s, p.jitter_s, p.loss, kind, seed, "down", link),
      link_id_(link) {}

std::optional<Received> ShapedChannel::receive(Clock::time_point deadline) {
  return drain(
      queue_, deadline, [&](Clock::time_point t) { return inner_.receive(t); },
      [&](const Received& r, Clock::time_point now) -> std::optional<Clock::time_point> {
        const auto head = peek(r);
        if (head && head->type == MessageType::kPing) return now;  // no link draw: a diagnostic
        if (head && head->type == MessageType::kTask)
          return link_.admit(r, now, DrawKey{link_id_, head->round});
        return link_.admit(r, now, std::nullopt);
      });
}

namespace {

class ForwardingChannel final : public Channel {
 public:
  explicit ForwardingChannel(Channel& inner) : inner_(inner) {}
  size_t send(const WireMessage& m) override { return inner_.send(m); }
  std::optional<Received> receive(Clock::time_point deadline) override {
    return inner_.receive(deadline);
  }

 private:
  Channel& inner_;
};

}  // namespace

std::unique_ptr<Transport> shape_transport(std::unique_ptr<Transport> t, const NetworkSpec& n,
                                           uint64_t seed) {
  if (n.mode != NetworkMode::kEmulated) return t;
  return std::make_unique<ShapedTransport>(std::move(t), n, seed);
}

std::unique_ptr<Channel> shape_channel(Channel& c, const NetworkSpec& n, uint64_t seed,
                                       const std::vector<uint32_t>& clients) {
  if (n.mode != NetworkMode::kEmulated || clients.empty())
    return std::make_unique<ForwardingChannel>(c);
  return std::make_unique<ShapedChannel>(c, n.of(clients[0]), n.jitter, seed, clients[0]);
}

}  // namespace fedpar
