// Real child processes for integration tests: spawn the fedpar binary with arguments, wait with a
// time limit (killing stragglers), read a file another process writes.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace fedpar::testing {

// Starts `program` with `args`, stdout and stderr to the given files.
inline pid_t spawn_program(const std::string& program, const std::vector<std::string>& args,
                           const std::filesystem::path& out, const std::filesystem::path& err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all = {program};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  posix_spawn(&pid, program.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// Starts FEDPAR_BIN with `args`, stdout and stderr to the given files.
inline pid_t spawn_fedpar(const std::vector<std::string>& args, const std::filesystem::path& out,
                          const std::filesystem::path& err) {
  return spawn_program(FEDPAR_BIN, args, out, err);
}

// Exit code, or nullopt if it had to be killed after `seconds`.
inline std::optional<int> wait_exit(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return std::nullopt;
}

inline std::string wait_for_file(const std::filesystem::path& p, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(p);
    std::string s;
    if (in && std::getline(in, s) && !s.empty()) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

// n `fedpar client` processes joining the server at `endpoint`, waiting up to 60 s for it; their
// output in dir/c<i>.out and dir/c<i>.err.
inline std::vector<pid_t> spawn_clients(int n, const std::string& endpoint,
                                        const std::filesystem::path& dir) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const std::string name = std::string("c").append(std::to_string(i));
    pids.push_back(spawn_fedpar({"client", "--wait", "60", "--server", endpoint},
                                dir / (name + ".out"), dir / (name + ".err")));
  }
  return pids;
}

// A worker killed mid-run: waits (up to 20 s) until the server's stderr `err` shows `marker`,
// SIGKILLs `victim` and waits (up to 20 s) for the server to exit. `code` is empty when it hung.
struct KilledMidRun {
  bool marker_seen = false;
  std::optional<int> code;
  double seconds = 0;  // from the kill to the server's exit
};
inline KilledMidRun kill_mid_run(pid_t server, const std::filesystem::path& err,
                                 const std::string& marker, pid_t victim) {
  auto seen = [&] {
    std::ifstream in(err);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    return text.find(marker) != std::string::npos;
  };
  KilledMidRun out;
  for (int i = 0; i < 400 && !(out.marker_seen = seen()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!out.marker_seen) return out;
  const auto t_kill = std::chrono::steady_clock::now();
  kill(victim, SIGKILL);
  out.code = wait_exit(server, 20);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_kill).count();
  return out;
}

}  // namespace fedpar::testing
