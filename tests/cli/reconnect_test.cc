// A client's TCP connection that drops mid-run: ZeroMQ reconnects, and the process stays in the
// run because it comes back under the routing id it had (transport/transport.cc). Real server and
// client processes; the clients reach the server through a relay that resets their connections.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "tests/util/distributed_run.h"
#include "tests/util/process.h"
#include "tests/util/tcp_proxy.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

// 4 rounds of 4 clients on 2 processes; client 0 waits 2 s before each update, so a cut 0.3 s
// into round 3 lands while its process computes and the other one waits for its next task, and
// both have well over a second to reconnect before round 4's TASK goes out (a message the server
// sends to a process while it is away is lost, as under loss).
const std::vector<std::string> kSets = {"regime=model", "rounds=4", "partition.clients=4",
                                        "stragglers.delay_seconds=0:2", "wait_seconds=10"};

// The port of a tcp:// endpoint, for a relay in front of it.
uint16_t port_of(const std::string& endpoint) {
  std::smatch port;
  EXPECT_TRUE(std::regex_search(endpoint, port, std::regex(":([0-9]+)$"))) << endpoint;
  return port.empty() ? 0 : uint16_t(std::stoi(port[1]));
}

// Both connections are reset during round 3. Each client reconnects (the relay accepts 4
// connections in all), the update queued meanwhile reaches the server as its process's (which
// the server, seeing its connection close, awaited once a PING found it back), nobody misses a
// deadline, and the run ends with the model of the same run without the relay.
TEST(DistributedFaults, AConnectionThatDropsAndComesBackKeepsItsProcessInTheRun) {
  TempDir tmp;
  const auto direct = testing::run_distributed(tmp, "direct", "tcp://127.0.0.1:*", 2, kSets);
  ASSERT_EQ(direct.server_code, 0) << direct.err;

  const auto server = testing::spawn_server(tmp, "cut", 2, kSets);
  testing::TcpProxy relay(port_of(server.endpoint));
  const auto clients =
      testing::spawn_clients(2, "tcp://127.0.0.1:" + std::to_string(relay.port()), tmp.path());
  testing::wait_for_round(tmp, "cut", 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  relay.cut();
  const int code = testing::wait_exit(server.pid, 60).value_or(-99);
  for (pid_t c : clients) EXPECT_EQ(testing::wait_exit(c, 30).value_or(-99), 0);
  const std::string err = testing::slurp(tmp / "cut.err");
  ASSERT_EQ(code, 0) << err;
  EXPECT_EQ(relay.accepted(), 4);
  EXPECT_EQ(err.find("no update from"), std::string::npos) << err;
  // the server saw the computing process's connection close, and its PING then reach it again
  EXPECT_NE(err.find("round 3: the process of virtual clients 0, 2 lost its connection and "
                     "reconnected; its answer is awaited"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("round 4/4: 4 updates"), std::string::npos) << err;
  std::smatch hash;
  const std::string out = testing::slurp(tmp / "cut.out");
  ASSERT_TRUE(std::regex_search(out, hash, std::regex("final model hash: ([0-9a-f]{16})"))) << out;
  EXPECT_EQ(hash[1], direct.hash);
}

// Two processes; the first, behind the relay, has its connection cut (and every new one refused
// for `down`) while it waits for the run to start. The second comes once the server has logged
// each of `logged` in turn, and the run completes with both.
void cut_while_waiting_to_start(const std::string& tag, std::chrono::milliseconds down,
                                const std::vector<std::string>& logged) {
  TempDir tmp;
  const auto server = testing::spawn_server(tmp, tag, 2, {"rounds=3", "wait_seconds=30"});
  testing::TcpProxy relay(port_of(server.endpoint));
  const pid_t relayed = testing::spawn_fedpar(
      {"client", "--server", "tcp://127.0.0.1:" + std::to_string(relay.port())},
      tmp / "relayed.out", tmp / "relayed.err");
  const auto log = tmp / (tag + ".err");
  ASSERT_TRUE(testing::wait_for_text(log, "client process 1 of 2 connected", 15))
      << testing::slurp(log);
  relay.cut(down);
  for (const auto& line : logged)
    ASSERT_TRUE(testing::wait_for_text(log, line, 15)) << line << "\n" << testing::slurp(log);
  const pid_t direct = testing::spawn_fedpar({"client", "--quiet", "--server", server.endpoint},
                                             tmp / "direct.out", tmp / "direct.err");
  EXPECT_EQ(testing::wait_exit(server.pid, 60).value_or(-99), 0) << testing::slurp(log);
  EXPECT_EQ(testing::wait_exit(relayed, 20).value_or(-99), 0)
      << testing::slurp(tmp / "relayed.err");
  EXPECT_EQ(testing::wait_exit(direct, 20).value_or(-99), 0);
  EXPECT_EQ(relay.accepted(), 2);  // the first connection and the one that came back
}

// A connection that drops while its process waits for the run to start comes back, and the
// process keeps its place: the server's PING finds it (the client takes the PING for no answer,
// not for a bad WELCOME), and the run starts when the second process comes.
TEST(DistributedFaults, AConnectionThatDropsBeforeTheRunStartsKeepsItsPlace) {
  cut_while_waiting_to_start(
      "early", std::chrono::milliseconds(0),
      {"lost its connection before the run started and reconnected: it keeps its place"});
}

// A connection down for longer than the server waits (3 s against 2) while its process waits
// for the run to start: the server frees the place, and the process, reconnected, says HELLO again
// and takes it back (before, it waited out --wait for a WELCOME that could not come).
TEST(DistributedFaults, AProcessWhosePlaceWasFreedTakesItBackWhenItReconnects) {
  cut_while_waiting_to_start(  // the second "1 of 2" is the same process's HELLO
      "long", std::chrono::milliseconds(3000),
      {"its place is free (0 of 2 processes now)",
       "place is free (0 of 2 processes now)\nserver: client process 1 of 2 connected"});
}

// A process whose connection drops, comes back, and then dies before it sends anything over the
// new one is still noticed within seconds: the server keeps PINGing a reconnected process until
// its next message, and a PING that stops getting through starts the 2 s watch again (before, it
// waited out the round's deadline, 30 s here). The process of clients 0, 2, 3 (3 slots; client 0
// waits 3 s before its update) reaches the server through the relay, the other directly; the
// gradient regime needs every client, so the server stops at once when it sees the death.
TEST(DistributedFaults, AProcessThatReconnectsAndThenDiesIsNoticedWithinSeconds) {
  TempDir tmp;
  const auto server =
      testing::spawn_server(tmp, "twice", 2,
                            {"regime=gradient", "rounds=50", "partition.clients=4", "max_slots=3",
                             "stragglers.delay_seconds=0:3", "wait_seconds=30"});
  const std::string& endpoint = server.endpoint;
  testing::TcpProxy relay(port_of(endpoint));
  const pid_t relayed = testing::spawn_fedpar({"client", "--quiet", "--slots", "3", "--server",
                                               "tcp://127.0.0.1:" + std::to_string(relay.port())},
                                              tmp / "relayed.out", tmp / "relayed.err");
  const pid_t direct = testing::spawn_fedpar({"client", "--quiet", "--server", endpoint},
                                             tmp / "direct.out", tmp / "direct.err");
  testing::wait_for_round(tmp, "twice", 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  relay.cut();  // during round 3, while client 0 waits
  ASSERT_TRUE(testing::wait_for_text(
      tmp / "twice.err",
      "round 3: the process of virtual clients 0, 2, 3 lost its connection and reconnected", 10))
      << testing::slurp(tmp / "twice.err");
  kill(relayed, SIGKILL);  // before client 0's update: nothing came over the new connection
  const auto killed = std::chrono::steady_clock::now();
  waitpid(relayed, nullptr, 0);
  EXPECT_EQ(testing::wait_exit(server.pid, 60).value_or(-99), kExitRunFailed);
  EXPECT_LT(std::chrono::steady_clock::now() - killed, std::chrono::seconds(10));
  const std::string err = testing::slurp(tmp / "twice.err");
  EXPECT_NE(err.find("round 3: the connection of the process of virtual clients 0, 2, 3 closed "
                     "and did not come back within 2 s"),
            std::string::npos)
      << err;
  EXPECT_EQ(testing::wait_exit(direct, 20).value_or(-99), kExitEndedByServer);
}

}  // namespace
}  // namespace fedpar
