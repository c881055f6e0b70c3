// run_locally; see local_run.h. Supervision on Boost.Asio: the children's exits (SIGCHLD, reaped
// here with waitpid until none is left, since signals coalesce), SIGINT/SIGTERM and the timers are
// events on one io_context. Boost.Process starts the children; its own on_exit is not used, as
// Boost 1.74's sometimes misses an exit under load.
#include "experiments/local_run.h"

#include <fmt/format.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/io.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "core/check.h"
#include "core/run_records.h"
#include "core/run_spec.h"

namespace fedpar {
namespace {

namespace asio = boost::asio;
namespace bp = boost::process;
using namespace std::chrono_literals;

bool g_interrupted = false;

// The children run this very executable: /proc/self/exe names it even after the file on disk was
// replaced by a rebuild (its path would then read "... (deleted)").
std::string self_exe() {
  if (!std::filesystem::exists("/proc/self/exe"))
    throw Error("cannot find the fedpar executable (/proc/self/exe)");
  return "/proc/self/exe";
}

// One supervised run: the server, then (once it listens) the clients; the first failure, the
// server's exit or a signal decides the outcome, and every remaining process is stopped.
class Supervisor {
 public:
  Supervisor(const RunSpec& s, const std::filesystem::path& config,
             const std::filesystem::path& endpoint, const LocalRunOptions& opts)
      : s_(s), config_(config), endpoint_(endpoint), quiet_(opts.quiet), resume_(opts.resume) {}

  int run() {
    wait_for_children();
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      g_interrupted = true;
      fmt::print(stderr, "fedpar run: interrupted; stopping the server and clients\n");
      finish(130);
    });
    std::vector<std::string> args = {"server", "--config", config_.string(), "--endpoint-file",
                                     endpoint_.string()};
    if (quiet_) args.push_back("--quiet");
    if (!resume_.empty()) args.insert(args.end(), {"--resume", resume_});
    start("server", args);
    started_ = std::chrono::steady_clock::now();
    wait_for_endpoint();
    io_.run();
    return code_;
  }

 private:
  void start(const std::string& name, const std::vector<std::string>& args) {
    bp::child c;
    try {
      if (name == "server" && quiet_)
        c = bp::child(exe_, bp::args(args), bp::std_out > bp::null);
      else
        c = bp::child(exe_, bp::args(args));
    } catch (const bp::process_error& e) {
      throw Error(fmt::format("cannot start {} {}: {}", exe_, args[0], e.what()));
    }
    alive_[c.id()] = name;
    c.detach();  // reaped in wait_for_children
  }

  void wait_for_children() {
    children_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      int status = 0;
      for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
        auto it = alive_.find(pid);
        if (it == alive_.end()) continue;
        const std::string name = it->second;
        alive_.erase(it);
        exited(name, status);
      }
      if (!(done_ && alive_.empty())) wait_for_children();
    });
  }

  // Polls for the endpoint file the server writes once bound (data loading comes first).
  void wait_for_endpoint() {
    timer_.expires_after(100ms);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || done_) return;
      std::string ep;
      std::ifstream(endpoint_) >> ep;
      if (ep.empty()) {
        if (std::chrono::steady_clock::now() - started_ > 60s) {
          fmt::print(stderr, "fedpar run: the server did not start listening within 60 s\n");
          finish(1);
        } else {
          wait_for_endpoint();
        }
        return;
      }
      try {
        for (int i = 0; i < s_.processes; ++i)
          start(fmt::format("client process {}", i + 1), {"client", "--quiet", "--server", ep});
      } catch (const Error& e) {  // stop what did start rather than leave it orphaned
        fmt::print(stderr, "fedpar run: {}\n", e.what());
        finish(1);
      }
    });
  }

  void exited(const std::string& name, int status) {
    if (done_) {
      if (alive_.empty()) stop_io();
      return;
    }
    const int exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (name == "server") {
      // The server told the clients to stop; give them a moment before stopping them (a short
      // one when it failed: clients still waiting for their WELCOME never hear STOP).
      finish(exit, exit == 0 || exit == kExitDiverged ? 5s : 500ms);
    } else if (exit != 0) {
      fmt::print(stderr, "fedpar run: {} {}; stopping the run\n", name,
                 WIFSIGNALED(status) ? fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                                                   strsignal(WTERMSIG(status)))
                                     : fmt::format("exited with code {}", exit));
      finish(1);
    }
  }

  // Decides the outcome; the remaining processes get SIGTERM after `grace`.
  void finish(int code, std::chrono::milliseconds grace = 0ms) {
    if (done_) return;
    done_ = true;
    code_ = code;
    signals_.cancel();
    timer_.cancel();
    if (alive_.empty()) return stop_io();
    timer_.expires_after(grace);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      for (const auto& [pid, name] : alive_) ::kill(pid, SIGTERM);
    });
  }

  void stop_io() {
    timer_.cancel();
    signals_.cancel();
    children_.cancel();
  }

  const RunSpec& s_;
  std::filesystem::path config_, endpoint_;
  bool quiet_;
  std::string resume_;
  std::string exe_ = self_exe();
  asio::io_context io_;
  asio::signal_set signals_{io_, SIGINT, SIGTERM};
  asio::signal_set children_{io_, SIGCHLD};  // installed before any child starts
  asio::steady_timer timer_{io_};
  std::map<pid_t, std::string> alive_;  // started and not yet reaped
  std::chrono::steady_clock::time_point started_;
  bool done_ = false;
  int code_ = 0;
};

}  // namespace

Config config_without(const Config& cfg, std::initializer_list<std::string_view> sections,
                      Config base) {
  toml::table t = toml::parse(cfg.to_toml());
  for (auto s : sections) t.erase(s);
  std::ostringstream os;
  os << t;
  base.merge_toml(os.str(), "the experiment's config");
  return base;
}

int run_locally(Config cfg, const LocalRunOptions& opts) {
  cfg.set("bind", opts.bind.empty() ? "tcp://127.0.0.1:*" : opts.bind);
  const RunSpec s = resolve_run_spec(cfg);  // a bad key fails before any process starts
  if (g_interrupted) return 130;

  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("fedpar-run-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto config = dir / "run.toml", endpoint = dir / "endpoint";
  std::filesystem::remove(endpoint);
  std::ofstream(config) << cfg.to_toml();
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  return Supervisor(s, config, endpoint, opts).run();
}

}  // namespace fedpar
