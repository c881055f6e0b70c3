// A real `fedpar server` process and `fedpar client` processes for integration tests: start
// them with a config's overrides, wait for all of them, and read the server's output and hash.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "tests/util/process.h"
#include "tests/util/test_util.h"

namespace fedpar::testing {

struct RunResult {
  int server_code = -100;
  std::string out, err, hash;
};

// Starts a server with `sets` (and `server_flags`, e.g. --resume DIR) on synthetic data and
// logistic regression, then `clients` client processes (and `extra_peer`, given the endpoint),
// and waits for all of them.
inline RunResult run_distributed(const TempDir& tmp, const std::string& tag,
                                 const std::string& bind, int clients,
                                 const std::vector<std::string>& sets,
                                 const std::function<void(const std::string&)>& extra_peer = {},
                                 const std::vector<std::string>& server_flags = {}) {
  std::vector<std::string> args = {"server",
                                   "--endpoint-file",
                                   (tmp / (tag + ".ep")).string(),
                                   "--set",
                                   "bind=" + bind,
                                   "--set",
                                   "results_dir=" + (tmp / "res").string(),
                                   "--set",
                                   "name=" + tag,
                                   "--set",
                                   "data.name=synthetic",
                                   "--set",
                                   "data.iid=true",
                                   "--set",
                                   "model.name=logreg",
                                   "--set",
                                   "processes=" + std::to_string(clients + (extra_peer ? 1 : 0))};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), server_flags.begin(), server_flags.end());
  const pid_t server = spawn_fedpar(args, tmp / (tag + ".out"), tmp / (tag + ".err"));
  const std::string ep = wait_for_file(tmp / (tag + ".ep"), 20);
  EXPECT_FALSE(ep.empty()) << "server wrote no endpoint";
  std::vector<pid_t> pids;
  for (int i = 0; i < clients; ++i)
    pids.push_back(spawn_fedpar({"client", "--quiet", "--wait", "60", "--server", ep},
                                tmp / (tag + std::to_string(i) + ".cout"),
                                tmp / (tag + std::to_string(i) + ".cerr")));
  if (extra_peer) extra_peer(ep);
  RunResult r;
  r.server_code = wait_exit(server, 120).value_or(-99);
  for (pid_t p : pids) EXPECT_EQ(wait_exit(p, 30).value_or(-99), 0) << "a client failed";
  r.out = slurp(tmp / (tag + ".out"));
  r.err = slurp(tmp / (tag + ".err"));
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex("final model hash: ([0-9a-f]{16})"))) r.hash = m[1];
  return r;
}

}  // namespace fedpar::testing
