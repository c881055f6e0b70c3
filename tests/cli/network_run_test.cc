// [network] in whole runs (docs/network.md): the server and its client processes as threads over
// inproc:// (and once as real processes over tcp via `fedpar run`). Emulated mode really slows the
// rounds down to at least the emulated transfer time and ends with the model of the run without
// it; simulated mode finishes at full speed with each round's simulated_seconds equal to the
// formula; availability and loss leave out the clients the seeded draws say, in both modes.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "clients/client.h"
#include "core/network.h"
#include "core/run_spec.h"
#include "server/server.h"
#include "tests/util/inproc_run.h"
#include "tests/util/network_draws.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using nlohmann::json;
using testing::TempDir;

// 4 clients on 2 processes (clients 0, 2 on the first to say HELLO, 1, 3 on the other); the MLP
// 60-32-10 has 2,282 parameters: a 9,128-byte model frame.
constexpr const char* kNetworkRun =
    "seed = 3\nrounds = 3\nprocesses = 2\n[partition]\nclients = 4\n"
    "[data]\nname = 'synthetic'\niid = true\n[model]\nname = 'mlp'\nhidden = [32]\n";

using RunResult = testing::InprocRun;

RunResult run_on_threads(const TempDir& tmp, const std::string& name,
                         const std::vector<std::string>& sets) {
  return testing::run_on_threads(kNetworkRun, tmp / "threads", name, sets);
}

const std::vector<std::string> kModel = {"regime=model", "local.steps=2", "local.batch=10"};
const std::vector<std::string> kLink = {"network.profile=custom", "network.custom.down_bps=1e6",
                                        "network.custom.up_bps=1e6",
                                        "network.custom.latency_seconds=0.05"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

double bits(const json& bytes) { return double(bytes.get<uint64_t>()) * 8; }

std::string line_count(const std::map<uint32_t, int>& per_client) {
  std::string s;
  for (const auto& [c, n] : per_client) s += fmt::format("client {}: {}; ", c, n);
  return s;
}

// At 1 Mbit/s with 50 ms each way, a round cannot be shorter than the TASK's model frame down,
// then the two UPDATEs of one process up one after the other (a process's uplink is one link),
// plus the latency each way; it is not much longer either (the compute, and scheduling: up to a
// second, as a loaded 2-core machine delays the processes by a few tenths; a delay counted in ms as
// s, or once per frame, would add far more).
TEST(NetworkRun, EmulatedRoundsLastAtLeastTheEmulatedTransfersAndTrainTheSameModel) {
  TempDir tmp;
  const RunResult off = run_on_threads(tmp, "off", kModel);
  const RunResult emu =
      run_on_threads(tmp, "emulated", with(with(kModel, kLink), {"network.mode=emulated"}));
  ASSERT_EQ(emu.rounds.size(), 3u);
  EXPECT_EQ(emu.hash, off.hash);  // no loss, everyone available: the same training
  double emulated_total = 0;
  for (const auto& rec : emu.rounds) {
    std::map<int64_t, double> up_bits;  // per process
    double compute = 0;
    for (const auto& c : rec.at("clients")) {
      up_bits[c.at("process").get<int64_t>()] += bits(c.at("bytes_up"));
      compute += c.at("compute_seconds").get<double>();
    }
    ASSERT_EQ(up_bits.size(), 2u);
    double up = 0;
    for (const auto& [p, b] : up_bits) up = std::max(up, b / 1e6);
    const double down = bits(rec.at("bytes_down_per_task")) / 1e6;
    const double floor = down + 0.05 + up + 0.05;  // about 0.35 s
    EXPECT_GT(down, 0.07);
    EXPECT_GE(rec.at("wait_seconds").get<double>(), floor);
    EXPECT_GE(rec.at("emulated_seconds").get<double>(), floor);
    EXPECT_LT(rec.at("emulated_seconds").get<double>(), floor + compute + 1.0);
    emulated_total += rec.at("emulated_seconds").get<double>();
    EXPECT_NEAR(rec.at("emulated_time").get<double>(), emulated_total, 1e-9);
    EXPECT_EQ(rec.at("unavailable"), json::array());
    EXPECT_FALSE(rec.contains("simulated_seconds"));
  }
  EXPECT_GT(emu.seconds, off.seconds + 3 * 0.35 * 0.9);  // the run really slowed down
  for (const auto& rec : off.rounds) {
    EXPECT_FALSE(rec.contains("emulated_seconds"));
    EXPECT_FALSE(rec.contains("unavailable"));
  }
  EXPECT_FALSE(std::filesystem::exists(off.dir / "network.json"));
  const json net = json::parse(std::ifstream(emu.dir / "network.json"));
  EXPECT_EQ(net.at("mode"), "emulated");
  EXPECT_EQ(net.at("clients"), json({"custom", "custom", "custom", "custom"}));
  EXPECT_EQ(net.at("profiles")[0].at("up_bps"), 1e6);
  // emulated links are per process: which clients each one carries, over which link
  ASSERT_TRUE(net.contains("process_links")) << net.dump();
  std::vector<uint32_t> carried;
  for (const auto& p : net.at("process_links")) {
    EXPECT_EQ(p.at("link"), "custom");
    for (const auto& c : p.at("clients")) carried.push_back(c.get<uint32_t>());
  }
  EXPECT_EQ(net.at("process_links").size(), 2u);  // processes = 2
  std::ranges::sort(carried);
  EXPECT_EQ(carried, (std::vector<uint32_t>{0, 1, 2, 3}));

  // the same over tcp with real processes
  std::ofstream(tmp / "run.toml") << kNetworkRun;
  std::string args = fmt::format("run {} --set name=procs --set results_dir={}",
                                 (tmp / "run.toml").string(), (tmp / "processes").string());
  for (const auto& s : with(with(kModel, kLink), {"network.mode=emulated"})) args += " --set " + s;
  const auto r = testing::run_fedpar(args, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      json::parse(std::ifstream(tmp / "processes" / "procs" / "summary.json")).at("model_hash"),
      off.hash);
}

// A master step on emulated links: the model goes down and each gradient up a 1 Mbit/s link with
// 50 ms each way (logits and their gradients too), so the step lasts at least the model's
// transfer both ways and four latencies; its record says so on the emulated clock.
TEST(NetworkRun, EmulatedMasterStepsRecordTheirTime) {
  TempDir tmp;
  const RunResult emu = run_on_threads(
      tmp, "master",
      with(kLink, {"network.mode=emulated", "regime=gradient", "topology=master", "sgd.batch=10"}));
  ASSERT_EQ(emu.rounds.size(), 3u);
  const json summary = json::parse(std::ifstream(emu.dir / "summary.json"));
  const double model_bits = double(summary.at("parameters").get<uint64_t>()) * 32;
  const double floor = 2 * model_bits / 1e6 + 4 * 0.05;
  double total = 0;
  for (const auto& rec : emu.rounds) {
    ASSERT_TRUE(rec.contains("emulated_seconds")) << rec.dump();
    EXPECT_GE(rec.at("emulated_seconds").get<double>(), floor) << rec.dump();
    EXPECT_GE(rec.at("emulated_seconds").get<double>(), rec.at("wait_seconds").get<double>());
    total += rec.at("emulated_seconds").get<double>();
    EXPECT_NEAR(rec.at("emulated_time").get<double>(), total, 1e-9);
  }
}

// For each wait_seconds in `waits`, a one-round `fedpar run` of kNetworkRun with kModel, `sets`
// and that deadline: whether its stderr holds `warning` (the tight deadline, `waits[0]`, must say
// it; the loose one must not).
void expect_warned_at_first_only(const std::vector<int>& waits,
                                 const std::vector<std::string>& sets, const std::string& warning) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kNetworkRun;
  for (const int wait : waits) {
    std::string args = fmt::format("run {} --set name=wait{} --set results_dir={}",
                                   (tmp / "run.toml").string(), wait, (tmp / "res").string());
    for (const auto& s :
         with(with(kModel, sets), {"rounds=1", fmt::format("wait_seconds={}", wait)}))
      args += " --set " + s;
    const auto r = testing::run_fedpar(args, tmp.path());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.find(warning) != std::string::npos, wait == waits[0]) << r.err;
  }
}

