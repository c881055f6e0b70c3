// run_locally; see local_run.h. Supervision on Boost.Asio: the children's exits (SIGCHLD, reaped
// here with waitpid until none is left, since signals coalesce), SIGINT/SIGTERM and the timers are
// events on one io_context. Boost.Process starts the children; its own on_exit is not used, as
// Boost 1.74's sometimes misses an exit under load.
#include "experiments/local_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/env.hpp>
#include <boost/process/environment.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/io.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <ranges>
#include <sstream>

#include "core/check.h"
#include "core/count_users.h"
#include "core/executable.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "core/stop_signal.h"
#include "transport/curve.h"

namespace fedpar {
namespace {

namespace asio = boost::asio;
namespace bp = boost::process;
using namespace std::chrono_literals;

int g_interrupted = 0;                          // the stop signal the supervisor received
constexpr std::chrono::seconds kKillAfter{10};  // from the stop signal to SIGKILL, as docker stop

// The children run this very executable: /proc/self/exe names it even after the file on disk was
// replaced by a rebuild (its path would then read "... (deleted)").
std::string self_exe() {
  if (!std::filesystem::exists("/proc/self/exe"))
    throw Error("cannot find the fedpar executable (/proc/self/exe)");
  return "/proc/self/exe";
}

// This executable's file name ("fedpar"), also after a rebuild replaced it on disk (the link
// then reads "fedpar (deleted)").
std::string executable_name() {
  const std::string name = executable_path().filename().string();
  return name.empty() ? "fedpar" : name;
}

// The name the children show in ps: this executable's file name (`fedpar server ...`, not
// `/proc/self/exe server ...`), so `ps | grep fedpar` finds them. A Boost.Process initializer
// that runs after the command line is built and swaps its argv[0].
class ProgramName : public bp::extend::handler {
 public:
  ProgramName() : name_(executable_name()) {}
  template <class Executor>
  void on_setup(Executor& exec) {
    argv_.clear();
    argv_.push_back(name_.data());
    for (char* const* a = exec.cmd_line + 1; *a; ++a) argv_.push_back(*a);
    argv_.push_back(nullptr);
    exec.cmd_line = argv_.data();
  }

 private:
  std::string name_;
  std::vector<char*> argv_;  // points into name_ and the executor's own argument strings
};

// Whether the server carries on when a client process dies: model averaging drops a missing
// client's updates, and so does the parameter server with continue_without_missing; an elastic
// ring re-forms without it; the other ways of training need every process.
bool goes_on_without_clients(const RunSpec& s) {
  return (s.topology == Topology::kParameterServer &&
          (s.regime == Regime::kModel ||
           (s.regime == Regime::kGradient && s.continue_without_missing))) ||
         (s.topology == Topology::kAllReduce && s.ring_elastic);
}

// One supervised run: the server, then (once it listens) the clients; the first failure, the
// server's exit or a signal decides the outcome, and every remaining process is stopped.
class Supervisor {
 public:
  Supervisor(const RunSpec& s, const std::filesystem::path& config,
             const std::filesystem::path& endpoint, const LocalRunOptions& opts,
             std::vector<std::vector<std::string>> client_flags,
             std::vector<std::string> server_flags)
      : s_(s),
        config_(config),
        endpoint_(endpoint),
        quiet_(opts.quiet),
        plots_(opts.plots),
        resume_(opts.resume),
        client_flags_(std::move(client_flags)),
        server_flags_(std::move(server_flags)) {
    for (int sig : stop_signals()) signals_.add(sig);
  }

  int run() {
    wait_for_children();
    wait_for_signal();
    std::vector<std::string> args = {"server", "--config", config_.string(), "--endpoint-file",
                                     endpoint_.string()};
    if (quiet_) args.push_back("--quiet");
    if (!plots_) args.push_back("--no-plots");
    if (!resume_.empty()) args.insert(args.end(), {"--resume", resume_});
    args.insert(args.end(), server_flags_.begin(), server_flags_.end());
    start("server", args);
    started_ = std::chrono::steady_clock::now();
    wait_for_endpoint();
    io_.run();
    return code_;
  }

