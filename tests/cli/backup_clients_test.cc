// backup_clients over real processes: a synchronous round aggregates the first updates to come in
// and does not wait for the rest, whose replies, when they come, are dropped without an ERROR and
// count as no miss.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "tests/util/distributed_run.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

// Each client (its own process) sleeps 0.3 s before its update, client 3 1.2 s; with
// backup_clients = 1 every round takes the other three, well before it. A miss would fail the
// gradient regime (continue_without_missing is false) and drop the process at once
// (drop_after_missed_rounds = 1): the run completes with every round aggregating clients 0, 1, 2
// and naming client 3 as not waited for. Its updates come during later rounds and are dropped
// without a word: their bytes reach the server's socket (its processes' traffic), not the
// aggregated updates'.
TEST(BackupClients, TheSlowestUpdateIsNotWaitedForNorCountedAMiss) {
  for (const char* regime : {"gradient", "model"}) {
    TempDir tmp;
    const std::string name = std::string("backup-") + regime;
    const testing::RunResult r = testing::run_distributed(
        tmp, name, "ipc://" + (tmp / "b").string(), 4,
        {std::string("regime=") + regime, "rounds=8", "backup_clients=1",
         R"(stragglers.delay_seconds=["0:0.3", "1:0.3", "2:0.3", "3:1.2"])",
         "drop_after_missed_rounds=1", "wait_seconds=30"});
    ASSERT_EQ(r.server_code, 0) << regime << "\n" << r.err;
    const auto rows = testing::jsonl(tmp / "res" / name / "metrics.jsonl");
    ASSERT_EQ(rows.size(), 8u) << r.err;
    uint64_t socket_up = 0, aggregated_up = 0;
    for (const auto& row : rows) {
      for (const auto& p : row["processes"]) socket_up += p["bytes_up"].get<uint64_t>();
      for (const auto& c : row["clients"]) aggregated_up += c["bytes_up"].get<uint64_t>();
      EXPECT_EQ(row["participants"], 4) << row.dump();
      EXPECT_EQ(row["received"], 3) << row.dump();
      EXPECT_EQ(row["not_waited_for"], nlohmann::json::array({3})) << row.dump();
      EXPECT_EQ(row["missing"], nlohmann::json::array()) << row.dump();
      for (const auto& c : row["clients"]) EXPECT_NE(c["client"], 3) << row.dump();
      // the round did not wait out client 3's 1.2 s
      EXPECT_LT(row["wait_seconds"].get<double>(), 1.0) << row.dump();
    }
    EXPECT_GT(socket_up, aggregated_up) << "no update of client 3 came during the run";
    EXPECT_NE(r.err.find("3 updates, not waited for: client 3"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("came after that round's deadline"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("missed"), std::string::npos) << r.err;
    EXPECT_NE(testing::slurp(tmp / "res" / name / "README.md")
                  .find("- 8 of 32 participants' updates were not waited for: each round "
                        "aggregated the first to come in and did not wait for the last 1 (fewer "
                        "where clients were missing: a dead or dropped one is one of them; "
                        "`backup_clients`; each round's in metrics.jsonl's `not_waited_for`): "
                        "client 3\n"),
              std::string::npos)
        << testing::slurp(tmp / "res" / name / "README.md");
  }
}

// A server of 4 client processes, a client each, every client waiting `delay` seconds before
// each update (so the rounds outlast a signal), with `sets`; started, with round 2 logged.
testing::Started started_at_round_2(const TempDir& tmp, const std::string& tag, double delay,
                                    std::vector<std::string> sets) {
  sets.push_back(
      fmt::format(R"(stragglers.delay_seconds=["0:{0}", "1:{0}", "2:{0}", "3:{0}"])", delay));
  const auto run = testing::start_run(
      tmp, tag,
      testing::server_args(tmp, tag, tag, "ipc://" + (tmp / tag).string() + ".sock", 4, sets), 4);
  testing::wait_for_round(tmp, tag, 2);
  return run;
}

// A process that hangs with its connection open (SIGSTOP) would be released every round and
// never dropped, nor replaced: silent for wait_seconds, its released client counts as a miss, and
// after drop_after_missed_rounds such rounds the process is dropped; the run goes on.
TEST(BackupClients, AProcessThatHangsIsDroppedAsAnyMissingOne) {
  TempDir tmp;
  const auto run = started_at_round_2(tmp, "hung", 0.3,
                                      {"regime=model", "rounds=24", "backup_clients=1",
                                       "wait_seconds=2", "drop_after_missed_rounds=2"});
  kill(run.clients[3], SIGSTOP);
  const int code = testing::wait_exit(run.server, 120).value_or(-99);
  kill(run.clients[3], SIGCONT);
  for (pid_t p : run.clients) testing::wait_exit(p, 30);
  const std::string err = testing::slurp(tmp / "hung.err");
  ASSERT_EQ(code, 0) << err;
  EXPECT_NE(err.find("missed 2 round(s) in a row; it gets no more tasks in this run"),
            std::string::npos)
      << err;
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res" / "hung" / "summary.json"));
  int lost = 0;
  for (const auto& h : summary["hosts"]) lost += h["lost"].get<bool>();
  EXPECT_EQ(lost, 1) << summary.dump();
}

// A worker killed mid-run is one of the b: the gradient regime goes on with the other three
// (it stopped at the first missing gradient, though it held the 3 of 4 it aggregates every
// round), the dead process is dropped, and every round after still aggregates 3.
TEST(BackupClients, AKilledWorkerIsOneOfTheBackupsInTheGradientRegime) {
  TempDir tmp;
  const auto run = started_at_round_2(
      tmp, "killed", 0.1, {"regime=gradient", "rounds=30", "backup_clients=1", "wait_seconds=5"});
  kill(run.clients[1], SIGKILL);
  const int code = testing::wait_exit(run.server, 120).value_or(-99);
  for (pid_t p : run.clients) testing::wait_exit(p, 30);
  const std::string err = testing::slurp(tmp / "killed.err");
  ASSERT_EQ(code, 0) << err;
  EXPECT_NE(err.find("; continuing with the rest"), std::string::npos) << err;
  const auto rows = testing::jsonl(tmp / "res" / "killed" / "metrics.jsonl");
  ASSERT_EQ(rows.size(), 30u);
  for (const auto& row : rows) EXPECT_EQ(row["received"], 3) << row.dump();
  EXPECT_EQ(rows.back()["missing"].size(), 1u) << rows.back().dump();
}

}  // namespace
}  // namespace fedpar