// A link too slow for wait_seconds is named before the first round, with the least time a round
// takes on it: two 9,128-byte UPDATEs up 50 kbit/s are 2.9 s, over a 2 s deadline; the other
// process, on the same link, is counted. With 10 s the same run says nothing.
TEST(NetworkRun, AnEmulatedLinkTooSlowForTheDeadlineIsNamedBeforeTheFirstRound) {
  expect_warned_at_first_only(
      {2, 10},
      {"network.mode=emulated", "network.profile=custom", "network.custom.down_bps=1e9",
       "network.custom.up_bps=5e4"},
      "sends 2 update(s) of 0.01 MB a round up its emulated custom link (0.05 Mbit/s): at least "
      "3 s, more than wait_seconds = 2, so it would miss every deadline (and 1 other process(es) "
      "too). Raise wait_seconds (to 5 or more, a margin for compute), start more client processes "
      "(fewer clients each), or compress the updates");
}

// Async has a deadline too now (a task unanswered for wait_seconds is sent again): the same slow
// link is named before the first update, for the tasks its process holds at a time (it was not,
// and every task was sent again until the processes were dropped).
TEST(NetworkRun, AnEmulatedLinkTooSlowForAsyncTasksIsNamedBeforeTheFirstUpdate) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kNetworkRun;
  std::string args = fmt::format("run {} --set results_dir={}", (tmp / "run.toml").string(),
                                 (tmp / "res").string());
  for (const auto& s :
       {"regime=async", "sgd.batch=10", "rounds=1", "wait_seconds=2", "drop_after_missed_rounds=1",
        "network.mode=emulated", "network.profile=custom", "network.custom.down_bps=1e9",
        "network.custom.up_bps=5e4"})
    args += std::string(" --set ") + s;
  const auto r = testing::run_fedpar(args, tmp.path());
  EXPECT_NE(r.err.find("sends 2 update(s) of 0.01 MB at a time up its emulated custom link "
                       "(0.05 Mbit/s): at least 3 s, more than wait_seconds = 2, so it would miss "
                       "every deadline (and 1 other process(es) too) (each task sent again, and "
                       "the process dropped)"),
            std::string::npos)
      << r.err;
}

