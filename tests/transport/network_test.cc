// [network] (core/network.h, core/run_spec.cc): the profiles' numbers, each client's resolved
// profile, availability and loss draws that depend only on the seed, the simulated round time on
// hand-computed cases, and the config's refusals, each saying what is valid.
#include "core/network.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "core/rng.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "tests/util/run_spec_util.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::error_of;

RunSpec spec(const std::vector<std::string>& sets) { return testing::spec_with(sets); }
using testing::refusal;

TEST(NetworkProfiles, TheNamedOnesCarryTheirDocumentedNumbers) {
  std::map<std::string, LinkProfile> by_name;
  for (const auto& p : named_link_profiles()) by_name[p.name] = p;
  ASSERT_EQ(by_name.size(), 4u);
  EXPECT_EQ(by_name["datacenter"].down_bps, 25e9);
  EXPECT_EQ(by_name["datacenter"].up_bps, 25e9);
  EXPECT_EQ(by_name["datacenter"].latency_s, 10e-6);
  EXPECT_EQ(by_name["datacenter"].loss, 0);
  EXPECT_EQ(by_name["wifi"].down_bps, 50e6);
  EXPECT_EQ(by_name["wifi"].up_bps, 20e6);
  EXPECT_EQ(by_name["wifi"].latency_s, 5e-3);
  EXPECT_EQ(by_name["lte"].down_bps, 20e6);
  EXPECT_EQ(by_name["lte"].up_bps, 5e6);
  EXPECT_EQ(by_name["lte"].latency_s, 40e-3);
  EXPECT_EQ(by_name["3g"].down_bps, 2e6);
  EXPECT_EQ(by_name["3g"].up_bps, 0.5e6);
  EXPECT_EQ(by_name["3g"].latency_s, 150e-3);
  EXPECT_EQ(by_name["3g"].loss, 0.01);
  for (const auto& [name, p] : by_name) EXPECT_EQ(p.availability, 1.0) << name;
}

TEST(NetworkSpec, DefaultsAreOffAndEveryClientOnWifi) {
  const RunSpec s = spec({"partition.clients=3"});
  EXPECT_EQ(s.network.mode, NetworkMode::kOff);
  EXPECT_FALSE(s.network.on());
  ASSERT_EQ(s.network.client_profile.size(), 3u);
  for (uint32_t c = 0; c < 3; ++c) EXPECT_EQ(s.network.of(c).name, "wifi");
}

TEST(NetworkSpec, OverridesReplaceSingleClientsAndCustomTakesItsNumbers) {
  const RunSpec s = spec({"network.mode=simulated", "partition.clients=5", "network.profile=lte",
                          "network.profiles=0:3g,3:custom", "network.custom.up_bps=1000",
                          "network.custom.availability=0.25"});
  EXPECT_EQ(s.network.mode, NetworkMode::kSimulated);
  const std::vector<std::string> names = {"3g", "lte", "lte", "custom", "lte"};
  for (uint32_t c = 0; c < 5; ++c) EXPECT_EQ(s.network.of(c).name, names[c]) << c;
  EXPECT_EQ(s.network.of(3).up_bps, 1000);
  EXPECT_EQ(s.network.of(3).availability, 0.25);
  EXPECT_EQ(s.network.profiles.size(), 3u);  // each used profile once
  const auto j = network_json(s.network);
  EXPECT_EQ(j.at("mode"), "simulated");
  EXPECT_EQ(j.at("clients").size(), 5u);
  EXPECT_EQ(j.at("clients")[3], "custom");
}