 private:
  // The first stop signal stops the run; one more, while its processes are still stopping,
  // kills them.
  void wait_for_signal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (done_) {
        if (!g_interrupted) g_interrupted = sig;  // a suite stops after this run too
        kill_remaining(fmt::format("{} while stopping", signal_name(sig)));
      } else {
        g_interrupted = sig;
        fmt::print(stderr, "fedpar run: interrupted by {}; stopping the server and clients\n",
                   signal_name(sig));
        finish(128 + sig);
      }
      if (!(done_ && alive_.empty())) wait_for_signal();  // else the run is over
    });
  }

  void start(const std::string& name, const std::vector<std::string>& args) {
    bp::child c;
    // the child asks the kernel for SIGTERM when this process dies (experiments/cli/main.cc)
    auto env = boost::this_process::environment();
    env[kSupervisorPidVariable] = std::to_string(::getpid());
    if (name == "server") env[kStopReasonVariable] = stop_reason_.string();
    try {
      if (name == "server" && quiet_)
        c = bp::child(exe_, bp::args(args), env, bp::std_out > bp::null, program_name_);
      else
        c = bp::child(exe_, bp::args(args), env, program_name_);
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
        exited(name, pid, status);
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
          finish(kExitRunFailed);
        } else {
          wait_for_endpoint();
        }
        return;
      }
      try {
        for (int i = 0; i < s_.processes; ++i) {
          std::vector<std::string> args = {"client", "--quiet", "--server", ep};
          if (size_t(i) < client_flags_.size())
            args.insert(args.end(), client_flags_[size_t(i)].begin(),
                        client_flags_[size_t(i)].end());
          start(fmt::format("client process {}", i + 1), args);
        }
      } catch (const Error& e) {  // stop what did start rather than leave it orphaned
        fmt::print(stderr, "fedpar run: {}\n", e.what());
        finish(1);
      }
    });
  }

  // A server killed outright (SIGKILL, out of memory) said nothing and kept its hidden partial
  // folder: where it is, and whether --resume can continue it.
  void say_where_a_killed_server_left_its_rounds(pid_t pid, int status) {
    const auto partial =
        std::filesystem::path(s_.results_dir) / fmt::format(".{}.partial-{}", s_.name, pid);
    const std::string what = fmt::format("the server was killed by signal {} ({})",
                                         WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (!std::filesystem::exists(partial))
      fmt::print(stderr, "fedpar run: {}; stopping the clients\n", what);
    else if (std::filesystem::exists(partial / "checkpoint.bin"))
      fmt::print(stderr,
                 "fedpar run: {}; stopping the clients. Its folder {} holds a checkpoint: "
                 "continue with fedpar run {}/config.resolved.toml --resume {}\n",
                 what, partial.string(), partial.string(), partial.string());
    else if (std::error_code ec;
             std::filesystem::file_size(partial / "metrics.jsonl", ec) > 0 && !ec)
      fmt::print(
          stderr,
          "fedpar run: {}; stopping the clients. Its folder {} holds no checkpoint "
          "(checkpoint_every = N writes them where the run can keep one): the next run in {} "
          "keeps its rounds as "
          "{}.incomplete\n",
          what, partial.string(), s_.results_dir, s_.name);
    else
      fmt::print(stderr, "fedpar run: {} before its first round; stopping the clients\n", what);
  }

  void exited(const std::string& name, pid_t pid, int status) {
    const int exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const std::string what = WIFSIGNALED(status)
                                 ? fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                                               strsignal(WTERMSIG(status)))
                                 : fmt::format("exited with code {}", exit);
    if (done_) {
      // a client killed from outside whose server, losing it, failed and was reaped first: the
      // cause is still said (the server's own words name only the clients it lost)
      if (name != "server" && WIFSIGNALED(status) && !signalled_ && !g_interrupted)
        fmt::print(stderr, "fedpar run: {} {}\n", name, what);
      // a client died as the last round ended: the server, told to stop, had finished the run
      // (a stopped one exits 128 + its signal), so its folder is whole and the outcome is its own
      if (name == "server" && (exit == 0 || exit == kExitDiverged) && code_ == kExitRunFailed &&
          !g_interrupted) {
        fmt::print(stderr, "fedpar run: the server had completed the run; its folder is whole\n");
        code_ = exit;
      }
      if (alive_.empty()) stop_io();
      return;
    }
    if (name == "server") {
      if (WIFSIGNALED(status)) say_where_a_killed_server_left_its_rounds(pid, status);
      // The server told the clients to stop; give them a moment before stopping them (a short
      // one when it failed: a client that had not said HELLO yet never hears STOP).
      finish(exit, exit == 0 || exit == kExitDiverged ? 5s : 500ms);
    } else if (exit == kExitEndedByServer) {
      return;  // the server ended the run, or went on without the process, and says so itself
    } else if (exit != 0) {
      if (goes_on_without_clients(s_)) {  // the run's own fault policy, as the server applies it
        fmt::print(stderr,
                   "fedpar run: {} {}; the run goes on without its virtual clients (the server "
                   "leaves them out as the run's fault policy says: docs/distributed.md)\n",
                   name, what);
        return;
      }
      fmt::print(stderr, "fedpar run: {} {}; stopping the run\n", name, what);
      std::ofstream(stop_reason_) << fmt::format("{} {}", name, what);  // before the SIGTERM
      finish(kExitRunFailed);
    }
  }

  // Decides the outcome; the remaining processes get SIGTERM (or the supervisor's stop signal)
  // after `grace`, and SIGKILL when they are still there kKillAfter later: a process that
  // ignores the signal (inherited ignored, as under `trap '' TERM`) or hangs would otherwise keep
  // the run, and the supervisor, waiting until its own deadlines.
  void finish(int code, std::chrono::milliseconds grace = 0ms) {
    if (done_) return;
    done_ = true;
    code_ = code;
    timer_.cancel();
    if (alive_.empty()) return stop_io();
    timer_.expires_after(grace);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      // an interrupted run passes its signal on, so each process says what stopped it
      const int sig = g_interrupted ? g_interrupted : SIGTERM;
      signalled_ = true;
      for (const auto& [pid, name] : alive_) ::kill(pid, sig);
      timer_.expires_after(kKillAfter);
      timer_.async_wait([this, sig](const boost::system::error_code& ec) {
        if (!ec)
          kill_remaining(
              fmt::format("still running {} s after {}", kKillAfter.count(), signal_name(sig)));
      });
    });
  }

  void kill_remaining(const std::string& why) {
    if (alive_.empty()) return;
    fmt::print(stderr, "fedpar run: {}: killing {} (SIGKILL)\n", why,
               fmt::join(std::views::values(alive_), ", "));
    for (const auto& [pid, name] : alive_) ::kill(pid, SIGKILL);
  }

  void stop_io() {
    timer_.cancel();
    signals_.cancel();
    children_.cancel();
  }

  const RunSpec& s_;
  std::filesystem::path config_, endpoint_;
  std::filesystem::path stop_reason_ = endpoint_.parent_path() / "stop-reason";
  bool quiet_;
  bool plots_;
  std::string resume_;
  std::vector<std::vector<std::string>> client_flags_;  // per client process, e.g. its key
  std::vector<std::string> server_flags_;               // e.g. --also-allow its clients' keys
  std::string exe_ = self_exe();
  ProgramName program_name_;
  asio::io_context io_;
  asio::signal_set signals_{io_};            // stop_signals(), added by the constructor
  asio::signal_set children_{io_, SIGCHLD};  // installed before any child starts
  asio::steady_timer timer_{io_};
  std::map<pid_t, std::string> alive_;  // started and not yet reaped
  std::chrono::steady_clock::time_point started_;
  bool done_ = false;
  bool signalled_ = false;  // finish() has sent the remaining processes its stop signal
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