// Emulated links are per process: a process hosting clients 0 and 2 (2 processes, 4 clients dealt
// in turn) sends for both over client 0's link, which the server says when client 2's profile
// differs; the other process, whose clients share one profile, is not named.
TEST(NetworkRun, AnEmulatedProcessWhoseClientsHaveOtherProfilesSaysItsLinkIsShared) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kNetworkRun;
  std::string args = fmt::format("run {} --set results_dir={}", (tmp / "run.toml").string(),
                                 (tmp / "res").string());
  for (const auto& s : with(kModel, {"rounds=1", "network.mode=emulated",
                                     "network.profile=datacenter", "network.profiles=2:wifi"}))
    args += " --set " + s;
  const auto r = testing::run_fedpar(args, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("the process of virtual clients 0, 2 sends and receives for all of them "
                       "over client 0's datacenter link, also for 2 (wifi)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("virtual clients 1, 3 sends"), std::string::npos) << r.err;
  // a setting not applied as asked is a warning the results keep (it was a log line alone)
  for (const auto& e : std::filesystem::directory_iterator(tmp / "res")) {
    const auto summary = nlohmann::json::parse(testing::slurp(e.path() / "summary.json"));
    ASSERT_TRUE(summary.contains("warnings")) << summary.dump();
    EXPECT_TRUE(std::any_of(summary["warnings"].begin(), summary["warnings"].end(),
                            [](const nlohmann::json& w) {
                              return w.get<std::string>().find("also for 2 (wifi)") !=
                                     std::string::npos;
                            }))
        << summary.dump();
    EXPECT_NE(testing::slurp(e.path() / "README.md").find("also for 2 (wifi)"), std::string::npos);
  }
}

// Simulated, with drop_late: a client whose link cannot carry the model down and its update up
// within wait_seconds (client 0: 9,128 bytes each way at 10 kbit/s, 14.6 s) is named before the
// first round, as one left out; with 18 s the same run says nothing. With top-k on the uplink
// the model's download alone (7.3 s) still misses 5 s: a codec once kept the warning quiet.
TEST(NetworkRun, ASimulatedClientAlwaysLateIsNamedBeforeTheFirstRound) {
  const std::vector<std::string> slow = {"network.mode=simulated",    "network.profile=datacenter",
                                         "network.profiles=0:custom", "network.custom.down_bps=1e4",
                                         "network.custom.up_bps=1e4", "network.drop_late=true"};
  expect_warned_at_first_only(
      {5, 18}, slow,
      "warning: on round 1's simulated links, 1 of 4 clients would bring the model down (0.01 "
      "MB) and their update up (0.01 MB) after wait_seconds = 5 even with no compute, so "
      "network.drop_late would leave them out: custom (client 0: up to 14.");
  expect_warned_at_first_only(
      {5, 18}, with(slow, {"compression.uplink=topk", "compression.ratio=0.01"}),
      "1 of 4 clients would bring the model down (0.01 MB) and their update up (0.00 MB) after "
      "wait_seconds = 5 even with no compute, so network.drop_late would leave them out: custom "
      "(client 0: up to 7.");
}

// Simulated: no waiting, and each round's seconds are the formula over the round's own record:
// the slowest client's down (model frame / down_bps + latency) + compute + up (UPDATE / up_bps +
// latency), plus the measured aggregation; simulated_time sums them.
TEST(NetworkRun, SimulatedRoundsTakeTheFormulasTimeWithoutWaitingForIt) {
  TempDir tmp;
  const RunResult off = run_on_threads(tmp, "off", kModel);
  const RunResult sim =
      run_on_threads(tmp, "simulated", with(with(kModel, kLink), {"network.mode=simulated"}));
  ASSERT_EQ(sim.rounds.size(), 3u);
  EXPECT_EQ(sim.hash, off.hash);
  double total = 0;
  for (const auto& rec : sim.rounds) {
    double slowest = 0;
    ASSERT_EQ(rec.at("clients").size(), 4u);
    for (const auto& c : rec.at("clients"))
      slowest = std::max(slowest, bits(rec.at("bytes_down_per_task")) / 1e6 + 0.05 +
                                      c.at("compute_seconds").get<double>() +
                                      bits(c.at("bytes_up")) / 1e6 + 0.05);
    const double expected = slowest + rec.at("aggregate_seconds").get<double>();
    EXPECT_NEAR(rec.at("simulated_seconds").get<double>(), expected, 1e-12);
    EXPECT_GT(expected, 0.17);
    total += expected;
    EXPECT_NEAR(rec.at("simulated_time").get<double>(), total, 1e-9);
    EXPECT_EQ(rec.at("simulated_lost"), json::array());
    EXPECT_FALSE(rec.contains("emulated_seconds"));
    if (rec.at("round") > 1) {  // (the first round includes the clients' start)
      EXPECT_LT(rec.at("wait_seconds").get<double>(), expected / 2);  // it did not wait for it
    }
  }
  EXPECT_LT(sim.seconds, off.seconds + 0.5);
  // the run's README gives the network's time beside the bytes
  const std::string readme = testing::slurp(sim.dir / "README.md");
  EXPECT_NE(readme.find(fmt::format("- the simulated network's time by round 3: {:.1f} s",
                                    sim.rounds.back().at("simulated_time").get<double>())),
            std::string::npos)
      << readme;
}

// The ring on simulated links, its two workers on different profiles (custom and datacenter):
// each round's seconds are, from the round's own record and the run's network.json and hosts,
// the last worker ready (TASK down + compute) + the slowest ring sends (its bytes over the slower
// of its uplink and its neighbour's downlink, plus 2 (N - 1) steps each paying both links'
// latency) + the last report up (without the replica rank 0 sends for evaluation); the model is
// the unsimulated ring's.
TEST(NetworkRun, ASimulatedRingTakesItsLinksTime) {
  TempDir tmp;
  const std::vector<std::string> ring = {"regime=gradient", "topology=allreduce", "sgd.batch=10"};
  const RunResult off = run_on_threads(tmp, "ring-off", ring);
  const RunResult sim = run_on_threads(
      tmp, "ring-simulated",
      with(with(ring, kLink),
           {"network.mode=simulated", "network.profiles=1:datacenter,3:datacenter"}));
  ASSERT_EQ(sim.rounds.size(), 3u);
  EXPECT_EQ(sim.hash, off.hash);
  // each worker's link: its first client's profile
  const json net = json::parse(std::ifstream(sim.dir / "network.json"));
  const json hosts = json::parse(std::ifstream(sim.dir / "summary.json")).at("hosts");
  std::map<std::string, json> profiles;
  for (const auto& p : net.at("profiles")) profiles[p.at("name").get<std::string>()] = p;
  const auto link = [&](size_t process) {
    const auto client = hosts.at(process).at("clients").at(0).get<size_t>();
    return profiles.at(net.at("clients").at(client).get<std::string>());
  };
  ASSERT_NE(link(0).at("name"), link(1).at("name")) << net.dump();
  double total = 0;
  for (const auto& rec : sim.rounds) {
    double ready = 0, ring_s = 0, report = 0;
    ASSERT_EQ(rec.at("workers").size(), 2u);
    for (const auto& w : rec.at("workers")) {
      const auto process = w.at("process").get<size_t>();
      const json p = link(process), q = link(1 - process);  // the other is the next neighbour
      const auto& bytes = rec.at("processes").at(process);
      const auto lat = [](const json& l) { return l.at("latency_seconds").get<double>(); };
      ready = std::max(ready, bits(bytes.at("bytes_down")) / p.at("down_bps").get<double>() +
                                  lat(p) + w.at("compute_seconds").get<double>());
      ring_s = std::max(
          ring_s, bits(w.at("ring_bytes_sent")) /
                          std::min(p.at("up_bps").get<double>(), q.at("down_bps").get<double>()) +
                      2 * (lat(p) + lat(q)));
      // rank 0 (process 0) also sent its 9,128-byte replica for the server to evaluate: not the
      // step's (a parameter server evaluates for free)
      const double replica = process == 0 && rec.contains("test_accuracy") ? 9128 * 8 : 0;
      report = std::max(
          report, (bits(bytes.at("bytes_up")) - replica) / p.at("up_bps").get<double>() + lat(p));
    }
    const double expected = ready + ring_s + report;
    EXPECT_NEAR(rec.at("simulated_seconds").get<double>(), expected, 1e-12);
    EXPECT_GT(expected, 0.2);  // the custom link's four ring latencies at least
    total += expected;
    EXPECT_NEAR(rec.at("simulated_time").get<double>(), total, 1e-9);
  }
  EXPECT_FALSE(off.rounds.back().contains("simulated_seconds"));
}

// A server link of 1 Mbit/s, clients on datacenter links, one client per process (4): the
// parameter server's four TASKs share the server's uplink and its four UPDATEs its downlink, so a
// round lasts at least all their bits over 1 Mbit/s, with the compute between: from the fastest
// client's (the uplink is busy once its UPDATE starts) to the slowest's. The master carries four
// models, logits, dlogits and gradients through the same link, the ring only its small TASKs and
// reports (and one replica to evaluate): its rounds stay short. Every run trains the unsimulated
// run's model.
TEST(NetworkRun, AServerLinkIsSharedByEveryClientsMessages) {
  TempDir tmp;
  const std::vector<std::string> link = {
      "processes=4",           "network.mode=simulated",      "network.profile=datacenter",
      "network.server=custom", "network.custom.down_bps=1e6", "network.custom.up_bps=1e6"};
  const std::vector<std::string> ps = {"regime=gradient", "sgd.batch=10", "processes=4"};
  const RunResult off = run_on_threads(tmp, "ps-off", ps);
  const RunResult sim = run_on_threads(tmp, "ps-server-link", with(ps, link));
  EXPECT_EQ(sim.hash, off.hash);
  const json net = json::parse(std::ifstream(sim.dir / "network.json"));
  EXPECT_EQ(net.at("server").at("up_bps"), 1e6) << net.dump();
  const double lat = 2 * 10e-6;  // datacenter, each way
  for (const auto& rec : sim.rounds) {
    double up = 0, fastest = 1e9, slowest = 0;
    ASSERT_EQ(rec.at("clients").size(), 4u);
    for (const auto& c : rec.at("clients")) {
      up += bits(c.at("bytes_up"));
      fastest = std::min(fastest, c.at("compute_seconds").get<double>());
      slowest = std::max(slowest, c.at("compute_seconds").get<double>());
    }
    const double down = 4 * bits(rec.at("bytes_down_per_task"));
    const double t =
        rec.at("simulated_seconds").get<double>() - rec.at("aggregate_seconds").get<double>();
    EXPECT_GE(t, (down + up) / 1e6 + fastest + lat - 1e-9);
    EXPECT_LE(t, (down + up) / 1e6 + slowest + lat + 1e-9);
    EXPECT_GT(t, 0.5);  // 4 x 2 x 9 KB over 1 Mbit/s
  }

  const std::vector<std::string> master = {"regime=gradient", "topology=master", "sgd.batch=10",
                                           "processes=4"};
  const RunResult m = run_on_threads(tmp, "master-server-link", with(master, link));
  EXPECT_EQ(m.hash, run_on_threads(tmp, "master-off", master).hash);
  for (const auto& rec : m.rounds) {
    // both halves' messages, each one per process: every byte at the server's socket
    const double all = bits(rec.at("server_bytes_sent")) + bits(rec.at("server_bytes_received"));
    const double t = rec.at("simulated_seconds").get<double>() -
                     rec.at("aggregate_seconds").get<double>() -
                     rec.at("master_loss_seconds").get<double>();
    EXPECT_GE(t, all / 1e6 + 2 * lat - 1e-9);
    EXPECT_LE(t, all / 1e6 + 2 * lat + rec.at("worker_forward_seconds").get<double>() +
                     rec.at("worker_backward_seconds").get<double>() + 1e-9);
    EXPECT_GT(t, 0.5);
  }

  const std::vector<std::string> ring = {"regime=gradient", "topology=allreduce", "sgd.batch=10",
                                         "processes=4"};
  const RunResult r = run_on_threads(tmp, "ring-server-link", with(ring, link));
  EXPECT_EQ(r.hash, run_on_threads(tmp, "ring-off", ring).hash);
  // after round 1, whose TASKs bring the initial model, one replica comes back to be evaluated
  for (size_t k = 1; k < r.rounds.size(); ++k)
    EXPECT_LT(r.rounds[k].at("simulated_seconds").get<double>(),
              sim.rounds[k].at("simulated_seconds").get<double>() / 4);
}

// Asynchronous SGD on simulated links: clients 0 and 2 on the slow custom link (a 9 KB model takes
// 73 ms each way, plus 50 ms latency), 1 and 3 on datacenter links. The server applies updates in
// the order they reach it on the simulated clock, so updates.jsonl's simulated times never go
// back; a slow client's updates are at least its round trip apart; the fast clients get most of
// the updates; each round's simulated seconds are the clock's advance; and the replay of the log
// is the run's model.
// (Real processes over tcp: an async client may still be sending when the server stops, which
// a tcp socket queues and an inproc one, whose server end is gone, would wait on forever.)
TEST(NetworkRun, SimulatedAsyncAppliesUpdatesInTheOrderTheyReachTheServer) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kNetworkRun;
  std::string args = fmt::format("run {} --set name=async --set results_dir={}",
                                 (tmp / "run.toml").string(), (tmp / "res").string());
  for (const auto& set :
       with(with({"regime=async", "sgd.batch=10", "rounds=6"}, kLink),
            {"network.mode=simulated", "network.profiles=1:datacenter,3:datacenter"}))
    args += " --set " + set;
  const auto r = testing::run_fedpar(args, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  RunResult sim{tmp / "res" / "async", 0};
  std::ifstream metrics(sim.dir / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);)
    if (!line.empty()) sim.rounds.push_back(json::parse(line));
  ASSERT_EQ(sim.rounds.size(), 6u);
  std::istringstream log(testing::slurp(sim.dir / "updates.jsonl"));
  double last = 0;
  std::map<uint32_t, double> previous;  // each client's last arrival
  std::map<uint32_t, int> applied;
  const double round_trip = 2 * (9128.0 * 8 / 1e6 + 0.05);
  for (std::string line; std::getline(log, line);) {
    const json u = json::parse(line);
    const double t = u.at("simulated_seconds").get<double>();
    const auto c = u.at("client").get<uint32_t>();
    EXPECT_GE(t, last) << line;
    if (c % 2 == 0) {
      EXPECT_GE(t - previous[c], round_trip) << line;
    }
    last = previous[c] = t;
    applied[c] += u.at("applied").get<bool>() ? 1 : 0;
  }
  EXPECT_GT(applied[1] + applied[3], 4 * (applied[0] + applied[2])) << line_count(applied);
  double total = 0;
  for (const auto& rec : sim.rounds) {
    total += rec.at("simulated_seconds").get<double>();
    EXPECT_NEAR(rec.at("simulated_time").get<double>(), total, 1e-9);
  }
  EXPECT_NEAR(total, last, 1e-9);  // the last round ends with its last update
  // the log's order is the order applied: `fedpar replay` recomputes the same model
  const auto replay = testing::run_fedpar("replay " + sim.dir.string(), tmp.path());
  EXPECT_EQ(replay.code, 0) << replay.err;
  EXPECT_NE((replay.out + replay.err).find("matches the run's"), std::string::npos)
      << replay.out << replay.err;
}