TEST(NetworkSpec, AMixtureIsDrawnPerClientFromTheSeed) {
  const auto names = [](uint64_t seed) {
    const auto n = resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "wifi",
                                   "wifi:0.5,lte:0.3,3g:0.2", {}, {}, seed, 10000);
    std::vector<std::string> out;
    for (uint32_t c = 0; c < 10000; ++c) out.push_back(n.of(c).name);
    return out;
  };
  const auto a = names(5);
  EXPECT_EQ(a, names(5));
  EXPECT_EQ(resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "wifi",
                            "wifi: 0.5, lte: 0.3, 3g: 0.2", {}, {}, 5, 100)
                .client_profile,
            resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "wifi",
                            "wifi:0.5,lte:0.3,3g:0.2", {}, {}, 5, 100)
                .client_profile);
  EXPECT_NE(a, names(6));
  std::map<std::string, int> count;
  for (const auto& n : a) ++count[n];
  EXPECT_NEAR(count["wifi"], 5000, 200);
  EXPECT_NEAR(count["lte"], 3000, 200);
  EXPECT_NEAR(count["3g"], 2000, 200);
  // the draw is u = Rng(seed, "net-profile", c).uniform_double() against the cumulative weights
  for (uint32_t c = 0; c < 20; ++c) {
    const double u = Rng(5, "net-profile", c).uniform_double();
    EXPECT_EQ(a[c], u < 0.5 ? "wifi" : u < 0.8 ? "lte" : "3g") << c;
  }
}

TEST(NetworkAvailability, TheSameClientsAreLeftOutForTheSameSeed) {
  const auto n = resolve_network(NetworkMode::kEmulated, JitterKind::kUniform, "custom", "", {},
                                 {.down_bps = 1, .up_bps = 1, .availability = 0.3}, 9, 8);
  int available = 0;
  std::vector<std::vector<uint32_t>> by_seed[2];
  for (uint64_t round = 0; round < 500; ++round) {
    RoundRecord rec, again, other;
    const std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
    const auto asked = network_participants(n, 9, round, all, rec);
    EXPECT_EQ(asked, network_participants(n, 9, round, all, again));
    EXPECT_EQ(rec.unavailable, again.unavailable);
    ASSERT_TRUE(rec.unavailable);
    EXPECT_EQ(asked.size() + rec.unavailable->size(), 8u);
    EXPECT_FALSE(rec.simulated_lost);  // emulated: losses happen on the links
    for (uint32_t c : asked)
      EXPECT_LT(Rng(9, "net-available", c, uint32_t(round)).uniform_double(), 0.3);
    available += int(asked.size());
    by_seed[0].push_back(asked);
    by_seed[1].push_back(network_participants(n, 10, round, all, other));
  }
  EXPECT_NEAR(available / 4000.0, 0.3, 0.03);
  EXPECT_NE(by_seed[0], by_seed[1]);
}

// network.availability_rounds = L: a client is on or off for whole stretches of L rounds, its
// stretches offset by its own draw, at the same long-run share; L = 1 turns over every round.
TEST(NetworkAvailability, AStretchOfRoundsKeepsOneDraw) {
  auto n = resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                           {.down_bps = 1, .up_bps = 1, .availability = 0.4}, 9, 8);
  constexpr uint64_t kRounds = 500;
  const auto agreement = [&](uint32_t l) {  // the share of rounds a client is as in the one before
    n.availability_rounds = l;
    int same = 0;
    for (uint32_t c = 0; c < 8; ++c)
      for (uint64_t r = 1; r < kRounds; ++r)
        same += client_available(n, 9, c, r) == client_available(n, 9, c, r - 1);
    return same / (8.0 * (kRounds - 1));
  };
  EXPECT_LT(agreement(1), 0.6) << "independent rounds agree 0.4^2 + 0.6^2 = 0.52 of the time";
  EXPECT_GT(agreement(5), 0.85) << "at most one turnover in 5 rounds: at least 0.8 + 0.2 x 0.52";
  n.availability_rounds = 5;
  std::set<uint32_t> offsets;
  int on = 0;
  for (uint32_t c = 0; c < 8; ++c) {
    std::vector<uint32_t> fits;  // the offsets o whose stretches (r + o) / 5 hold one value
    for (uint32_t o = 0; o < 5; ++o) {
      bool fit = true;
      for (uint64_t r = 1; r < kRounds; ++r)
        if ((r + o) / 5 == (r - 1 + o) / 5 &&
            client_available(n, 9, c, r) != client_available(n, 9, c, r - 1))
          fit = false;
      if (fit) fits.push_back(o);
    }
    ASSERT_EQ(fits.size(), 1u) << "client " << c << ": one offset explains its turnovers";
    offsets.insert(fits[0]);
    for (uint64_t r = 0; r < kRounds; ++r) on += client_available(n, 9, c, r);
  }
  EXPECT_GT(offsets.size(), 1u) << "the clients do not all turn over in the same round";
  for (uint32_t c = 0; c < 8; ++c)  // the draw docs/network.md states
    for (uint64_t r : {0, 7, 123}) {
      const uint64_t o = Rng(9, "net-available-offset", c).below(5);
      EXPECT_EQ(client_available(n, 9, c, r),
                Rng(9, "net-available", c, uint32_t((r + o) / 5)).uniform_double() < 0.4);
    }
  EXPECT_NEAR(on / (8.0 * kRounds), 0.4, 0.06);
}