// [security] under `fedpar run`: a key pair for each client process in `dir`, their public keys
// in dir/allowed, which the server lets in beside security.clients' (--also-allow: the run's
// config keeps the user's folder), and each process's --key and --server-key.
static std::vector<std::vector<std::string>> local_client_keys(const RunSpec& s,
                                                               const std::filesystem::path& dir) {
  const auto allowed = dir / "allowed";
  std::filesystem::create_directories(allowed);
  const auto server_pub = dir / "server.pub";
  std::ofstream(server_pub) << fmt::format("public = \"{}\"\n",
                                           read_curve_keys(s.security.key).public_key);
  std::vector<std::vector<std::string>> flags;
  for (int i = 0; i < s.processes; ++i) {
    const std::string name = fmt::format("fedpar-run-client-{}", i + 1);
    const auto key = write_curve_key_pair(dir / "keys", name, generate_curve_key_pair());
    std::filesystem::copy_file(dir / "keys" / (name + ".pub"), allowed / (name + ".pub"),
                               std::filesystem::copy_options::overwrite_existing);
    flags.push_back({"--key", key.string(), "--server-key", server_pub.string()});
  }
  return flags;
}

void follow_supervisor() {
  const char* pid = std::getenv(kSupervisorPidVariable);
  if (!pid) return;
  // started as /proc/self/exe, the kernel named it "exe": take the file's name (what pgrep and
  // top show; at most 15 characters)
  ::prctl(PR_SET_NAME, executable_name().substr(0, 15).c_str());
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (std::to_string(::getppid()) != pid) ::raise(SIGTERM);  // it died before the request
}