// Asynchronous SGD over emulated links that lose 10% of the TASKs and UPDATEs: a lost message
// once left its client holding a task for good (after two such, the run ended: no update within
// wait_seconds). A task unanswered for wait_seconds is sent again, so every client goes on
// contributing to the end, no process is dropped, the rounds record whose tasks were sent again,
// no late answer is refused, and the log still replays to the run's model.
TEST(NetworkRun, EmulatedAsyncSendsALostTaskAgainAndEveryClientGoesOn) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kNetworkRun;
  std::string args = fmt::format("run {} --set name=lossy --set results_dir={}",
                                 (tmp / "run.toml").string(), (tmp / "res").string());
  for (const auto& set : with(with({"regime=async", "sgd.batch=10", "rounds=24", "processes=4",
                                    "wait_seconds=1", "drop_after_missed_rounds=50"},
                                   kLink),
                              {"network.mode=emulated", "network.custom.loss=0.1"}))
    args += " --set " + set;
  const auto r = testing::run_fedpar(args, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto dir = tmp / "res" / "lossy";
  const auto rounds = testing::jsonl(dir / "metrics.jsonl");
  ASSERT_EQ(rounds.size(), 24u);
  size_t resent = 0;
  for (const auto& rec : rounds) resent += rec.at("tasks_resent").size();
  EXPECT_GE(resent, 1u) << "96+ tasks and as many updates at 10% loss lost none?";
  EXPECT_NE(r.err.find("tasks sent again: client "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("holds no task"), std::string::npos) << r.err;
  const auto summary = json::parse(testing::slurp(dir / "summary.json"));
  for (const auto& h : summary.at("hosts")) EXPECT_FALSE(h.at("lost").get<bool>()) << h.dump();
  // every client's updates are applied in the run's last third too
  const auto updates = testing::jsonl(dir / "updates.jsonl");
  std::set<uint32_t> late_contributors;
  for (size_t i = 2 * updates.size() / 3; i < updates.size(); ++i)
    if (updates[i].at("applied").get<bool>())
      late_contributors.insert(updates[i].at("client").get<uint32_t>());
  EXPECT_EQ(late_contributors, (std::set<uint32_t>{0, 1, 2, 3}));
  const auto replay = testing::run_fedpar("replay " + dir.string(), tmp.path());
  EXPECT_EQ(replay.code, 0) << replay.err;
  EXPECT_NE((replay.out + replay.err).find("matches the run's"), std::string::npos)
      << replay.out << replay.err;
  // With error feedback the clients' residuals also moved with the answers that were lost or
  // late, which the log cannot show: replay says so rather than differing
  std::string config = testing::slurp(dir / "config.resolved.toml");
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"uplink = 'none'", "uplink = 'topk'"},
        {"error_feedback = false", "error_feedback = true"}}) {
    ASSERT_NE(config.find(from), std::string::npos) << config;
    config.replace(config.find(from), from.size(), to);
  }
  std::ofstream(dir / "config.resolved.toml") << config;
  testing::expect_refused("replay " + dir.string(), tmp.path(), 2,
                          "task again (a message lost, or an answer late): what the client "
                          "computed for the first moved its error-feedback residual");
}