TEST(NetworkAvailability, OffLeavesTheSampleAndTheRecordAlone) {
  const auto n = resolve_network(NetworkMode::kOff, JitterKind::kUniform, "custom", "", {},
                                 {.down_bps = 1, .up_bps = 1, .availability = 0.0}, 9, 4);
  RoundRecord rec;
  EXPECT_EQ(network_participants(n, 9, 0, {0, 1, 2, 3}, rec), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_FALSE(rec.unavailable);
}

TEST(NetworkSimulated, LostMessagesLeaveTheirClientsOutDeterministically) {
  const auto n = resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                                 {.down_bps = 1, .up_bps = 1, .loss = 0.2}, 3, 10);
  int lost = 0;
  for (uint64_t round = 0; round < 200; ++round) {
    RoundRecord rec;
    std::vector<uint32_t> all(10);
    std::iota(all.begin(), all.end(), 0u);
    const auto asked = network_participants(n, 3, round, all, rec);
    ASSERT_TRUE(rec.simulated_lost);
    for (uint32_t c : *rec.simulated_lost)
      EXPECT_TRUE(message_lost(0.2, 3, "down", c, uint32_t(round)) ||
                  message_lost(0.2, 3, "up", c, uint32_t(round)));
    for (uint32_t c : asked)
      EXPECT_FALSE(message_lost(0.2, 3, "down", c, uint32_t(round)) ||
                   message_lost(0.2, 3, "up", c, uint32_t(round)));
    lost += int(rec.simulated_lost->size());
  }
  EXPECT_NEAR(lost / 2000.0, 1 - 0.8 * 0.8, 0.04);  // either way
}

// 8 Mbit/s down, 4 up, 10 ms each way: 1,000,000 bytes down take 1 s, 1,000,000 up 2 s.
TEST(NetworkSimulated, ARoundLastsAsLongAsItsSlowestClientPlusTheAggregation) {
  const auto n = resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "",
                                 {{1, "datacenter"}},
                                 {.down_bps = 8e6, .up_bps = 4e6, .latency_s = 0.01}, 1, 2);
  const SimulatedClient slow{0, 1000000, 1000000, 0.5}, fast{1, 1000000, 1000000, 0.5};
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {slow}, 60, false, 0.1), 1.01 + 0.5 + 2.01 + 0.1,
              1e-12);
  const double dc = 2 * 8e6 / 25e9 + 2 * 10e-6 + 0.5;  // the datacenter client
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {fast}, 60, false, 0), dc, 1e-12);
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {fast, slow}, 60, false, 0), 3.52, 1e-12);
  // each client's own time, what network.drop_late compares with the deadline
  const auto each = simulated_reply_seconds(n, 1, 0, {fast, slow});
  ASSERT_EQ(each.size(), 2u);
  EXPECT_NEAR(each[0], dc, 1e-12);
  EXPECT_NEAR(each[1], 3.52, 1e-12);
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {fast, slow}, 2, false, 0.1), 2.1, 1e-12);
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {fast}, 2, true, 0.1), 2.1, 1e-12);
  EXPECT_EQ(simulated_round_seconds(n, 1, 0, {}, 2, false, 0), 0);
}

