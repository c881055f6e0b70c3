// `fedpar run CONFIG`: one server and P client processes on this machine, supervised: the server's
// progress and result lines pass through; if any process dies, the others are stopped and the run
// exits non-zero naming it. Ctrl-C stops them all.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "core/check.h"
#include "experiments/cli/commands.h"
#include "server/run_config.h"

extern char** environ;

namespace fedpar {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

struct RunArgs {
  std::string config;
  std::vector<std::string> sets;
  int processes = 0;  // 0 = the config's value
  std::string bind;   // empty = tcp://127.0.0.1:* (a free port)
};

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the fedpar executable (/proc/self/exe)");
  return p.string();
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<std::string> all = args;
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw Error(fmt::format("cannot start {}", args[0]));
  return pid;
}

int run(const RunArgs& a) {
  // Validate the whole config here first: a bad key fails before any process starts.
  Config cfg = make_run_config();
  cfg.merge_file(a.config);
  cfg.set_all(a.sets);
  if (a.processes > 0) cfg.set("processes", std::to_string(a.processes));
  cfg.set("bind", a.bind.empty() ? "tcp://127.0.0.1:*" : a.bind);
  const RunSetup s = resolve_run_setup(cfg);

  const auto dir = std::filesystem::temp_directory_path() / fmt::format("fedpar-run-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto resolved = dir / "run.toml", endpoint = dir / "endpoint";
  std::ofstream(resolved) << cfg.to_toml();
  const std::string exe = self_exe();

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::map<pid_t, std::string> procs;
  auto stop_all = [&] {
    for (const auto& [pid, name] : procs) kill(pid, SIGTERM);
    for (const auto& [pid, name] : procs) waitpid(pid, nullptr, 0);
    procs.clear();
    std::filesystem::remove_all(dir);
  };
  const pid_t server = spawn({exe, "server", "--config", resolved.string(), "--endpoint-file", endpoint.string()});
  procs[server] = "server";
  std::string ep;
  for (int i = 0; i < 600 && ep.empty(); ++i) {  // up to 60 s for data loading and the bind
    std::ifstream in(endpoint);
    std::getline(in, ep);
    int status = 0;
    if (ep.empty() && waitpid(server, &status, WNOHANG) == server) {
      procs.erase(server);
      stop_all();
      return WIFEXITED(status) ? WEXITSTATUS(status) : 1;  // the server said why on stderr
    }
    if (ep.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (ep.empty()) {
    stop_all();
    throw Error("the server did not start listening within 60 s");
  }
  for (int i = 0; i < s.processes; ++i)
    procs[spawn({exe, "client", "--quiet", "--server", ep})] = fmt::format("client process {}", i + 1);

  while (true) {
    if (g_interrupted) {
      fmt::print(stderr, "fedpar run: interrupted; stopping the server and clients\n");
      stop_all();
      return 130;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const std::string name = procs[pid];
    procs.erase(pid);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (pid == server) {
      // The server told the clients to stop; give them a moment, then clean up.
      for (int i = 0; i < 100 && !procs.empty(); ++i) {
        const pid_t c = waitpid(-1, nullptr, WNOHANG);
        if (c > 0) procs.erase(c);
        else std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      stop_all();
      return code;
    }
    if (code != 0) {
      fmt::print(stderr, "fedpar run: {} exited with code {}; stopping the run\n", name, code);
      stop_all();
      return 1;
    }
  }
}

}  // namespace

Action add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "run a config with a server and its client processes on this "
                                        "machine, supervised");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("config", a->config, "TOML run config (see experiments/)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", a->sets, "override a config key: --set rounds=5");
  cmd->add_option("--processes,-p", a->processes, "client processes (default: the config's)");
  cmd->add_option("--bind", a->bind, "server endpoint (default tcp://127.0.0.1:* , a free port)");
  return [a] { return run(*a); };
}

}  // namespace fedpar