// A client whose availability draw fails is not asked: the record lists it as unavailable, its
// update is absent, and the draws are (seed, client, round) alone. A round nobody is available
// for leaves the model as it is.
TEST(NetworkRun, UnavailableClientsAreNotAskedAndTheRecordSaysWho) {
  TempDir tmp;
  const std::vector<std::string> sets =
      with(kModel, {"network.mode=simulated", "network.profile=custom",
                    "network.custom.availability=0.5", "rounds=6"});
  const RunResult run = run_on_threads(tmp, "available", sets);
  Config cfg = make_run_config();
  cfg.merge_toml(kNetworkRun, "the test");
  cfg.set_all(sets);
  const RunSpec s = resolve_run_spec(cfg);
  ASSERT_EQ(run.rounds.size(), 6u);
  size_t left_out = 0;
  for (uint64_t r = 0; r < 6; ++r) {
    std::vector<uint32_t> unavailable, asked;
    for (uint32_t c = 0; c < 4; ++c)
      (client_available(s.network, s.seed, c, r) ? asked : unavailable).push_back(c);
    const json& rec = run.rounds[r];
    EXPECT_EQ(rec.at("unavailable").get<std::vector<uint32_t>>(), unavailable) << "round " << r;
    EXPECT_EQ(rec.at("participants").get<size_t>(), asked.size());
    std::vector<uint32_t> updated;
    if (rec.contains("clients"))
      for (const auto& c : rec.at("clients")) updated.push_back(c.at("client").get<uint32_t>());
    EXPECT_EQ(updated, asked) << "round " << r;
    left_out += unavailable.size();
  }
  EXPECT_GT(left_out, 0u);
  EXPECT_LT(left_out, 24u);
  // the run's README counts them over the run
  const std::string readme = testing::slurp(run.dir / "README.md");
  EXPECT_NE(readme.find(
                fmt::format("- {} of 24 sampled clients were unavailable and not asked", left_out)),
            std::string::npos)
      << readme;
  EXPECT_NE(run.hash, run_on_threads(tmp, "everyone", with(kModel, {"rounds=6"})).hash);
  EXPECT_EQ(run.hash, run_on_threads(tmp, "again", sets).hash);
  // no client ever available is refused: nothing would train
  const auto never = testing::run_fedpar(
      "run " + std::string(FEDPAR_SOURCE_DIR) +
          "/experiments/fedavg-mnist-2nn.toml --set network.mode=simulated --set "
          "network.profile=custom --set network.custom.availability=0",
      tmp.path());
  EXPECT_EQ(never.code, 2);
  EXPECT_NE(never.err.find("every client's profile has availability = 0, so no client would "
                           "ever take part"),
            std::string::npos)
      << never.err;
}