TEST(NetworkSimulated, JitterAddsTheSeededDrawEachWay) {
  const auto n =
      resolve_network(NetworkMode::kSimulated, JitterKind::kNormal, "custom", "", {},
                      {.down_bps = 8e6, .up_bps = 8e6, .latency_s = 0.01, .jitter_s = 0.02}, 4, 1);
  const double expected = 0.001 + 0.01 +
                          jitter_seconds(JitterKind::kNormal, 0.02, 4, "down", 0, 7) + 0.001 +
                          0.01 + jitter_seconds(JitterKind::kNormal, 0.02, 4, "up", 0, 7);
  EXPECT_NEAR(simulated_round_seconds(n, 4, 7, {{0, 1000, 1000, 0}}, 60, false, 0), expected,
              1e-12);
  EXPECT_GT(expected, 0.022);
}

// Two clients on 8 Mbit/s links (10 ms), a server link of 8 Mbit/s (1 ms) each way: the two
// 1 MB TASKs share the server's uplink, so both arrive after 2 s, not 1; the UPDATEs alike.
TEST(NetworkSimulated, AServerLinkIsSharedByTheRoundsMessages) {
  NetworkSpec n = resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                                  {.down_bps = 8e6, .up_bps = 8e6, .latency_s = 0.01}, 1, 2);
  const SimulatedClient a{0, 1000000, 1000000, 0.5}, b{1, 1000000, 1000000, 0.5};
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {a, b}, 60, false, 0), 1.01 + 0.5 + 1.01, 1e-12);
  n.server = LinkProfile{.name = "server", .down_bps = 8e6, .up_bps = 8e6, .latency_s = 0.001};
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {a, b}, 60, false, 0), 2.011 + 0.5 + 2.011, 1e-9);
  // alone, a client's own link is the narrower: the server's adds only its latency
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {a}, 60, false, 0), 1.011 + 0.5 + 1.011, 1e-9);
  // a fast server link: each client at its own bandwidth again
  n.server->up_bps = n.server->down_bps = 16e6;
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {a, b}, 60, false, 0), 1.011 + 0.5 + 1.011, 1e-9);
  // the UPDATEs leave when their clients finish: the later one has the link to itself at the end
  const SimulatedClient late{1, 1000000, 1000000, 1.5};
  n.server->up_bps = n.server->down_bps = 8e6;
  EXPECT_NEAR(simulated_round_seconds(n, 1, 0, {a, late}, 60, false, 0), 2.011 + 1.5 + 1.011, 1e-9);
  // a's UPDATE has the link alone until the later one leaves at 3.511 s: it is in 1 s after its
  // start, the later one 1 s after its own
  const auto each = simulated_reply_seconds(n, 1, 0, {a, late});
  ASSERT_EQ(each.size(), 2u);
  EXPECT_NEAR(each[0], 2.011 + 0.5 + 1.011, 1e-9);
  EXPECT_NEAR(each[1], 2.011 + 1.5 + 1.011, 1e-9);
}

