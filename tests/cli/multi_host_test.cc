// Three hosts on one machine (ctest -L netns; root only, skipped otherwise): network namespaces
// for the server and two client processes, each client joined by a veth pair to a bridge in the
// server's namespace, addresses from 198.18.0.0/15 (the benchmarking range, private to the test).
// A run across them ends with the model bytes of the same run on loopback; with one client's link
// shaped to 100 Mbit/s by the kernel's tbf in both directions, its rounds grow by that client's
// bytes over the bandwidth, within 20%. The namespaces go when the test ends, pass or fail.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/util/netns.h"
#include "tests/util/process.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

// A 1.1M-parameter MLP (4.5 MB each way per round): the shaped link's share of a round is large.
constexpr const char* kHostsRun =
    "seed = 2\nregime = 'model'\nrounds = 4\nprocesses = 2\neval_every = 4\n"
    "[data]\nname = 'synthetic'\niid = true\n[model]\nname = 'mlp'\nhidden = [1024, 1024]\n"
    "[partition]\nclients = 2\n[local]\nsteps = 1\nbatch = 10\n[optimizer]\nlr = 0.05\n";
constexpr double kShapedBps = 100e6;

// The server's namespace with a bridge at 198.18.0.1; client i's namespace at 198.18.0.(1 + i).
struct Hosts {
  static std::string id() { return std::to_string(::getpid()); }
  std::string server = "fedpar-host-s-" + id();
  std::vector<std::string> clients = {"fedpar-host-c1-" + id(), "fedpar-host-c2-" + id()};
  // each client's veth pair: its end in the bridge, and its own
  std::vector<std::string> bridge_ends = {"fhb1" + id(), "fhb2" + id()};
  std::vector<std::string> client_ends = {"fhc1" + id(), "fhc2" + id()};
  testing::NetNamespaces made{{server, clients[0], clients[1]}, setup()};

  std::vector<std::string> setup() const {
    std::vector<std::string> cmds = {"ip -n " + server + " link add br0 type bridge",
                                     "ip -n " + server + " link set br0 up",
                                     "ip -n " + server + " addr add 198.18.0.1/24 dev br0",
                                     "ip -n " + server + " link set lo up"};
    for (size_t i = 0; i < clients.size(); ++i) {
      const std::string& c = clients[i];
      cmds.push_back("ip link add " + bridge_ends[i] + " netns " + server +
                     " type veth peer name " + client_ends[i] + " netns " + c);
      cmds.push_back("ip -n " + server + " link set " + bridge_ends[i] + " master br0");
      cmds.push_back("ip -n " + server + " link set " + bridge_ends[i] + " up");
      cmds.push_back(
          fmt::format("ip -n {} addr add 198.18.0.{}/24 dev {}", c, i + 2, client_ends[i]));
      cmds.push_back("ip -n " + c + " link set " + client_ends[i] + " up");
      cmds.push_back("ip -n " + c + " link set lo up");
    }
    return cmds;
  }
};

// One run across the hosts: the server in its namespace, a client process in each client's.
// Returns the results folder (name under tmp/res).
std::filesystem::path run_across(const Hosts& h, const TempDir& tmp, const std::string& name,
                                 int port) {
  const std::string endpoint = fmt::format("tcp://198.18.0.1:{}", port);
  const pid_t server = testing::spawn_in_netns(
      h.server, FEDPAR_BIN,
      {"server", "--quiet", "--config", (tmp / "run.toml").string(), "--set", "bind=" + endpoint,
       "--set", "results_dir=" + (tmp / "res").string(), "--set", "name=" + name},
      tmp / (name + ".server.out"), tmp / (name + ".server.err"));
  std::vector<pid_t> clients;
  for (const auto& c : h.clients)
    clients.push_back(
        testing::spawn_in_netns(c, FEDPAR_BIN, {"client", "--quiet", "--server", endpoint},
                                tmp / (name + "." + c + ".out"), tmp / (name + "." + c + ".err")));
  EXPECT_EQ(testing::wait_exit(server, 120), 0) << testing::slurp(tmp / (name + ".server.err"));
  for (const pid_t c : clients) EXPECT_EQ(testing::wait_exit(c, 20), 0);
  return tmp / "res" / name;
}

// The mean of the server's wait for updates over rounds 2 .. (round 1 includes the start).
double mean_round_wait(const std::filesystem::path& run) {
  double sum = 0;
  int n = 0;
  for (const auto& row : testing::jsonl(run / "metrics.jsonl"))
    if (row.value("kind", "") == "round" && row.at("round").get<int>() > 1)
      sum += row.at("wait_seconds").get<double>(), ++n;
  return n ? sum / n : -1;
}

// The bytes one client process moved each round (down and up), the mean over rounds 2 ...
double mean_process_bytes(const std::filesystem::path& run) {
  double sum = 0;
  int n = 0;
  for (const auto& row : testing::jsonl(run / "metrics.jsonl"))
    if (row.value("kind", "") == "round" && row.at("round").get<int>() > 1)
      for (const auto& p : row.at("processes"))
        sum += p.at("bytes_down").get<double>() + p.at("bytes_up").get<double>(), ++n;
  return n ? sum / n : -1;
}

class MultiHost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = testing::netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    if (!hosts.made.error.empty())
      GTEST_SKIP() << "cannot make network namespaces here: " << hosts.made.error;
    std::ofstream(tmp / "run.toml") << kHostsRun;
  }
  Hosts hosts;
  TempDir tmp;
};

TEST_F(MultiHost, ARunAcrossThreeHostsEndsWithTheLoopbackRunsBytes) {
  const auto across = run_across(hosts, tmp, "hosts", 5801);
  const auto local = testing::run_fedpar("run " + (tmp / "run.toml").string() +
                                             " --set results_dir=" + (tmp / "res").string() +
                                             " --set name=loopback",
                                         tmp.path());
  ASSERT_EQ(local.code, 0) << local.err;
  EXPECT_EQ(testing::model_hash(across), testing::model_hash(tmp / "res" / "loopback"));
}

TEST_F(MultiHost, AShapedLinkSlowsRoundsAsBytesOverBandwidthPredict) {
  const double open = mean_round_wait(run_across(hosts, tmp, "open", 5802));
  // the first client's link at 100 Mbit/s both ways: its own end shapes what it sends, the
  // bridge's end what it receives
  for (const std::string& shape :
       {"ip netns exec " + hosts.clients[0] + " tc qdisc add dev " + hosts.client_ends[0] +
            " root tbf rate 100mbit burst 128kb latency 400ms",
        "ip netns exec " + hosts.server + " tc qdisc add dev " + hosts.bridge_ends[0] +
            " root tbf rate 100mbit burst 128kb latency 400ms"}) {
    const auto [code, out] = testing::sh(shape);
    ASSERT_EQ(code, 0) << shape << ": " << out;
  }
  const auto shaped_run = run_across(hosts, tmp, "shaped", 5803);
  const double shaped = mean_round_wait(shaped_run);
  const double bytes = mean_process_bytes(shaped_run);
  const double predicted = bytes * 8 / kShapedBps;
  std::printf(
      "round wait: open %.3f s, shaped %.3f s; a client moves %.0f bytes a round: %.3f s at "
      "100 Mbit/s; measured growth %.3f s = %.3f x the prediction\n",
      open, shaped, bytes, predicted, shaped - open, (shaped - open) / predicted);
  ASSERT_GT(open, 0);
  ASSERT_GT(bytes, 8e6) << "the model is smaller than the test needs";
  EXPECT_NEAR((shaped - open) / predicted, 1.0, 0.2);
}

}  // namespace
}  // namespace fedpar
