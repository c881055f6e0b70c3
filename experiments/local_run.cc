// run_locally; see local_run.h.
#include "experiments/local_run.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "core/check.h"
#include "server/run_config.h"

extern char** environ;

namespace fedpar {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the fedpar executable (/proc/self/exe)");
  return p.string();
}

// Starts `args`; with `mute_stdout` its standard output goes to /dev/null.
pid_t spawn(const std::vector<std::string>& args, bool mute_stdout = false) {
  std::vector<std::string> all = args;
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (mute_stdout) posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw Error(fmt::format("cannot start {}", args[0]));
  return pid;
}

}  // namespace

bool local_run_interrupted() { return g_interrupted != 0; }

int run_locally(Config cfg, const LocalRunOptions& opts) {
  cfg.set("bind", opts.bind.empty() ? "tcp://127.0.0.1:*" : opts.bind);
  const RunSetup s = resolve_run_setup(cfg);  // a bad key fails before any process starts

  const auto dir = std::filesystem::temp_directory_path() / fmt::format("fedpar-run-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto resolved = dir / "run.toml", endpoint = dir / "endpoint";
  std::filesystem::remove(endpoint);
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
  std::vector<std::string> server_args = {exe, "server", "--config", resolved.string(),
                                          "--endpoint-file", endpoint.string()};
  if (opts.quiet) server_args.push_back("--quiet");
  const pid_t server = spawn(server_args, opts.quiet);
  procs[server] = "server";
  std::string ep;
  for (int i = 0; i < 600 && ep.empty() && !g_interrupted; ++i) {  // 60 s to load data and bind
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
  if (ep.empty() && !g_interrupted) {
    stop_all();
    throw Error("the server did not start listening within 60 s");
  }
  if (!g_interrupted)
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
    if (pid <= 0 || !procs.count(pid)) {
      if (pid <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
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

}  // namespace fedpar