// The master's step is two exchanges with the loss between them; the server link is shared in
// each. 1 MB model and gradient, 1,000-byte logits and dlogits, 8 Mbit/s everywhere, no latency.
TEST(NetworkSimulated, AMasterStepIsTwoExchangesAndTheLoss) {
  NetworkSpec n = resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                                  {.down_bps = 8e6, .up_bps = 8e6}, 1, 2);
  const SimulatedSlice s0{0, 1000000, 1000, 1000, 1000000, 0.25, 0.5},
      s1{1, 1000000, 1000, 1000, 1000000, 0.25, 0.5};
  const double alone = (1 + 0.25 + 0.001) + 0.1 + (0.001 + 0.5 + 1) + 0.2;
  EXPECT_NEAR(simulated_master_seconds(n, 1, 0, {s0, s1}, 0.1, 0.2), alone, 1e-12);
  n.server = LinkProfile{.name = "server", .down_bps = 8e6, .up_bps = 8e6};
  // both models down share the uplink (2 s), both logits up the downlink (0.002 s); the
  // dlogits (0.002 s) and both gradients (2 s) the same
  EXPECT_NEAR(simulated_master_seconds(n, 1, 0, {s0, s1}, 0.1, 0.2),
              (2 + 0.25 + 0.002) + 0.1 + (0.002 + 0.5 + 2) + 0.2, 1e-9);
}

// Each half's messages are each client's own, and the second half's jitter is its own draw: two
// clients of different sizes and compute on jittery links, no server link.
TEST(NetworkSimulated, AMasterStepTimesEachClientsOwnMessagesAndDraws) {
  const auto n =
      resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                      {.down_bps = 8e6, .up_bps = 4e6, .latency_s = 0.01, .jitter_s = 0.05}, 5, 2);
  const SimulatedSlice a{0, 1000000, 2000, 3000, 1000000, 0.25, 0.5},
      b{1, 500000, 4000, 1000, 2000000, 0.125, 0.75};
  const auto jit = [](const char* dir, uint32_t c, uint32_t repeat) {
    return jitter_seconds(JitterKind::kUniform, 0.05, 5, dir, c, 9, repeat);
  };
  const auto half = [&](uint32_t c, double down_bytes, double compute, double up_bytes,
                        uint32_t repeat) {
    return down_bytes * 8 / 8e6 + 0.01 + jit("down", c, repeat) + compute + up_bytes * 8 / 4e6 +
           0.01 + jit("up", c, repeat);
  };
  const double expected =
      std::max(half(0, 1000000, 0.25, 2000, 0), half(1, 500000, 0.125, 4000, 0)) + 0.1 +
      std::max(half(0, 3000, 0.5, 1000000, 1), half(1, 1000, 0.75, 2000000, 1)) + 0.2;
  EXPECT_NEAR(simulated_master_seconds(n, 5, 9, {a, b}, 0.1, 0.2), expected, 1e-12);
  EXPECT_NE(jit("up", 1, 1), jit("up", 1, 0));  // the repeat is its own draw
}

// The ring's sends do not cross the server link; its TASKs and reports do.
TEST(NetworkSimulated, TheRingsSendsDoNotCrossTheServerLink) {
  NetworkSpec n = resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                                  {.down_bps = 8e6, .up_bps = 8e6}, 1, 2);
  const SimulatedWorker w0{.client = 0,
                           .next_client = 1,
                           .down_bytes = 1000,
                           .up_bytes = 1000,
                           .ring_bytes = 1000000,
                           .ring_steps = 2,
                           .compute_seconds = 0.5};
  SimulatedWorker w1 = w0;
  w1.client = 1, w1.next_client = 0;
  const double open = 0.001 + 0.5 + 1 + 0.001;
  EXPECT_NEAR(simulated_ring_seconds(n, 1, 0, {w0, w1}, 0), open, 1e-12);
  n.server = LinkProfile{.name = "server", .down_bps = 8e6, .up_bps = 8e6};
  EXPECT_NEAR(simulated_ring_seconds(n, 1, 0, {w0, w1}, 0), 0.002 + 0.5 + 1 + 0.002, 1e-9);
}

