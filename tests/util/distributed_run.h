// A real `fedpar server` process and `fedpar client` processes for integration tests: start
// them with a config's overrides, wait for all of them, and read the server's output and hash.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "core/run_records.h"
#include "tests/util/process.h"
#include "tests/util/test_util.h"

namespace fedpar::testing {

struct RunResult {
  int server_code = -100;
  std::string out, err, hash;
};

// The arguments of a `fedpar server` for the run `name` on synthetic data and logistic
// regression with `processes` client processes, its endpoint written to FILES.ep, then `sets`.
inline std::vector<std::string> server_args(const TempDir& tmp, const std::string& files,
                                            const std::string& name, const std::string& bind,
                                            int processes, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"server", "--endpoint-file", (tmp / (files + ".ep")).string()};
  for (const std::string& s :
       {"bind=" + bind, "results_dir=" + (tmp / "res").string(), "name=" + name,
        std::string("data.name=synthetic"), std::string("data.iid=true"),
        std::string("model.name=logreg"), "processes=" + std::to_string(processes)})
    args.insert(args.end(), {"--set", s});
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  return args;
}

// A server (`args`, output to FILES.out and FILES.err) and `clients` client processes with
// `client_flags`, started and running.
struct Started {
  pid_t server = -1;
  std::vector<pid_t> clients;
  std::string endpoint;
};
inline Started start_run(const TempDir& tmp, const std::string& files,
                         const std::vector<std::string>& args, int clients,
                         const std::vector<std::string>& client_flags = {}) {
  Started r;
  r.server = spawn_fedpar(args, tmp / (files + ".out"), tmp / (files + ".err"));
  r.endpoint = wait_for_file(tmp / (files + ".ep"), 20);
  EXPECT_FALSE(r.endpoint.empty()) << "server wrote no endpoint";
  std::vector<std::string> client_args = {"client", "--quiet",  "--wait",
                                          "60",     "--server", r.endpoint};
  client_args.insert(client_args.end(), client_flags.begin(), client_flags.end());
  for (int i = 0; i < clients; ++i)
    r.clients.push_back(spawn_fedpar(client_args, tmp / (files + std::to_string(i) + ".cout"),
                                     tmp / (files + std::to_string(i) + ".cerr")));
  return r;
}

// Whether `file` holds `text` within `seconds` (a log line a test waits for).
inline bool wait_for_text(const std::filesystem::path& file, const std::string& text,
                          double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (slurp(file).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Waits (up to 60 s) until the server's stderr in FILES.err shows round `round`.
inline void wait_for_round(const TempDir& tmp, const std::string& files, int round) {
  wait_for_text(tmp / (files + ".err"), "round " + std::to_string(round) + "/", 60);
}

// A `fedpar server` of server_args(tmp, NAME, NAME, bind, processes, sets), its output in
// NAME.out and NAME.err, and the endpoint it listens on ("" when it wrote none in 20 s).
struct Listening {
  pid_t pid = -1;
  std::string endpoint;
};
inline Listening spawn_server(const TempDir& tmp, const std::string& name, int processes,
                              const std::vector<std::string>& sets,
                              const std::string& bind = "tcp://127.0.0.1:*") {
  Listening l;
  l.pid = spawn_fedpar(server_args(tmp, name, name, bind, processes, sets), tmp / (name + ".out"),
                       tmp / (name + ".err"));
  l.endpoint = wait_for_file(tmp / (name + ".ep"), 20);
  EXPECT_FALSE(l.endpoint.empty()) << slurp(tmp / (name + ".err"));
  return l;
}

// Starts a server with `sets` (and `server_flags`, e.g. --resume DIR), then `clients` client
// processes (with `client_flags`) and `extra_peer` (given the endpoint), and waits for all of them.
inline RunResult run_distributed(const TempDir& tmp, const std::string& tag,
                                 const std::string& bind, int clients,
                                 const std::vector<std::string>& sets,
                                 const std::function<void(const std::string&)>& extra_peer = {},
                                 const std::vector<std::string>& server_flags = {},
                                 const std::vector<std::string>& client_flags = {}) {
  std::vector<std::string> args =
      server_args(tmp, tag, tag, bind, clients + (extra_peer ? 1 : 0), sets);
  args.insert(args.end(), server_flags.begin(), server_flags.end());
  const Started started = start_run(tmp, tag, args, clients, client_flags);
  if (extra_peer) extra_peer(started.endpoint);
  RunResult r;
  r.server_code = wait_exit(started.server, 120).value_or(-99);
  r.out = slurp(tmp / (tag + ".out"));
  r.err = slurp(tmp / (tag + ".err"));
  // a client exits 0 when the run completed (a diverged one included), else as the server's STOP
  // told it; one the server dropped was told so then
  const bool completed = r.server_code == 0 || r.server_code == kExitDiverged;
  size_t dropped = 0, told = 0;
  for (size_t at = 0;
       (at = r.err.find("it gets no more tasks in this run", at)) != std::string::npos; ++at)
    ++dropped;
  for (pid_t p : started.clients) {
    const int code = wait_exit(p, 30).value_or(-99);
    told += code == kExitEndedByServer;
    if (!completed) {
      EXPECT_EQ(code, kExitEndedByServer) << "a client did not exit as told";
    } else {
      EXPECT_TRUE(code == 0 || code == kExitEndedByServer) << "a client failed: " << code;
    }
  }
  if (completed) {
    EXPECT_LE(told, dropped) << r.err;  // (a peer of the test may be the dropped one)
  }
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex("final model hash: ([0-9a-f]{16})"))) r.hash = m[1];
  return r;
}

}  // namespace fedpar::testing
