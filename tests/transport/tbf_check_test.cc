// The emulated link against the kernel's traffic shaping (ctest -L netns; root only). Two network
// namespaces joined by a veth pair (10.77.0.1/24 and 10.77.0.2/24), the sender's side shaped with
// `tc qdisc add dev ... root tbf rate 10mbit burst 32kbit latency 400ms`; link_probe times a 4 MiB
// ZeroMQ transfer across them, then the same transfer over the first namespace's loopback through
// the emulated 10 Mbit/s uplink (transport/shaped_link.h). The two times must agree within 15%.
// Traffic goes only to loopback or to the addresses inside the namespaces this test makes; the
// namespaces (and the veth pair with them) are removed when the test ends, pass or fail.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
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

#include "tests/util/test_util.h"

extern char** environ;

namespace fedpar {
namespace {

using testing::TempDir;

constexpr size_t kBytes = 4 << 20;  // 4 MiB: 3.36 s at 10 Mbit/s
constexpr double kRateBps = 10e6;

// Runs a shell command; its exit code and what it printed (stdout and stderr).
std::pair<int, std::string> sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Two namespaces and a veth pair between them, removed on destruction.
class Namespaces {
 public:
  Namespaces() {
    const std::string id = std::to_string(::getpid());
    a = "fedpar-tbf-a-" + id, b = "fedpar-tbf-b-" + id;
    const std::string va = "fpa" + id, vb = "fpb" + id;
    remove();  // a namespace left by a killed run with this pid
    for (const std::string& cmd :
         {"ip netns add " + a, "ip netns add " + b,
          "ip link add " + va + " netns " + a + " type veth peer name " + vb + " netns " + b,
          "ip -n " + a + " addr add 10.77.0.1/24 dev " + va,
          "ip -n " + b + " addr add 10.77.0.2/24 dev " + vb, "ip -n " + a + " link set lo up",
          "ip -n " + b + " link set lo up", "ip -n " + a + " link set " + va + " up",
          "ip -n " + b + " link set " + vb + " up"}) {
      const auto [code, out] = sh(cmd);
      if (code != 0) {
        error = cmd + ": " + out;
        return;
      }
    }
    shape = "tc qdisc add dev " + vb + " root tbf rate 10mbit burst 32kbit latency 400ms";
  }
  ~Namespaces() { remove(); }
  void remove() const {
    sh("ip netns del " + a);
    sh("ip netns del " + b);
  }
  std::string a, b, error, shape;
};

// `ip netns exec NS link_probe ARGS...` with stdout to `out`.
pid_t spawn_probe(const std::string& ns, std::vector<std::string> args,
                  const std::filesystem::path& out) {
  std::vector<std::string> all = {"ip", "netns", "exec", ns, LINK_PROBE};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : all) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "ip", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// The exit code, or nullopt when it had to be killed after `seconds`.
std::optional<int> wait_for(pid_t pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return std::nullopt;
}

// One transfer: the receiver in namespace `rns` at `endpoint`, the sender in `sns`. Seconds.
double transfer(const TempDir& tmp, const std::string& rns, const std::string& sns,
                const std::string& endpoint, double emulate_bps) {
  std::vector<std::string> args = {"receive", endpoint, std::to_string(kBytes)};
  if (emulate_bps > 0) args.push_back(std::to_string(emulate_bps));
  const pid_t receiver = spawn_probe(rns, args, tmp / "receiver.txt");
  const pid_t sender =
      spawn_probe(sns, {"send", endpoint, std::to_string(kBytes)}, tmp / "sender.txt");
  EXPECT_GT(receiver, 0);
  EXPECT_GT(sender, 0);
  const auto r = receiver > 0 ? wait_for(receiver, 90) : std::nullopt;
  const auto s = sender > 0 ? wait_for(sender, 10) : std::nullopt;
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
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces and tc)";
  if (sh("command -v ip && command -v tc").first != 0)
    GTEST_SKIP() << "needs ip and tc (apt-get install iproute2)";
  Namespaces ns;
  if (!ns.error.empty()) GTEST_SKIP() << "cannot make network namespaces here: " << ns.error;
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
