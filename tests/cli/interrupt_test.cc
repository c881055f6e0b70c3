// Stopping a command by a signal (Ctrl-C, kill, a closed terminal) leaves nothing behind and
// says what stopped it: `fedpar train` and `fedpar suite` remove their partial results folders
// and exit 128 + the signal; an interrupted `fedpar run` passes its signal on to the server.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/util/process.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

// Whether `dir` holds a hidden partial folder (a command writing its results), recursively.
bool writing(const std::filesystem::path& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->path().filename().string().find(".partial-") != std::string::npos) return true;
  return false;
}

// The processes `pid` started, with their command lines ("fedpar server ...").
std::vector<std::pair<pid_t, std::string>> children_with_args(pid_t pid) {
  std::vector<std::pair<pid_t, std::string>> out;
  std::ifstream children(fmt::format("/proc/{0}/task/{0}/children", pid));
  for (pid_t child; children >> child;) {
    std::string args = testing::slurp(fmt::format("/proc/{}/cmdline", child));
    std::replace(args.begin(), args.end(), '\0', ' ');
    out.emplace_back(child, args);
  }
  return out;
}

std::vector<pid_t> children(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& [child, args] : children_with_args(pid)) out.push_back(child);
  return out;
}

pid_t child_running(pid_t pid, const std::string& command) {
  for (const auto& [child, args] : children_with_args(pid))
    if (args.find("fedpar " + command) == 0) return child;
  return 0;
}

// Starts fedpar with `args` and waits (up to 60 s) until `predicate` holds.
pid_t start_and_wait(const TempDir& tmp, const std::vector<std::string>& args,
                     const std::function<bool()>& predicate) {
  const pid_t pid = testing::spawn_fedpar(args, tmp / "out.txt", tmp / "err.txt");
  for (int i = 0; i < 3000 && !predicate(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return pid;
}

TEST(Interrupt, TrainRemovesItsPartialFolderOnEveryStopSignal) {
  for (const auto& [sig, name] :
       {std::pair{SIGINT, "SIGINT"}, std::pair{SIGTERM, "SIGTERM"}, std::pair{SIGHUP, "SIGHUP"}}) {
    SCOPED_TRACE(name);
    TempDir tmp;
    const auto res = tmp / "res";
    const pid_t pid = start_and_wait(
        tmp,
        {"train", "--dataset", "synthetic", "--model", "logreg", "--epochs", "100000", "--batch",
         "10", "--results-dir", res.string()},
        [&] { return testing::slurp(tmp / "err.txt").find("epoch 1/") != std::string::npos; });
    ASSERT_TRUE(writing(res)) << testing::slurp(tmp / "err.txt");
    kill(pid, sig);
    EXPECT_EQ(testing::wait_exit(pid, 30).value_or(-99), 128 + sig);
    const std::string err = testing::slurp(tmp / "err.txt");
    EXPECT_NE(err.find(fmt::format("fedpar train: stopped by {}; nothing was kept", name)),
              std::string::npos)
        << err;
    EXPECT_TRUE(std::filesystem::is_empty(res)) << "a partial folder was left";
  }
}

TEST(Interrupt, SuiteStopsWithItsRunAndKeepsNothing) {
  TempDir tmp;
  const pid_t pid = start_and_wait(
      tmp,
      {"suite", "fedprox-synthetic", "--smoke", "--set", "rounds=100000", "--out",
       (tmp / "s").string()},
      [&] { return testing::slurp(tmp / "err.txt").find("run 1/") != std::string::npos; });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // its processes are running
  ASSERT_TRUE(writing(tmp.path()));
  kill(pid, SIGINT);
  EXPECT_EQ(testing::wait_exit(pid, 60).value_or(-99), 130);
  const std::string err = testing::slurp(tmp / "err.txt");
  EXPECT_NE(err.find("fedpar run: interrupted by SIGINT"), std::string::npos) << err;
  EXPECT_NE(err.find("fedpar suite: stopped by SIGINT; nothing was kept"), std::string::npos)
      << err;
  EXPECT_FALSE(writing(tmp.path())) << err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "s"));
}

// A stop signal the run was started ignoring stays ignored: `nohup fedpar run` outlives the
// SIGHUP a closed terminal sends to its supervisor, server and clients alike (before, the
// supervisor's and the server's handlers replaced the ignore and stopped the run, exit 129).
TEST(Interrupt, ASignalIgnoredAtStartDoesNotStopTheRun) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "seed = 3\nrounds = 20\n[data]\nname = 'synthetic'\n"
                                     "iid = true\n[model]\nname = 'logreg'\n";
  struct sigaction ignore {
  }, before{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGHUP, &ignore, &before);  // as nohup starts it
  const pid_t pid = testing::spawn_fedpar(
      {"run", (tmp / "run.toml").string(), "--set", "results_dir=" + (tmp / "res").string(),
       "--set", "stragglers.delay_seconds=0:0.1"},
      tmp / "out.txt", tmp / "err.txt");
  sigaction(SIGHUP, &before, nullptr);
  for (int i = 0; i < 3000 && testing::slurp(tmp / "err.txt").find("round 2/") == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // the hangup reaches every process of the run: the supervisor and its children
  std::vector<pid_t> all = {pid};
  for (pid_t child : children(pid)) all.push_back(child);
  ASSERT_GE(all.size(), 3u) << "a server and client processes";
  for (pid_t p : all) kill(p, SIGHUP);
  EXPECT_EQ(testing::wait_exit(pid, 60).value_or(-99), 0) << testing::slurp(tmp / "err.txt");
  EXPECT_NE(testing::slurp(tmp / "err.txt").find("round 20/20"), std::string::npos);
}