// A round every client of which was unavailable trained nothing: no train_loss (it once read 0,
// a perfect fit, pulling down any average of the curve), while every round with an update has one.
TEST(NetworkRun, ARoundWithoutAnUpdateHasNoTrainLoss) {
  TempDir tmp;
  const auto run = testing::run_config(
      tmp.path(),
      "rounds = 6\nprocesses = 2\nregime = 'model'\n[partition]\nclients = 4\n[data]\nname = "
      "'synthetic'\n[model]\nname = 'logreg'\n[network]\nmode = 'simulated'\nprofile = "
      "'custom'\n[network.custom]\navailability = 0.2\n",
      "sparse", "");
  ASSERT_EQ(run.code, 0) << run.err;
  int empty = 0;
  for (const json& rec : testing::jsonl(tmp / "res/sparse/metrics.jsonl")) {
    const bool trained = rec.at("received").get<int>() > 0;
    empty += !trained;
    EXPECT_EQ(rec.contains("train_loss"), trained) << rec.dump();
  }
  EXPECT_GE(empty, 1) << "no round without an update: the draws changed";
}

// A client computing 0.6 s against a simulated deadline of 0.2 s: late on the clock every round,
// left out and asked again, the round lasting the deadline. The server once waited only the
// deadline in real time too, so the straggler became a real miss: its process was dropped after
// three rounds, and the later rounds' clock read 0.0004 s.
// Real processes: a dropped one exits as told (threads in one process hung on it).
TEST(NetworkRun, AComputeStragglerPastASimulatedDeadlineIsLateNotDropped) {
  TempDir tmp;
  const auto run = testing::run_config(
      tmp.path(), kNetworkRun, "straggler",
      "--set regime=model --set local.steps=2 --set local.batch=10 --set network.mode=simulated "
      "--set network.profile=datacenter --set wait_seconds=0.2 --set network.drop_late=true "
      "--set rounds=4 --set 'stragglers.delay_seconds=[\"0:0.6\"]'");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err.find("gets no more tasks"), std::string::npos) << run.err;
  const auto rounds = testing::jsonl(tmp / "res/straggler/metrics.jsonl");
  ASSERT_EQ(rounds.size(), 4u);
  for (const json& rec : rounds) {
    EXPECT_EQ(rec.at("simulated_late").get<std::vector<uint32_t>>(), std::vector<uint32_t>{0})
        << rec.dump();
    EXPECT_EQ(rec.at("missing"), json::array()) << rec.dump();
    EXPECT_NEAR(rec.at("simulated_seconds").get<double>(),
                0.2 + rec.at("aggregate_seconds").get<double>(), 1e-12);
  }
}

// network.drop_late: client 0 on a 10 kbit/s link (its 9,128-byte TASK and UPDATE take 7.3 s
// each), the others on datacenter links, wait_seconds = 5: every round, client 0's update is in
// after the deadline on the simulated clock and is left out. The rounds record it late, last the
// deadline plus the aggregation, and train the model of the run where client 0 is never available;
// without drop_late the same links aggregate it (another model, each round over the deadline).
TEST(NetworkRun, DropLateLeavesOutTheUpdatesTheClockBringsInAfterTheDeadline) {
  TempDir tmp;
  const std::vector<std::string> links = with(
      kModel, {"network.mode=simulated", "network.profile=datacenter", "network.profiles=0:custom",
               "network.custom.down_bps=1e4", "network.custom.up_bps=1e4", "wait_seconds=5"});
  const RunResult late = run_on_threads(tmp, "late", with(links, {"network.drop_late=true"}));
  ASSERT_EQ(late.rounds.size(), 3u);
  for (const json& rec : late.rounds) {
    EXPECT_EQ(rec.at("simulated_late").get<std::vector<uint32_t>>(), std::vector<uint32_t>{0});
    EXPECT_EQ(rec.at("missing"), json::array());
    std::vector<uint32_t> aggregated;
    for (const auto& c : rec.at("clients")) aggregated.push_back(c.at("client").get<uint32_t>());
    EXPECT_EQ(aggregated, (std::vector<uint32_t>{1, 2, 3}));
    EXPECT_NEAR(rec.at("simulated_seconds").get<double>(),
                5.0 + rec.at("aggregate_seconds").get<double>(), 1e-12);
  }
  // the run's README counts them: 3 rounds, 3 of 4 aggregated each
  EXPECT_NE(testing::slurp(late.dir / "README.md")
                .find("- 3 of 12 updates came after wait_seconds = 5 on the simulated clock and "
                      "were left out (`network.drop_late`; each round's in metrics.jsonl's "
                      "`simulated_late`): custom: client 0\n"),
            std::string::npos)
      << testing::slurp(late.dir / "README.md");
  const RunResult absent =
      run_on_threads(tmp, "absent", with(links, {"network.custom.availability=0"}));
  EXPECT_EQ(late.hash, absent.hash);
  // A diagnostic's bytes (diagnostics.drift: a second vector in each UPDATE) neither make a
  // client late nor lengthen the clock: with wait_seconds = 18, client 0's 7.3 s down and 7.3 s
  // up are in time, and counted with the drift's 7.3 s more they would not be.
  for (const bool drift : {false, true}) {
    const RunResult r = run_on_threads(tmp, drift ? "drift" : "no-drift",
                                       with(links, {"network.drop_late=true", "wait_seconds=18",
                                                    fmt::format("diagnostics.drift={}", drift)}));
    for (const json& rec : r.rounds) {
      EXPECT_EQ(rec.at("simulated_late"), json::array()) << drift;
      EXPECT_EQ(rec.at("clients").size(), 4u) << drift;
      EXPECT_GT(rec.at("simulated_seconds").get<double>(), 14.6) << drift;
      EXPECT_LT(rec.at("simulated_seconds").get<double>(), 15.0) << drift;
    }
  }
  const RunResult kept = run_on_threads(tmp, "kept", links);
  EXPECT_NE(kept.hash, late.hash);
  for (const json& rec : kept.rounds) {
    EXPECT_EQ(rec.at("clients").size(), 4u);
    EXPECT_FALSE(rec.contains("simulated_late"));
  }
}

