// A whole run on threads: the server and its client processes as threads of the test, talking over
// inproc:// through one shared ZeroMQ context. Returns its results folder, wall time, round records
// and final model hash.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "clients/client.h"
#include "core/check.h"
#include "core/run_spec.h"
#include "server/server.h"

namespace fedpar::testing {

struct InprocRun {
  std::filesystem::path dir;
  double seconds = 0;  // the whole run's wall time
  std::vector<nlohmann::json> rounds;
  std::string hash;
  int clients_left_out = 0;  // client processes the server dropped (they exited 6)
};

// `base_toml` with `sets` applied, run as `name` into results_dir/name.
inline InprocRun run_on_threads(const std::string& base_toml,
                                const std::filesystem::path& results_dir, const std::string& name,
                                const std::vector<std::string>& sets) {
  Config cfg = make_run_config();
  cfg.merge_toml(base_toml, "the test");
  cfg.set_all(sets);
  cfg.set("name", name);
  cfg.set("results_dir", results_dir.string());
  static std::atomic<int> serial = 0;
  cfg.set("bind", fmt::format("inproc://run-on-threads-{}", serial++));
  const RunSpec s = resolve_run_spec(cfg);
  zmq::context_t ctx;
  std::vector<std::thread> clients;
  std::atomic<int> failures = 0, told = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < s.processes; ++i)
    clients.emplace_back([&] {
      try {
        const int code =
            run_client({.server = s.bind, .wait_seconds = 30, .quiet = true, .context = &ctx});
        if (code == kExitEndedByServer)
          ++told;  // the server went on without it (dropped)
        else if (code != 0)
          ++failures;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "client thread: " << e.what();
        ++failures;
      }
    });
  const int code = run_server(cfg, {.quiet = true, .context = &ctx});
  for (auto& t : clients) t.join();
  InprocRun r{results_dir / name,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  EXPECT_EQ(code, 0);
  EXPECT_EQ(failures.load(), 0);
  r.clients_left_out = told;
  std::ifstream in(r.dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) r.rounds.push_back(nlohmann::json::parse(line));
  if (std::filesystem::exists(r.dir / "summary.json"))
    r.hash = nlohmann::json::parse(std::ifstream(r.dir / "summary.json"))
                 .at("model_hash")
                 .get<std::string>();
  return r;
}

}  // namespace fedpar::testing
