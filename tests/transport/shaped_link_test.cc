// The emulated links (transport/shaped_link.h): the serialization arithmetic on hand-computed
// cases, the delay queue's order, real ZeroMQ messages held until their arrival time (uplink at
// the server, downlink at a client), and seeded losses that drop the same messages every time.
#include "transport/shaped_link.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <set>
#include <thread>

#include "protocol/frames.h"

namespace fedpar {
namespace {

double since(Clock::time_point t0) { return seconds_since(t0); }

TEST(LinkClock, SerializesAtTheBandwidthThenAddsTheDelay) {
  LinkClock link(1e6);  // 1 Mbit/s: 125,000 bytes take 1 s
  EXPECT_DOUBLE_EQ(link.admit(0.0, 125000, 0.01), 1.01);
  EXPECT_DOUBLE_EQ(link.free_at(), 1.0);
  // handed over at once: waits for the first to be out, 1 s more on the wire
  EXPECT_DOUBLE_EQ(link.admit(0.0, 125000, 0.01), 2.01);
  EXPECT_DOUBLE_EQ(link.free_at(), 2.0);
  // handed over at 1.5 s: the link is busy until 2 s; 0.5 s on the wire
  EXPECT_DOUBLE_EQ(link.admit(1.5, 62500, 0.01), 2.51);
  // after an idle gap the link starts at once
  EXPECT_DOUBLE_EQ(link.admit(5.0, 12500, 0.0), 5.1);
  EXPECT_DOUBLE_EQ(link.free_at(), 5.1);
}

TEST(LinkClock, KeepsMessagesInOrderWhateverTheirJitter) {
  LinkClock link(8e6);                                // 1,000,000 bytes per second
  EXPECT_DOUBLE_EQ(link.admit(0, 1000, 0.5), 0.501);  // 1 ms on the wire, 0.5 s of jitter
  // the next one is out at 2 ms with no jitter, but may not overtake the first
  EXPECT_DOUBLE_EQ(link.admit(0, 1000, 0.0), 0.501);
  EXPECT_DOUBLE_EQ(link.free_at(), 0.002);
  EXPECT_DOUBLE_EQ(link.admit(1, 1000, 0.0), 1.001);
}

TEST(DelayQueue, ReleasesInArrivalOrderAndTiesInReadOrder) {
  DelayQueue q;
  const auto t0 = Clock::now();
  const auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
  for (const auto& [ms, name] :
       std::vector<std::pair<int, std::string>>{{20, "c"}, {10, "a"}, {10, "b"}}) {
    Received r;
    r.peer = name;
    q.hold(at(ms), std::move(r));
  }
  EXPECT_EQ(*q.next(), at(10));
  EXPECT_FALSE(q.pop_due(at(9)).has_value());
  // a message still held is one more to come from its peer (ShapedTransport::connected)
  EXPECT_TRUE(q.holds_from("a"));
  EXPECT_FALSE(q.holds_from("d"));
  EXPECT_EQ(q.pop_due(at(10))->peer, "a");
  EXPECT_FALSE(q.holds_from("a"));
  EXPECT_EQ(q.pop_due(at(15))->peer, "b");
  EXPECT_FALSE(q.pop_due(at(15)).has_value());
  EXPECT_EQ(q.pop_due(at(30))->peer, "c");
  EXPECT_EQ(q.size(), 0u);
}

TEST(Jitter, IsNeverNegativeAndStaysInItsRange) {
  double max_uniform = 0, sum_normal = 0;
  for (uint32_t i = 0; i < 4000; ++i) {
    const double u = jitter_seconds(JitterKind::kUniform, 0.01, 7, "up", 3, i);
    const double n = jitter_seconds(JitterKind::kNormal, 0.01, 7, "up", 3, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 0.01);
    ASSERT_GE(n, 0.0);
    max_uniform = std::max(max_uniform, u);
    sum_normal += n;
  }
  EXPECT_GT(max_uniform, 0.0099);
  EXPECT_NEAR(sum_normal / 4000, 0.01 * std::sqrt(2 / M_PI), 0.0005);  // half-normal mean
  EXPECT_EQ(jitter_seconds(JitterKind::kUniform, 0.01, 7, "up", 3, 5),
            jitter_seconds(JitterKind::kUniform, 0.01, 7, "up", 3, 5));
  EXPECT_EQ(jitter_seconds(JitterKind::kUniform, 0.0, 7, "up", 3, 5), 0.0);
}

LinkProfile profile(double down, double up, double latency, double loss = 0) {
  return {.name = "test", .down_bps = down, .up_bps = up, .latency_s = latency, .loss = loss};
}

WireMessage message(MessageType type, uint32_t index, size_t floats, uint64_t round = 0) {
  auto data = std::make_shared<std::vector<float>>(floats, float(index));
  const std::vector<std::span<const float>> vecs = {*data};
  return encode_message(type, index, 1, round, {{"i", index}}, vecs, data);
}

Header header_of(const Received& r) {
  return std::get<ParsedMessage>(parse_message(r.spans())).header;
}

uint32_t index_of(const Received& r) { return header_of(r).client; }

// A client's channel with an 8 Mbit/s, 50 ms downlink: 100,000 bytes arrive 0.15 s after they
// were sent, the next 0.1 s later (the link was busy), and a deadline before the arrival returns
// nothing while the message stays held for the next receive.
TEST(ShapedChannel, DeliversAtTheEmulatedArrivalTime) {
  zmq::context_t ctx;
  const auto server = bind_zmq_transport("inproc://shaped-down", &ctx);
  const auto raw = connect_zmq_channel("inproc://shaped-down", &ctx);
  ShapedChannel client(*raw, profile(8e6, 1e9, 0.05), JitterKind::kUniform, 1, 0);
  client.send(message(MessageType::kHello, 0, 1));
  const auto hello = server->receive(deadline_after(5));
  ASSERT_TRUE(hello);
  const size_t floats = 25000 - 20;  // with the header and body frames: about 100,000 bytes
  const auto t0 = Clock::now();
  const size_t bytes = server->send(hello->peer, message(MessageType::kTask, 1, floats));
  server->send(hello->peer, message(MessageType::kTask, 2, floats));
  const double wire = bytes * 8 / 8e6;
  EXPECT_FALSE(client.receive(t0 + std::chrono::milliseconds(100)).has_value());
  auto first = client.receive(deadline_after(5));
  const double t1 = since(t0);
  auto second = client.receive(deadline_after(5));
  const double t2 = since(t0);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(index_of(*first), 1u);
  EXPECT_EQ(index_of(*second), 2u);
  EXPECT_GE(t1, wire + 0.05);
  EXPECT_LT(t1, wire + 0.05 + 0.05);
  EXPECT_GE(t2, 2 * wire + 0.05);
  EXPECT_LT(t2, 2 * wire + 0.05 + 0.05);
}

// The server's transport shapes each assigned peer's uplink: an unassigned peer's messages come
// at once; an assigned one's at its link's pace.
TEST(ShapedTransport, ShapesEachAssignedPeersUplink) {
  zmq::context_t ctx;
  auto spec = resolve_network(NetworkMode::kEmulated, JitterKind::kUniform, "custom", "", {},
                              profile(1e9, 4e6, 0.02), 1, 2);
  ShapedTransport server(bind_zmq_transport("inproc://shaped-up", &ctx), spec, 1);
  const auto a = connect_zmq_channel("inproc://shaped-up", &ctx);
  const auto t0 = Clock::now();
  a->send(message(MessageType::kHello, 0, 25000));
  const auto hello = server.receive(deadline_after(5));
  ASSERT_TRUE(hello);
  EXPECT_LT(since(t0), 0.05);  // not assigned yet: as it came
  server.assign(hello->peer, {1, 0});
  const auto t1 = Clock::now();
  const size_t bytes = a->send(message(MessageType::kUpdate, 1, 25000));
  ASSERT_TRUE(server.receive(deadline_after(5)));
  const double expected = bytes * 8 / 4e6 + 0.02;  // about 0.22 s
  EXPECT_GE(since(t1), expected);
  EXPECT_LT(since(t1), expected + 0.05);
}

using Sent = std::vector<std::pair<uint32_t, uint64_t>>;  // (client, round) in the header

// The messages of `type` that came through a lossy uplink (loss 0.5) out of `sent`, in order; the
// peer hosts the clients of `sent` (or `hosted`).
Sent delivered(uint64_t seed, MessageType type, const Sent& sent,
               std::optional<std::vector<uint32_t>> hosted = std::nullopt) {
  if (!hosted) {
    std::set<uint32_t> ids;
    for (const auto& [client, round] : sent) ids.insert(client);
    hosted.emplace(ids.begin(), ids.end());
  }
  zmq::context_t ctx;
  auto spec = resolve_network(NetworkMode::kEmulated, JitterKind::kUniform, "custom", "", {},
                              profile(1e9, 1e9, 0, 0.5), seed, 1);
  ShapedTransport server(bind_zmq_transport("inproc://lossy", &ctx), spec, seed);
  const auto a = connect_zmq_channel("inproc://lossy", &ctx);
  a->send(message(MessageType::kHello, 0, 0));
  const auto hello = server.receive(deadline_after(5));
  EXPECT_TRUE(hello);
  server.assign(hello->peer, *hosted);
  for (const auto& [client, round] : sent) a->send(message(type, client, 4, round));
  constexpr uint32_t kEnd = 1u << 30;
  a->send(message(MessageType::kStop, kEnd, 0));  // never lost: marks the end
  Sent got;
  while (auto r = server.receive(deadline_after(5))) {
    const Header h = header_of(*r);
    if (h.client == kEnd) break;
    got.emplace_back(h.client, h.round);
  }
  EXPECT_EQ(server.lost(), sent.size() - got.size());
  return got;
}

// Those of `sent` whose draws (repeat: their copy number) keep them.
Sent kept(uint64_t seed, const Sent& sent, uint32_t repeat = 0) {
  Sent out;
  for (const auto& [c, r] : sent)
    if (!message_lost(0.5, seed, "up", c, uint32_t(r), repeat)) out.emplace_back(c, r);
  return out;
}

// Half the UPDATEs on a lossy uplink are dropped: the same ones on every run with the same seed
// (the message_lost draws of their (client, round), as simulated mode draws them), others with
// another seed; ERROR is never lost.
TEST(ShapedTransport, LosesTheSameUpdatesForTheSameSeed) {
  Sent sent;
  for (uint32_t i = 0; i < 64; ++i) sent.emplace_back(i, 0);
  const auto first = delivered(11, MessageType::kUpdate, sent);
  EXPECT_EQ(first, delivered(11, MessageType::kUpdate, sent));
  EXPECT_EQ(first, kept(11, sent));
  EXPECT_GT(first.size(), 16u);
  EXPECT_LT(first.size(), 48u);
  EXPECT_NE(first, delivered(12, MessageType::kUpdate, sent));
  EXPECT_EQ(delivered(11, MessageType::kError, sent).size(), 64u);
  // UPDATEs naming clients the peer does not host are not drawn (the engine refuses them; the
  // link remembers nothing for them)
  EXPECT_EQ(delivered(11, MessageType::kUpdate, sent, std::vector<uint32_t>{1000}).size(), 64u);
}

// The draws follow the header's round, not how many messages the link has carried: a run resumed
// at round 32 loses the UPDATEs of rounds 32.. that the uninterrupted run lost. A second UPDATE
// with the same (client, round) (async) draws from its own stream, not the first one's.
TEST(ShapedTransport, LosesByRoundSoAResumedRunLosesWhatTheUninterruptedOneLost) {
  Sent all, resumed, twice;
  for (uint64_t r = 0; r < 64; ++r) {
    all.emplace_back(3, r);
    if (r >= 32) resumed.emplace_back(3, r);
    twice.insert(twice.end(), 2, {3, r});
  }
  Sent after;
  for (const auto& m : delivered(5, MessageType::kUpdate, all))
    if (m.second >= 32) after.push_back(m);
  EXPECT_EQ(delivered(5, MessageType::kUpdate, resumed), after);
  EXPECT_EQ(after, kept(5, resumed));
  EXPECT_GT(after.size(), 4u);
  EXPECT_LT(after.size(), 28u);

  const Sent got = delivered(5, MessageType::kUpdate, twice);
  EXPECT_NE(kept(5, all), kept(5, all, 1));
  for (uint64_t r = 0; r < 64; ++r) {
    const auto copies = std::count(got.begin(), got.end(), std::pair<uint32_t, uint64_t>(3, r));
    EXPECT_EQ(copies, !message_lost(0.5, 5, "up", 3, uint32_t(r), 0) +
                          !message_lost(0.5, 5, "up", 3, uint32_t(r), 1))
        << "round " << r;
  }
}

TEST(ShapedChannel, LosesTheSameTasksForTheSameSeed) {
  const auto run = [](uint64_t seed) {
    zmq::context_t ctx;
    const auto server = bind_zmq_transport("inproc://lossy-down", &ctx);
    const auto raw = connect_zmq_channel("inproc://lossy-down", &ctx);
    ShapedChannel client(*raw, profile(1e9, 1e9, 0, 0.3), JitterKind::kUniform, seed, 5);
    client.send(message(MessageType::kHello, 0, 0));
    const auto hello = server->receive(deadline_after(5));
    for (uint32_t i = 0; i < 50; ++i)
      server->send(hello->peer, message(MessageType::kTask, i, 4, /*round=*/i));
    server->send(hello->peer, message(MessageType::kStop, 50, 0));
    std::vector<uint32_t> got;
    while (auto r = client.receive(deadline_after(5))) {
      if (index_of(*r) == 50) break;
      got.push_back(index_of(*r));
    }
    EXPECT_EQ(client.lost(), 50 - got.size());
    return got;
  };
  std::vector<uint32_t> expected;
  for (uint32_t i = 0; i < 50; ++i)
    if (!message_lost(0.3, 4, "down", 5, i)) expected.push_back(i);
  EXPECT_EQ(run(4), expected);
  EXPECT_LT(expected.size(), 50u);
}

TEST(ShapeFactories, OffAndSimulatedLeaveTheLinksAsTheyAre) {
  zmq::context_t ctx;
  for (const auto mode : {NetworkMode::kOff, NetworkMode::kSimulated}) {
    const auto spec = resolve_network(mode, JitterKind::kUniform, "3g", "", {}, {}, 1, 2);
    auto t = bind_zmq_transport(fmt::format("inproc://factory-{}", int(mode)), &ctx);
    Transport* raw = t.get();
    EXPECT_EQ(shape_transport(std::move(t), spec, 1).get(), raw);
  }
  const auto spec =
      resolve_network(NetworkMode::kEmulated, JitterKind::kUniform, "3g", "", {}, {}, 1, 2);
  auto t = bind_zmq_transport("inproc://factory2", &ctx);
  EXPECT_NE(dynamic_cast<ShapedTransport*>(shape_transport(std::move(t), spec, 1).get()), nullptr);
  const auto c = connect_zmq_channel("inproc://factory2", &ctx);
  EXPECT_NE(dynamic_cast<ShapedChannel*>(shape_channel(*c, spec, 1, {1}).get()), nullptr);
  EXPECT_EQ(dynamic_cast<ShapedChannel*>(shape_channel(*c, spec, 1, {}).get()), nullptr);
}

}  // namespace
}  // namespace fedpar