// Krum with drop_late: clients 0 and 1 on 10 kbit/s links are late every round, so 2 updates
// remain, too few for Krum even with f = 0 (it needs more than 2 f + 2 = 2): each round is
// aggregated by the median, says so in its record, and the run's README counts the rounds. The
// model is the one a median run with the same late clients trains; with the deadline raised, all
// 4 updates come and Krum picks one (another model, no fallback). Trimmed-mean that would cut
// none of the 2 does the same.
TEST(NetworkRun, KrumWithTooFewUpdatesLeftIsAggregatedByTheMedianAndSaysSo) {
  TempDir tmp;
  const std::vector<std::string> links =
      with(kModel, {"network.mode=simulated", "network.profile=datacenter",
                    "network.profiles=[\"0:custom\",\"1:custom\"]", "network.custom.down_bps=1e4",
                    "network.custom.up_bps=1e4", "network.drop_late=true", "wait_seconds=5"});
  const RunResult krum =
      run_on_threads(tmp, "krum", with(links, {"robust.rule=krum", "robust.byzantine=0"}));
  ASSERT_EQ(krum.rounds.size(), 3u);
  for (const json& rec : krum.rounds) {
    EXPECT_EQ(rec.at("simulated_late").get<std::vector<uint32_t>>(), (std::vector<uint32_t>{0, 1}));
    EXPECT_EQ(rec.at("robust_fallback"), "median");
  }
  EXPECT_NE(testing::slurp(krum.dir / "README.md")
                .find("- **3 of 3 rounds were aggregated by the median, not krum**: they had 2 "
                      "updates or fewer (2 f + 2, f = robust.byzantine = 0) (rounds 1, 2, 3; "
                      "metrics.jsonl's `robust_fallback`)\n"),
            std::string::npos)
      << testing::slurp(krum.dir / "README.md");
  EXPECT_EQ(krum.hash, run_on_threads(tmp, "median", with(links, {"robust.rule=median"})).hash);
  const RunResult in_time = run_on_threads(
      tmp, "in-time", with(links, {"robust.rule=krum", "robust.byzantine=0", "wait_seconds=60"}));
  for (const json& rec : in_time.rounds) {
    EXPECT_EQ(rec.at("clients").size(), 4u);
    EXPECT_FALSE(rec.contains("robust_fallback"));
  }
  EXPECT_NE(in_time.hash, krum.hash);
  // trimmed-mean's trim 0.25 cuts one of the 4 updates a round asks, none of the 2 that come: the
  // plain mean, which one attacker moves at will, so the median stands in and says so
  const RunResult trimmed =
      run_on_threads(tmp, "trimmed", with(links, {"robust.rule=trimmed-mean", "robust.trim=0.25"}));
  for (const json& rec : trimmed.rounds) EXPECT_EQ(rec.at("robust_fallback"), "median");
  EXPECT_NE(testing::slurp(trimmed.dir / "README.md")
                .find("- **3 of 3 rounds were aggregated by the median, not trimmed-mean**: they "
                      "had 3 updates or fewer (robust.trim = 0.25 cuts floor(trim n) = 0 of them: "
                      "the plain mean) (rounds 1, 2, 3; "),
            std::string::npos)
      << testing::slurp(trimmed.dir / "README.md");
  EXPECT_EQ(trimmed.hash, krum.hash);  // the median's
}

