// Network namespaces for tests that need real links between "hosts" on one machine (root only):
// a shell runner, and a set of namespaces made by a list of `ip` commands and removed (with their
// veth pairs and bridges) when the set goes, pass or fail. Traffic stays inside them.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace fedpar::testing {

// Runs a shell command; its exit code and what it printed (stdout and stderr).
inline std::pair<int, std::string> sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Starts `ip netns exec NS PROGRAM ARGS...`, stdout to `out` and stderr to `err`; its pid, or -1.
inline pid_t spawn_in_netns(const std::string& ns, const std::string& program,
                            const std::vector<std::string>& args, const std::filesystem::path& out,
                            const std::filesystem::path& err) {
  std::vector<std::string> all = {"ip", "netns", "exec", ns, program};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : all) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "ip", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Why a namespace test cannot run here (not root, no `ip` or `tc`); empty when it can.
inline std::string netns_unavailable() {
  if (::geteuid() != 0) return "needs root (network namespaces and tc)";
  if (sh("command -v ip && command -v tc").first != 0)
    return "needs ip and tc (apt-get install iproute2)";
  return "";
}

// Namespaces `names` (made first), then `setup` run in order; `error` says which command failed.
class NetNamespaces {
 public:
  NetNamespaces(std::vector<std::string> names, const std::vector<std::string>& setup)
      : names_(std::move(names)) {
    remove();  // namespaces left by a killed run with the same names
    for (const auto& n : names_) run("ip netns add " + n);
    for (const auto& cmd : setup) run(cmd);
  }
  ~NetNamespaces() { remove(); }
  NetNamespaces(const NetNamespaces&) = delete;
  NetNamespaces& operator=(const NetNamespaces&) = delete;

  std::string error;

 private:
  void run(const std::string& cmd) {
    if (!error.empty()) return;
    const auto [code, out] = sh(cmd);
    if (code != 0) error = cmd + ": " + out;
  }
  void remove() const {
    for (const auto& n : names_) sh("ip netns del " + n + " 2>/dev/null");
  }
  std::vector<std::string> names_;
};

}  // namespace fedpar::testing