// A 3 s round under a 2 s deadline is recorded as 2 s, and the clock says what it cut; a round
// whose message was lost waits out the deadline, which is not a cut.
TEST(NetworkClock, SaysWhenTheDeadlineCutARoundShort) {
  const auto n = resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                                 {.down_bps = 8e6, .up_bps = 8e6}, 1, 1);
  NetworkClock clock(n, 1, 2);
  RoundRecord rec;
  rec.bytes_down_per_task = 1000000;
  rec.aggregate_seconds = 0.5;
  rec.clients = {{.client = 0, .bytes_up = 2000000, .compute_seconds = 0}};  // 1 s + 2 s
  clock.end_round(rec, 0, 0);
  EXPECT_NEAR(*rec.simulated_seconds, 2.5, 1e-12);
  ASSERT_TRUE(clock.over_deadline());
  EXPECT_NEAR(*clock.over_deadline(), 3, 1e-12);
  rec.simulated_lost = std::vector<uint32_t>{0};
  clock.end_round(rec, 1, 0);
  EXPECT_FALSE(clock.over_deadline());
  rec.simulated_lost.reset();
  rec.clients = {{.client = 0, .bytes_up = 500000, .compute_seconds = 0}};  // 1.5 s
  clock.end_round(rec, 2, 0);
  EXPECT_FALSE(clock.over_deadline());
  EXPECT_NEAR(*rec.simulated_seconds, 2.0, 1e-12);
}

TEST(NetworkClock, FillsTheRecordsTimeFieldsAndSumsThem) {
  const auto sim = resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                                   {.down_bps = 8e6, .up_bps = 8e6}, 1, 2);
  NetworkClock clock(sim, 1, 60);
  RoundRecord rec;
  rec.bytes_down_per_task = 1000000;
  rec.aggregate_seconds = 0.25;
  rec.clients = {{.client = 0, .bytes_up = 2000000, .compute_seconds = 1},
                 {.client = 1, .bytes_up = 1000000, .compute_seconds = 1.5}};
  clock.end_round(rec, 0, 99);
  EXPECT_NEAR(*rec.simulated_seconds, 1 + 1 + 2 + 0.25, 1e-12);
  EXPECT_NEAR(*rec.simulated_time, 4.25, 1e-12);
  rec.simulated_lost = std::vector<uint32_t>{1};  // the deadline
  clock.end_round(rec, 1, 99);
  EXPECT_NEAR(*rec.simulated_seconds, 60.25, 1e-12);
  EXPECT_NEAR(*rec.simulated_time, 64.5, 1e-12);
  EXPECT_FALSE(rec.emulated_seconds);

  const auto emu =
      resolve_network(NetworkMode::kEmulated, JitterKind::kUniform, "wifi", "", {}, {}, 1, 2);
  NetworkClock wall(emu, 1, 60);
  RoundRecord r;
  wall.end_round(r, 0, 1.5);
  wall.end_round(r, 1, 2.0);
  EXPECT_EQ(*r.emulated_seconds, 2.0);
  EXPECT_EQ(*r.emulated_time, 3.5);
  EXPECT_FALSE(r.simulated_seconds);
}

TEST(NetworkRecords, TheNewRoundFieldsReadBack) {
  RoundRecord r{.round = 1, .topology = "model-averaging"};
  r.unavailable = std::vector<uint32_t>{2};
  r.simulated_lost = std::vector<uint32_t>{};
  r.simulated_seconds = 1.5, r.simulated_time = 3.0, r.emulated_seconds = 0.5,
  r.emulated_time = 0.75;
  const RoundRecord back = round_from_json(to_json(r), "test");
  EXPECT_EQ(back.unavailable, r.unavailable);
  EXPECT_EQ(back.simulated_lost, r.simulated_lost);
  EXPECT_EQ(back.simulated_seconds, 1.5);
  EXPECT_EQ(back.simulated_time, 3.0);
  EXPECT_EQ(back.emulated_seconds, 0.5);
  EXPECT_EQ(back.emulated_time, 0.75);
  EXPECT_FALSE(to_json(RoundRecord{}).contains("simulated_seconds"));  // absent when off
}