// Runs with seeds whose draws lose UPDATEs (one client of a process missing: the process answered,
// and stays; both: it missed the round) and a TASK (both of its clients at once), with
// drop_after_missed_rounds = 1 (the process is dropped at its first miss) and 3 (it misses a round
// and answers again later): the round records' `missing` lists are the ones predicted from the
// seed (a process once was dropped for one lost UPDATE among its clients'). SCAFFOLD's control
// variates keep a lost update's client out of step, so there one lost UPDATE drops its process:
// the seed of that case loses a single UPDATE of a process, which would not drop it otherwise.
TEST(NetworkRun, LostMessagesMissTheDeadlineAsTheSeededDrawsSay) {
  const double loss = 0.15;
  const int rounds = 4;
  TempDir tmp;
  // What the seed's draws must hold: limit 1 and its count of lost TASKs, a process dropped or
  // not (one that lost a single UPDATE in a round stays); limit 3, a process missing and back.
  struct Case {
    int limit, tasks_lost;
    bool dropped, scaffold = false;
  };
  for (const Case k : {Case{1, 0, true}, Case{1, 1, true}, Case{1, 0, false}, Case{3, -1, false},
                       Case{1, 0, true, true}}) {
    const auto comes_back = [](const testing::PredictedLosses& e) {
      for (uint32_t p = 0; p < 2; ++p) {
        bool missed = false;
        for (const auto& m : e.missing) {
          const bool now = m.count(p) || m.count(p + 2);
          if (missed && !now) return true;
          missed = missed || now;
        }
      }
      return false;
    };
    uint64_t seed = 1;
    testing::PredictedLosses expected;
    for (; seed < 500; ++seed) {  // something lost, the run not stopped
      expected = testing::predict_losses(seed, loss, rounds, k.limit, k.scaffold);
      if (expected.missing.empty() || expected.missing.back().empty()) continue;
      const bool dropped = expected.dropped_in[0] >= 0 || expected.dropped_in[1] >= 0;
      // SCAFFOLD's case: dropped, though the rule of other runs would keep every process
      const bool only_strict_drops = [&] {
        const auto lenient = testing::predict_losses(seed, loss, rounds, k.limit);
        return lenient.dropped_in[0] < 0 && lenient.dropped_in[1] < 0;
      }();
      if (k.limit == 1 ? dropped == k.dropped && expected.tasks_lost == k.tasks_lost &&
                             (!k.scaffold || only_strict_drops)
                       : comes_back(expected))
        break;
    }
    ASSERT_LT(seed, 500u);
    std::vector<std::string> sets = {fmt::format("seed={}", seed),
                                     "wait_seconds=1",
                                     "network.mode=emulated",
                                     "network.profile=custom",
                                     "network.custom.down_bps=1e9",
                                     "network.custom.up_bps=1e9",
                                     fmt::format("network.custom.loss={}", loss),
                                     fmt::format("rounds={}", rounds),
                                     fmt::format("drop_after_missed_rounds={}", k.limit)};
    if (k.scaffold) sets.push_back("local.algorithm=scaffold");
    const RunResult run = run_on_threads(
        tmp, fmt::format("lossy-{}-{}{}", seed, k.limit, k.scaffold ? "-scaffold" : ""),
        with(kModel, sets));
    ASSERT_EQ(run.rounds.size(), size_t(rounds));
    // dropped at its first miss, the process is told so, and exits as left out
    if (k.limit == 1) {
      EXPECT_EQ(run.clients_left_out, k.dropped ? 1 : 0) << "seed " << seed;
    }
    std::string story;
    for (const auto& m : expected.missing) story += fmt::format(" [{}]", fmt::join(m, " "));
    RecordProperty(fmt::format("seed_{}_limit_{}{}_expected_missing", seed, k.limit,
                               k.scaffold ? "_scaffold" : ""),
                   story);
    for (int r = 0; r < rounds; ++r) {
      const auto missing = run.rounds[r].at("missing").get<std::set<uint32_t>>();
      EXPECT_EQ(missing, expected.missing[r])
          << "round " << r + 1 << " (seed " << seed << ", limit " << k.limit << ")";
    }
  }
}

// A straggler's process dropped at its first miss is asked no more: the simulated clock charges
// round 1 its deadline, not the rounds after, which wait for the rest alone (it charged every
// round the deadline, as if the dropped process's clients were still awaited).
TEST(NetworkRun, TheSimulatedClockDoesNotWaitForADroppedProcess) {
  TempDir tmp;
  std::string sets;
  for (const auto& k :
       with(kModel, {"wait_seconds=1", "drop_after_missed_rounds=1", "stragglers.delay_seconds=0:2",
                     "network.mode=simulated", "network.profile=datacenter"}))
    sets += " --set " + k;
  const auto r = testing::run_config(tmp.path(), kNetworkRun, "dropped", sets);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rounds = testing::jsonl(tmp / "res" / "dropped" / "metrics.jsonl");
  ASSERT_EQ(rounds.size(), 3u);
  // the process of clients 0 and 2 (client 0 sleeps past the deadline) is dropped in round 1
  for (const auto& rec : rounds)
    EXPECT_EQ(rec.at("missing").get<std::vector<uint32_t>>(), (std::vector<uint32_t>{0, 2}));
  EXPECT_GE(rounds[0].at("simulated_seconds").get<double>(), 1.0);
  for (size_t k = 1; k < 3; ++k)
    EXPECT_LT(rounds[k].at("simulated_seconds").get<double>(), 0.5) << "round " << k + 1;
}

// A process that misses a round is asked again (drop_after_missed_rounds large), so with one
// client per process emulated loss leaves out, round by round, the clients simulated loss leaves
// out (the same draws), and both train the same model. Every round either mode's record names
// the same clients: emulated as `missing`, simulated as `simulated_lost`.
TEST(NetworkRun, EmulatedLossWithRetriesLeavesOutWhatSimulatedLossLeavesOut) {
  const double loss = 0.2;
  const int rounds = 5;
  TempDir tmp;
  const auto sets = [&](const std::string& mode) {
    return with(kModel,
                {"partition.clients=2", "wait_seconds=1", "drop_after_missed_rounds=1000",
                 "network.mode=" + mode, "network.profile=custom", "network.custom.down_bps=1e9",
                 "network.custom.up_bps=1e9", fmt::format("network.custom.loss={}", loss),
                 fmt::format("rounds={}", rounds)});
  };
  const RunResult emulated = run_on_threads(tmp, "emulated", sets("emulated"));
  const RunResult simulated = run_on_threads(tmp, "simulated", sets("simulated"));
  ASSERT_EQ(emulated.rounds.size(), size_t(rounds));
  ASSERT_EQ(simulated.rounds.size(), size_t(rounds));
  std::set<uint32_t> missed_before;
  bool came_back = false;  // a client that missed a round sent an update in a later one
  for (int r = 0; r < rounds; ++r) {
    const auto missing = emulated.rounds[r].at("missing").get<std::vector<uint32_t>>();
    const auto lost =
        simulated.rounds[r].value("simulated_lost", json::array()).get<std::vector<uint32_t>>();
    EXPECT_EQ(missing, lost) << "round " << r + 1;
    for (uint32_t c : missed_before)
      came_back = came_back || std::find(missing.begin(), missing.end(), c) == missing.end();
    missed_before.insert(missing.begin(), missing.end());
  }
  EXPECT_TRUE(came_back) << "seed 3's draws never lose a message and then deliver the client's "
                            "next: choose another loss";
  EXPECT_EQ(emulated.hash, simulated.hash);
}

}  // namespace
}  // namespace fedpar
