// The emulated link against the kernel's traffic shaping (ctest -L netns; root only). Two network
// namespaces joined by a veth pair (10.77.0.1/24 and 10.77.0.2/24), the sender's side shaped with
// `tc qdisc add dev ... root tbf rate 10mbit burst 32kbit latency 400ms`; link_probe times a 4 MiB
// ZeroMQ transfer across them, then the same transfer over the first namespace's loopback through
// the emulated 10 Mbit/s uplink (transport/shaped_link.h). The two times must agree within 15%.
// Traffic goes only to loopback or to the addresses inside the namespaces this test makes; the
// namespaces (and the veth pair with them) are removed when the test ends, pass or fail.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/util/netns.h"
#include "tests/util/process.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

constexpr size_t kBytes = 4 << 20;  // 4 MiB: 3.36 s at 10 Mbit/s
constexpr double kRateBps = 10e6;

using testing::sh;

// Two namespaces and a veth pair between them, removed on destruction.
struct Namespaces {
  static std::string id() { return std::to_string(::getpid()); }
  std::string a = "fedpar-tbf-a-" + id(), b = "fedpar-tbf-b-" + id();
  std::string va = "fpa" + id(), vb = "fpb" + id();
  testing::NetNamespaces made{
      {a, b},
      {"ip link add " + va + " netns " + a + " type veth peer name " + vb + " netns " + b,
       "ip -n " + a + " addr add 10.77.0.1/24 dev " + va,
       "ip -n " + b + " addr add 10.77.0.2/24 dev " + vb, "ip -n " + a + " link set lo up",
       "ip -n " + b + " link set lo up", "ip -n " + a + " link set " + va + " up",
       "ip -n " + b + " link set " + vb + " up"}};
  std::string shape = "tc qdisc add dev " + vb + " root tbf rate 10mbit burst 32kbit latency 400ms";
};

// One transfer: the receiver in namespace `rns` at `endpoint`, the sender in `sns`. Seconds.
double transfer(const TempDir& tmp, const std::string& rns, const std::string& sns,
                const std::string& endpoint, double emulate_bps) {
  std::vector<std::string> args = {"receive", endpoint, std::to_string(kBytes)};
  if (emulate_bps > 0) args.push_back(std::to_string(emulate_bps));
  const pid_t receiver =
      testing::spawn_in_netns(rns, LINK_PROBE, args, tmp / "receiver.txt", tmp / "receiver.err");
  const pid_t sender =
      testing::spawn_in_netns(sns, LINK_PROBE, {"send", endpoint, std::to_string(kBytes)},
                              tmp / "sender.txt", tmp / "sender.err");
  EXPECT_GT(receiver, 0);
  EXPECT_GT(sender, 0);
  const auto r = receiver > 0 ? testing::wait_exit(receiver, 90) : std::nullopt;
  const auto s = sender > 0 ? testing::wait_exit(sender, 10) : std::nullopt;
  EXPECT_EQ(r, 0) << "receiver in " << rns;
  EXPECT_EQ(s, 0) << "sender in " << sns;
  double seconds = -1;
  size_t bytes = 0;
  std::sscanf(testing::slurp(tmp / "receiver.txt").c_str(), "seconds %lf bytes %zu", &seconds,
              &bytes);
  EXPECT_GE(bytes, kBytes);
  return seconds;
}

TEST(KernelCheck, EmulatedUplinkTakesAsLongAsTbfWithin15Percent) {
  if (const std::string why = testing::netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
  Namespaces ns;
  if (!ns.made.error.empty())
    GTEST_SKIP() << "cannot make network namespaces here: " << ns.made.error;
  const auto [code, out] = sh("ip netns exec " + ns.b + " " + ns.shape);
  ASSERT_EQ(code, 0) << ns.shape << ": " << out;
  TempDir tmp;

  const double kernel = transfer(tmp, ns.a, ns.b, "tcp://10.77.0.1:5601", 0);
  const double emulated = transfer(tmp, ns.a, ns.a, "tcp://127.0.0.1:5602", kRateBps);
  const double wire = kBytes * 8 / kRateBps;
  RecordProperty("tbf_seconds", std::to_string(kernel));
  RecordProperty("emulated_seconds", std::to_string(emulated));
  std::printf(
      "%zu bytes at 10 Mbit/s: payload alone %.3f s; tbf %.3f s; emulated %.3f s; "
      "emulated / tbf = %.3f\n",
      kBytes, wire, kernel, emulated, emulated / kernel);
  ASSERT_GT(kernel, 0.9 * wire) << "the tbf qdisc did not shape the transfer";
  ASSERT_GT(emulated, 0);
  EXPECT_NEAR(emulated / kernel, 1.0, 0.15);
}

}  // namespace
}  // namespace fedpar