int run_interrupted_by() { return g_interrupted; }

int run_locally(Config cfg, const LocalRunOptions& opts) {
  // --bind, else a bind the config (or --set) chose, else a free loopback port: the default
  // 5555 is `fedpar server`'s, and two runs here at once would meet on it
  const bool chosen = cfg.get_string("bind") != make_run_config().get_string("bind");
  cfg.set("bind", !opts.bind.empty() ? opts.bind
                  : chosen           ? cfg.get_string("bind")
                                     : "tcp://127.0.0.1:*");
  const RunSpec s = resolve_run_spec_counting_users(cfg);  // a bad key fails before any start
  if (s.ring_backend == RingBackend::kMpi)
    throw Error(fmt::format(
        "allreduce.backend = \"mpi\" sums through MPI, whose launcher starts the processes: "
        "mpirun -n {} fedpar launch CONFIG (a server and {} client processes; docs/cluster.md), "
        "or backend = \"zmq-ring\" under fedpar run",
        s.processes + 1, s.processes));
  if (s.ring_backend == RingBackend::kNccl && s.processes > 1)
    throw Error(
        "allreduce.backend = \"nccl\" needs a GPU per client process, and fedpar run's processes "
        "all see the same device 0: run one process (processes = 1), or start them with "
        "fedpar launch under srun --gpus-per-task=1 (docs/cluster.md)");
  if (g_interrupted) return 128 + g_interrupted;

  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("fedpar-run-{}", ::getpid());
  // a folder of this pid's name was left by a dead process (its endpoint, its stop reason)
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto config = dir / "run.toml", endpoint = dir / "endpoint";
  std::vector<std::vector<std::string>> client_flags;
  std::vector<std::string> server_flags;
  if (s.security.on()) {
    client_flags = local_client_keys(s, dir);
    server_flags = {"--also-allow", (dir / "allowed").string()};
  }
  if (!opts.keep_incomplete) server_flags.push_back("--no-incomplete");
  // the keys given only: the server's warnings about what was given (and what was left to its
  // default) see the user's config, not every key resolved
  std::ofstream(config) << cfg.given_toml();
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  struct RestoreStopHandlers {  // the supervisor's signal_set, gone, leaves the default actions
    ~RestoreStopHandlers() { install_stop_handlers(); }
  } restore;
  return Supervisor(s, config, endpoint, opts, client_flags, server_flags).run();
}

}  // namespace fedpar