TEST(NetworkSpec, RefusesWhatCannotRunAndSaysWhy) {
  const auto has = [](const std::vector<std::string>& sets, const std::string& text) {
    const std::string e = refusal(sets);
    return e.find(text) != std::string::npos ? ::testing::AssertionSuccess()
                                             : ::testing::AssertionFailure() << "got: " << e;
  };
  EXPECT_TRUE(
      has({"network.mode=fast"}, "network.mode must be off, emulated or simulated, got 'fast'"));
  EXPECT_TRUE(has({"network.mode=simulated", "regime=gradient", "topology=pipeline", "processes=2",
                   "sgd.batch=1200", "pipeline.micro_batches=600"},
                  "a simulated pipeline times each micro-batch from its stages' reports: it takes "
                  "pipeline.micro_batches <= 512, got 600"));
  EXPECT_TRUE(has({"network.drop_late=true"},
                  "network.drop_late leaves out the updates the simulated clock brings in after "
                  "wait_seconds: it needs network.mode = \"simulated\""));
  EXPECT_TRUE(has({"network.mode=simulated", "network.drop_late=true", "regime=async"},
                  "network.drop_late applies to the synchronous rounds of the parameter-server"));
  EXPECT_TRUE(has(
      {"network.mode=simulated", "network.drop_late=true", "topology=master", "regime=gradient"},
      "network.drop_late applies to the synchronous rounds of the parameter-server"));
  EXPECT_TRUE(has({"network.mode=simulated", "network.drop_late=true", "regime=model",
                   "local.algorithm=scaffold"},
                  "network.drop_late with SCAFFOLD"));
  EXPECT_TRUE(has({"network.profile=5g"},
                  "network.profile: unknown profile '5g' (valid: datacenter, wifi, lte, 3g, "
                  "custom)"));
  EXPECT_TRUE(has({"network.profiles=1:lte,2:4g"}, "network.profiles: unknown profile '4g'"));
  EXPECT_TRUE(has({"network.profiles=lte"}, "network.profiles: 'lte' is not \"client:profile\""));
  EXPECT_TRUE(has({"network.profiles=x:lte"}, "'x:lte' is not \"client:profile\""));
  EXPECT_TRUE(has({"network.profiles=9:lte"},
                  "network.profiles: client 9 does not exist (partition.clients = 4: ids 0..3)"));
  EXPECT_TRUE(has({"network.heterogeneous=wifi:0.5,lte:0.4"},
                  "network.heterogeneous: the weights of 'wifi:0.5,lte:0.4' sum to 0.9, not 1"));
  EXPECT_TRUE(has({"network.heterogeneous=wifi,lte:0.5"},
                  "network.heterogeneous: 'wifi' is not \"profile:weight\""));
  EXPECT_TRUE(has({"network.heterogeneous=wifi:0.5,5g:0.5"},
                  "network.heterogeneous: unknown profile '5g' (valid: datacenter"));
  EXPECT_TRUE(has({"network.jitter=pareto"}, "network.jitter must be uniform or normal"));
  EXPECT_TRUE(has({"network.custom.up_bps=0"}, "network profile 'custom': up_bps must be > 0"));
  EXPECT_TRUE(has({"network.custom.loss=1.5"}, "network profile 'custom': loss must be in [0, 1]"));
  EXPECT_TRUE(has({"network.custom.availability=-0.1"}, "availability must be in [0, 1]"));
  EXPECT_TRUE(has({"network.custom.latency_seconds=-1"}, "latency_seconds must be >= 0"));
  EXPECT_TRUE(has({"network.mode=simulated", "regime=async", "network.server=wifi"},
                  "network.server shares the server's link among a synchronous round's messages: "
                  "it does not apply to regime = \"async\""));
  EXPECT_TRUE(has({"network.mode=simulated", "regime=async", "network.profile=3g"},
                  "a simulated asynchronous run carries time, not loss: it would wait for a lost "
                  "update forever"));
  EXPECT_TRUE(has({"network.mode=simulated", "regime=gradient", "topology=pipeline",
                   "partition.clients=1", "processes=2", "network.profile=3g"},
                  "a simulated model-parallel step carries time, not loss"));
  EXPECT_TRUE(has({"network.mode=emulated", "regime=gradient", "topology=tensor",
                   "partition.clients=1", "processes=2"},
                  "network.mode = \"emulated\" shapes the server's links, not those between a "
                  "tensor topology's processes: use network.mode = \"simulated\""));
  EXPECT_TRUE(
      has({"network.mode=simulated", "regime=gradient", "topology=master", "network.profile=3g"},
          "a simulated master carries time, not loss: it cannot go on without a worker's "
          "message, so its links need loss = 0 and availability = 1 (3g loses 1% of "
          "messages; for its links without loss set network.profile = \"custom\" and "
          "network.custom.down_bps = 2e+06, up_bps = 500000, latency_seconds = 0.15, "
          "jitter_seconds = 0.03)"));
  // an emulated master waits for a lost message as a simulated one would (it failed in round 1);
  // a custom profile's loss is named as the custom keys, not as 3g's
  EXPECT_TRUE(has({"network.mode=emulated", "regime=gradient", "topology=master",
                   "network.profile=custom", "network.custom.loss=0.3"},
                  "an emulated master loses messages: it cannot go on without a worker's message, "
                  "so its links need loss = 0 and availability = 1 (network.profile \"custom\" "
                  "loses 30% of messages: set network.custom.loss = 0 and "
                  "network.custom.availability = 1)"));
  EXPECT_FALSE(has({"network.mode=emulated", "regime=gradient", "topology=master"}, "loses"));
  // a lossy profile some clients get from network.profiles: setting network.profile cannot help
  EXPECT_TRUE(
      has({"network.mode=simulated", "regime=gradient", "topology=master", "network.profiles=0:3g"},
          "(3g, which network.profiles or network.heterogeneous gives some clients, loses "
          "1% of messages: give them a profile without loss)"));
  EXPECT_TRUE(has({"network.mode=emulated", "network.server=datacenter"},
                  "network.server is the simulated server's shared link"));
  EXPECT_TRUE(has({"network.mode=simulated", "network.server=10g"},
                  "network.server: unknown profile '10g' (valid: datacenter"));
  EXPECT_TRUE(has({"network.mode=simulated", "network.server=3g"},
                  "network.server = '3g': the server's link carries time only, so its profile "
                  "needs loss = 0 and availability = 1"));
  EXPECT_TRUE(has({"network.mode=emulated", "regime=gradient", "topology=allreduce"},
                  "it does not apply to topology = \"allreduce\" (use network.mode = "
                  "\"simulated\""));
  EXPECT_TRUE(
      has({"network.mode=simulated", "regime=gradient", "topology=allreduce", "network.profile=3g"},
          "a simulated ring carries time, not loss"));
  EXPECT_TRUE(has(
      {"network.mode=simulated", "regime=gradient", "topology=allreduce", "allreduce.elastic=true"},
      "does not model a ring re-formed mid-round"));
  EXPECT_TRUE(has({"network.mode=emulated", "regime=async", "network.profile=custom",
                   "network.custom.availability=0.5"},
                  "a profile with availability < 1 needs the parameter-server topology"));
  // what can run
  EXPECT_EQ(refusal({"network.mode=emulated", "regime=async", "network.profile=3g"}), "");
  EXPECT_EQ(refusal({"network.mode=emulated", "regime=gradient", "topology=master"}), "");
  EXPECT_EQ(refusal({"network.mode=simulated", "network.heterogeneous=wifi:0.5,custom:0.5"}), "");
  EXPECT_EQ(refusal({"network.mode=simulated", "regime=gradient", "topology=master",
                     "network.server=wifi"}),
            "");
  EXPECT_EQ(refusal({"network.mode=simulated", "regime=async", "network.profile=lte"}), "");
  EXPECT_EQ(refusal({"network.mode=simulated", "regime=gradient", "topology=allreduce",
                     "network.heterogeneous=wifi:0.5,lte:0.5"}),
            "");
}

}  // namespace
}  // namespace fedpar