// A process of the run that does not stop on the supervisor's SIGTERM (here: the run started
// with SIGTERM ignored, which its children inherit, and the server hangs: SIGSTOP, or it would
// see its client's connection end and stop by itself) is killed 10 s later; before, the
// supervisor waited for the server's own deadline (wait_seconds, 300 s here).
TEST(Interrupt, AProcessThatIgnoresTheStopSignalIsKilled) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "seed = 3\nrounds = 100000\nregime = 'gradient'\n"
                                     "wait_seconds = 300.0\n[data]\nname = 'synthetic'\n"
                                     "iid = true\n[model]\nname = 'logreg'\n";
  struct sigaction ignore {
  }, before{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &ignore, &before);
  const pid_t pid = testing::spawn_fedpar(
      {"run", (tmp / "run.toml").string(), "--set", "results_dir=" + (tmp / "res").string()},
      tmp / "out.txt", tmp / "err.txt");
  sigaction(SIGTERM, &before, nullptr);
  for (int i = 0; i < 3000 && testing::slurp(tmp / "err.txt").find("round 2/") == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::vector<pid_t> started = children(pid);
  const pid_t client = child_running(pid, "client"), server = child_running(pid, "server");
  ASSERT_NE(client, 0) << testing::slurp(tmp / "err.txt");
  ASSERT_NE(server, 0) << testing::slurp(tmp / "err.txt");
  kill(server, SIGSTOP);
  kill(client, SIGKILL);  // the run fails, and the supervisor stops the server: SIGTERM
  EXPECT_EQ(testing::wait_exit(pid, 60).value_or(-99), 5) << testing::slurp(tmp / "err.txt");
  const std::string err = testing::slurp(tmp / "err.txt");
  EXPECT_NE(err.find("fedpar run: still running 10 s after SIGTERM: killing server (SIGKILL)"),
            std::string::npos)
      << err;
  for (pid_t p : started)
    if (kill(p, 0) == 0) {
      ADD_FAILURE() << "process " << p << " outlived the run";
      kill(p, SIGKILL);
    }
}

// A second stop signal kills what the first is still stopping (here a server that cannot act
// on it: stopped by SIGSTOP), at once rather than after the 10 s.
TEST(Interrupt, ASecondStopSignalKillsWhatIsStillStopping) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "seed = 3\nrounds = 100000\n[data]\nname = 'synthetic'\n"
                                     "iid = true\n[model]\nname = 'logreg'\n";
  const pid_t pid = start_and_wait(
      tmp, {"run", (tmp / "run.toml").string(), "--set", "results_dir=" + (tmp / "res").string()},
      [&] { return testing::slurp(tmp / "err.txt").find("round 2/") != std::string::npos; });
  const pid_t server = child_running(pid, "server");
  ASSERT_NE(server, 0) << testing::slurp(tmp / "err.txt");
  kill(server, SIGSTOP);
  kill(pid, SIGINT);
  for (int i = 0; i < 500 && testing::slurp(tmp / "err.txt").find("interrupted by SIGINT") ==
                                 std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(pid, SIGINT);
  EXPECT_EQ(testing::wait_exit(pid, 30).value_or(-99), 130);
  const std::string err = testing::slurp(tmp / "err.txt");
  // the server, and the client when it had not yet ended on the first SIGINT
  const auto killing = err.find("fedpar run: SIGINT while stopping: killing ");
  ASSERT_NE(killing, std::string::npos) << err;
  EXPECT_NE(err.substr(killing, err.find('\n', killing) - killing).find("server"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("still running 10 s"), std::string::npos) << err;
  if (kill(server, 0) == 0) {
    ADD_FAILURE() << "the server outlived the run";
    kill(server, SIGKILL);
  }
}

// The equivalence experiment's in-process part (centralized gradient descent, its reorderings,
// the float64 reference) is stoppable too, outside any supervised run.
TEST(Interrupt, TheEquivalenceExperimentStopsInItsCentralizedPart) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  const pid_t pid = start_and_wait(
      tmp,
      {"run", std::string(FEDPAR_SOURCE_DIR) + "/experiments/equivalence.toml", "--set",
       "rounds=100000", "--set", "equivalence.models=logreg", "--set",
       "equivalence.train_limits=500", "--set", "results_dir=" + (tmp / "res").string()},
      [&] { return testing::slurp(tmp / "err.txt").find("(a) centralized") != std::string::npos; });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGTERM);
  EXPECT_EQ(testing::wait_exit(pid, 30).value_or(-99), 128 + SIGTERM);
  const std::string err = testing::slurp(tmp / "err.txt");
  EXPECT_NE(err.find("fedpar run: stopped by SIGTERM; nothing was kept"), std::string::npos) << err;
  EXPECT_FALSE(writing(tmp / "res")) << err;
}

}  // namespace
}  // namespace fedpar
