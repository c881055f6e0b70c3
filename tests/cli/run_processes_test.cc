// A real server process and real client processes over ZeroMQ (ipc and tcp loopback): the same
// config gives the same final model bytes whatever the transport and the number of processes;
// a peer's garbage gets an ERROR and changes nothing; a client that never answers is dropped
// from the round in the model regime and stops the gradient regime with a clear error.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/run_spec.h"
#include "protocol/frames.h"
#include "protocol/messages.h"
#include "tests/util/distributed_run.h"
#include "tests/util/process.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::run_distributed;
using testing::RunResult;
using testing::TempDir;

class Distributed : public ::testing::TestWithParam<const char*> {};

TEST_P(Distributed, SameBytesOverAnyTransportAndProcessCount) {
  TempDir tmp;
  const std::string param = GetParam();  // a regime, or "fp16": gradients in fp16, loss-scaled
  std::vector<std::string> sets = {"rounds=4",       "partition.clients=6", "local.steps=3",
                                   "local.batch=20", "optimizer.lr=0.05",   "optimizer.lr=0.5",
                                   "fraction=0.5"};
  if (param == "fp16")  // loss scales are per client: hosting does not change the bytes
    sets.insert(sets.end(), {"regime=gradient", "optimizer.precision=fp16", "sgd.batch=20"});
  else
    sets.push_back("regime=" + param);
  const RunResult a = run_distributed(tmp, "tcp1", "tcp://127.0.0.1:*", 1, sets);
  ASSERT_EQ(a.server_code, 0) << a.err;
  ASSERT_EQ(a.hash.size(), 16u) << a.out;
  const RunResult b = run_distributed(tmp, "ipc2", "ipc://" + (tmp / "s.sock").string(), 2, sets);
  ASSERT_EQ(b.server_code, 0) << b.err;
  const RunResult c = run_distributed(tmp, "tcp4", "tcp://127.0.0.1:*", 4, sets);
  ASSERT_EQ(c.server_code, 0) << c.err;
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.hash, c.hash);
  for (const char* f : {"config.resolved.toml", "manifest.json", "metrics.jsonl",
                        "model.safetensors", "summary.json"})
    EXPECT_TRUE(std::filesystem::exists(tmp / "res" / "tcp1" / f)) << f;
  // Every round line accounts for each participant: 3 of 6 clients at fraction 0.5.
  std::ifstream metrics(tmp / "res" / "tcp1" / "metrics.jsonl");
  int rounds = 0;
  for (std::string line; std::getline(metrics, line); ++rounds) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["participants"], 3);
    ASSERT_EQ(j["clients"].size(), 3u);
    for (const auto& c : j["clients"]) {
      EXPECT_GT(c["bytes_up"].get<int64_t>(), 4 * 610);  // at least the 610 logreg floats
      EXPECT_GT(c["samples_processed"].get<int64_t>(), 0);
    }
  }
  EXPECT_EQ(rounds, 4);
}

INSTANTIATE_TEST_SUITE_P(Regimes, Distributed, ::testing::Values("model", "gradient", "fp16"));

TEST(FedparRun, SupervisesServerAndClientsAndGivesTheSameBytes) {
  TempDir tmp;
  const std::vector<std::string> sets = {"regime=model", "rounds=3", "partition.clients=5",
                                         "local.steps=2", "local.batch=16"};
  const RunResult direct = run_distributed(tmp, "direct", "tcp://127.0.0.1:*", 1, sets);
  ASSERT_EQ(direct.server_code, 0) << direct.err;
  std::ofstream(tmp / "run.toml") << "seed = 1\n[data]\nname = 'synthetic'\niid = true\n"
                                     "[model]\nname = 'logreg'\n";
  std::vector<std::string> args = {"run",   (tmp / "run.toml").string(),
                                   "-p",    "3",
                                   "--set", "results_dir=" + (tmp / "res").string(),
                                   "--set", "name=viarun"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  const pid_t pid = testing::spawn_fedpar(args, tmp / "run.out", tmp / "run.err");
  EXPECT_EQ(testing::wait_exit(pid, 120).value_or(-99), 0) << testing::slurp(tmp / "run.err");
  EXPECT_NE(testing::slurp(tmp / "run.out").find("final model hash: " + direct.hash),
            std::string::npos)
      << testing::slurp(tmp / "run.out");
  // the folder's README says what ran and how it ended, and its command runs it again
  const std::string readme = testing::slurp(tmp / "res/viarun/README.md");
  EXPECT_NE(readme.find("fedpar ran `logreg` on synthetic-iid in the `model` regime"),
            std::string::npos)
      << readme;
  // what the processes computed on, as their HELLOs said
  EXPECT_NE(readme.find("5 virtual client(s) in 3 client process(es) on cpu, 3 of 3 rounds"),
            std::string::npos)
      << readme;
  EXPECT_NE(readme.find("final model hash `" + direct.hash + "`"), std::string::npos) << readme;
  // a small run's bytes in kB (in MB they would read 0.0), the summary's count
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res/viarun/summary.json"));
  for (const auto& host : summary.at("hosts")) EXPECT_EQ(host.at("device"), "cpu") << host;
  const uint64_t received = summary.at("final").at("bytes_received_total").get<uint64_t>();
  ASSERT_LT(received, 100'000u);
  EXPECT_NE(readme.find(fmt::format(" {:.1f} kB received at the server's socket by round 3",
                                    double(received) / 1e3)),
            std::string::npos)
      << readme;
  for (const char* file : {"`metrics.jsonl`: one JSON", "`summary.json`: the final",
                           "`model.safetensors`: the final parameters", "`README.md`: this file"})
    EXPECT_NE(readme.find(file), std::string::npos) << file << "\n" << readme;
  EXPECT_EQ(readme.find("`.lock`"), std::string::npos) << "the writer's lock, gone once committed";
  for (const char* setting : {"| `partition.clients` | `5` |", "| `local.steps` | `2` |",
                              "| `name` | `'viarun'` |"})  // what the file and --set chose
    EXPECT_NE(readme.find(setting), std::string::npos) << setting << "\n" << readme;
  EXPECT_EQ(readme.find("| `optimizer.lr` |"), std::string::npos) << "a default is not listed";
  const auto config = tmp / "res/viarun/config.resolved.toml";  // results_dir is absolute here
  ASSERT_NE(readme.find("fedpar run " + config.string()), std::string::npos) << readme;
  EXPECT_NE(readme.find("The same config gives the same final model hash with fedpar built from "
                        "the same commit for the same vector units and OpenBLAS kernels"),
            std::string::npos);
  // what built it and where it ran: summary.json's words, in the README too
  ASSERT_TRUE(summary.contains("source_commit")) << summary.dump();
  const std::string commit = summary["source_commit"], machine = summary["machine"];
  EXPECT_TRUE(std::regex_match(commit, std::regex(R"([0-9a-f]{7,}( \+ uncommitted changes)?)")) ||
              commit == "unknown (not the top of a git checkout, or no git)")
      << commit;
  EXPECT_NE(machine.find(" cores, "), std::string::npos) << machine;
  EXPECT_TRUE(std::regex_match(summary.value("blas_kernels", ""),
                               std::regex(R"(OpenBLAS \w+ kernels|Eigen, no OpenBLAS)")))
      << summary.dump();
  EXPECT_NE(
      readme.find(fmt::format("- fedpar built from commit `{}` for {} with {}, the server on {}\n",
                              commit, summary["build_vector_units"].get<std::string>(),
                              summary["blas_kernels"].get<std::string>(), machine)),
      std::string::npos)
      << readme;
  // the README's plot command draws this run
  const std::string plot = "compare " + (tmp / "res/viarun").string();
  ASSERT_NE(readme.find(plot), std::string::npos) << readme;
  const auto drawn = testing::run_fedpar(plot + " --out " + (tmp / "plots").string(), tmp.path());
  EXPECT_EQ(drawn.code, 0) << drawn.err;
  EXPECT_TRUE(std::filesystem::exists(tmp / "plots/report.md")) << drawn.out;
  const auto again = testing::run_fedpar("run " + config.string(), tmp.path());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("final model hash: " + direct.hash), std::string::npos) << again.out;
  // the second run's folder has a suffix, and its README names its own config, not the first's
  const std::string readme2 = testing::slurp(tmp / "res/viarun-2/README.md");
  EXPECT_NE(readme2.find("fedpar run " + (tmp / "res/viarun-2/config.resolved.toml").string()),
            std::string::npos)
      << readme2;
  EXPECT_EQ(readme2.find(".partial-"), std::string::npos) << readme2;

  const pid_t bad =
      testing::spawn_fedpar({"run", (tmp / "run.toml").string(), "--set", "rounds=zero"},
                            tmp / "bad.out", tmp / "bad.err");
  EXPECT_EQ(testing::wait_exit(bad, 30).value_or(-99), 2);
  EXPECT_NE(testing::slurp(tmp / "bad.err").find("rounds must be an integer"), std::string::npos);
}

// A run's folder says how long its rounds took, and where a straggler held them up, which
// client it was: client 0 sleeps 0.3 s before each update, the others not at all.
TEST(FedparRun, AFolderSaysHowLongItsRoundsTookAndWhichClientWasSlowest) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "rounds = 4\nprocesses = 4\n[data]\nname = 'synthetic'\n"
                                     "iid = true\n[model]\nname = 'logreg'\n[local]\nsteps = 2\n"
                                     "[stragglers]\ndelay_seconds = ['0:0.3']\n";
  const auto r = testing::run_fedpar("run " + (tmp / "run.toml").string() + " --no-plots --set " +
                                         "results_dir=" + (tmp / "res").string() + " --set name=s",
                                     tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const double seconds = nlohmann::json::parse(testing::slurp(tmp / "res/s/summary.json"))
                             .at("rounds_seconds")
                             .get<double>();
  EXPECT_GE(seconds, 4 * 0.3);  // every round waits for client 0
  const std::string readme = testing::slurp(tmp / "res/s/README.md");
  EXPECT_NE(readme.find(fmt::format("- 4 rounds in {:.1f} s on the server's clock ({:.3g} s a "
                                    "round, evaluations included); the median round waited ",
                                    seconds, seconds / 4)),
            std::string::npos)
      << readme;
  const std::smatch m = [&] {
    std::smatch found;
    std::regex_search(readme, found,
                      std::regex("the slowest client, client (\\d+), computed ([0-9.e-]+) s a "
                                 "round and the median client ([0-9.e-]+) s"));
    return found;
  }();
  ASSERT_EQ(m.size(), 4u) << readme;
  EXPECT_EQ(m[1], "0") << readme;
  EXPECT_GE(std::stod(m[2]), 0.3) << readme;  // [stragglers]' sleep counts as its compute
  EXPECT_LT(std::stod(m[3]), 0.3) << readme;
  EXPECT_NE(readme.find("`clients[].compute_seconds`, [stragglers]' sleep included)"),
            std::string::npos)
      << readme;
}

// log_every thins the server's round lines, never the evaluated, first or last round's, nor
// metrics.jsonl; it changes nothing the run computes.
TEST(FedparRun, LogEveryThinsTheRoundLinesAndNothingElse) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "rounds = 7\neval_every = 3\n[data]\nname = 'synthetic'\n"
                                     "iid = true\n[model]\nname = 'logreg'\n";
  std::string hashes[2];
  for (int every : {1, 4}) {
    const auto r = testing::run_fedpar(
        fmt::format("run {} --no-plots --set results_dir={} --set name=e{} --set log_every={}",
                    (tmp / "run.toml").string(), (tmp / "res").string(), every, every),
        tmp.path());
    ASSERT_EQ(r.code, 0) << r.err;
    hashes[every == 4] = testing::model_hash(tmp / "res" / fmt::format("e{}", every));
    std::set<int> printed;
    for (int round = 1; round <= 7; ++round)
      if (r.err.find(fmt::format("round {}/7:", round)) != std::string::npos) printed.insert(round);
    // 1 the first, 3 and 6 evaluated, 4 the fourth, 7 the last (and evaluated)
    const std::set<int> want =
        every == 1 ? std::set<int>{1, 2, 3, 4, 5, 6, 7} : std::set<int>{1, 3, 4, 6, 7};
    EXPECT_EQ(printed, want) << r.err;
    EXPECT_EQ(testing::jsonl(tmp / "res" / fmt::format("e{}", every) / "metrics.jsonl").size(), 7u);
  }
  EXPECT_EQ(hashes[0], hashes[1]);
  const auto bad =
      testing::run_fedpar("run " + (tmp / "run.toml").string() + " --set log_every=0", tmp.path());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("log_every must be >= 1 (1: a line every round)"), std::string::npos)
      << bad.err;
}

// A run evaluated at 5 rounds or more gets its test accuracy and loss by round drawn into its
// folder, shown in its README; --no-plots draws none.
TEST(FedparRun, AFolderShowsItsRunsCurves) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "rounds = 5\n[data]\nname = 'synthetic'\n[model]\n"
                                     "name = 'logreg'\n";
  const std::string run = "run " + (tmp / "run.toml").string() +
                          " -p 2 --set results_dir=" + (tmp / "res").string() + " --set name=";
  const auto r = testing::run_fedpar(run + "drawn", tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string readme = testing::slurp(tmp / "res/drawn/README.md");
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    EXPECT_NE(readme.find("(no plot of the test accuracy (%): gnuplot is not installed"),
              std::string::npos)
        << readme;
  } else {
    for (const char* svg : {"accuracy-vs-round.svg", "loss-vs-round.svg"}) {
      EXPECT_NE(readme.find(fmt::format("](plots/{})", svg)), std::string::npos) << readme;
      EXPECT_NE(testing::slurp(tmp / "res/drawn/plots" / svg).find("<svg"), std::string::npos);
    }
    // the data drawn are the run's five evaluations, rounds 1 to 5
    std::ifstream dat(tmp / "res/drawn/plots/accuracy-vs-round.svg.dat");
    std::vector<int> rounds;
    for (std::string line; std::getline(dat, line);)
      if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0])))
        rounds.push_back(std::stoi(line));
    EXPECT_EQ(rounds, (std::vector<int>{1, 2, 3, 4, 5}));
  }
  EXPECT_NE(readme.find("`plots`: the test accuracy and loss by round"), std::string::npos);
  // the split drawn beside its manifest, as `fedpar partition --out` draws it
  EXPECT_NE(testing::slurp(tmp / "res/drawn/partition.svg").find("<svg"), std::string::npos);
  EXPECT_NE(readme.find("- `partition.svg`: the partition drawn"), std::string::npos) << readme;
  // local training not given: the server, under `fedpar run` too, warns that this is FedSGD (it
  // sees the keys given, not every key resolved), with the regime given or by default
  const auto bare = testing::run_fedpar(run + "bare --no-plots --set regime=model", tmp.path());
  ASSERT_EQ(bare.code, 0) << bare.err;
  EXPECT_NE(bare.err.find("warning: regime = \"model\" with its local defaults (local.steps = 1, "
                          "local.batch = full) takes one full-batch step a round: FedSGD"),
            std::string::npos)
      << bare.err;
  EXPECT_NE(r.err.find("warning: regime = \"model\" (the default) with its local defaults"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "res/bare/plots"));
  const std::string bare_readme = testing::slurp(tmp / "res/bare/README.md");
  EXPECT_EQ(bare_readme.find("]("), std::string::npos);
  EXPECT_NE(bare_readme.find("(no plots drawn: `--no-plots`"), std::string::npos) << bare_readme;
  // the time line names [stragglers] only where the run had them
  EXPECT_NE(bare_readme.find(" rounds in "), std::string::npos) << bare_readme;
  EXPECT_EQ(bare_readme.find("[stragglers]"), std::string::npos) << bare_readme;
  // too few evaluated rounds for a curve: the README says so, and no folder is made
  const auto short_run = testing::run_fedpar(run + "short --set rounds=4", tmp.path());
  ASSERT_EQ(short_run.code, 0) << short_run.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "res/short/plots"));
  EXPECT_NE(testing::slurp(tmp / "res/short/README.md")
                .find("(no plots: 4 evaluated round(s), and a run's own curves start at 5"),
            std::string::npos);
}

// A client process of other BLAS kernels (OPENBLAS_CORETYPE: as a host of another CPU would
// pick) sums otherwise: its build is recorded in hosts[] and warned of; the server recorded only
// its own, so a mixed run read as one build's.
TEST(Distributed, AClientOfAnotherBuildIsRecordedAndWarnedOf) {
  TempDir tmp;
  pid_t other = -1;
  const RunResult r = run_distributed(
      tmp, "mixed", "tcp://127.0.0.1:*", 1, {"rounds=2"}, [&](const std::string& ep) {
        setenv("OPENBLAS_CORETYPE", "Prescott", 1);
        other = testing::spawn_fedpar({"client", "--quiet", "--server", ep}, tmp / "other.out",
                                      tmp / "other.err");
        unsetenv("OPENBLAS_CORETYPE");
      });
  EXPECT_EQ(testing::wait_exit(other, 30).value_or(-99), 0);
  ASSERT_EQ(r.server_code, 0) << r.err;
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res/mixed/summary.json"));
  const std::string own = summary.value("source_commit", "(commit unknown)") + " (" +
                          summary["build_vector_units"].get<std::string>() + ", " +
                          summary["blas_kernels"].get<std::string>() + ")";
  ASSERT_EQ(summary["hosts"].size(), 2u);
  for (const auto& h : summary["hosts"]) {
    EXPECT_EQ(h["machine"], summary["machine"]) << h;
    if (h["pid"] != other) {
      EXPECT_EQ(h["build"], own) << h;
    }
  }
  if (summary["blas_kernels"].get<std::string>().find("OpenBLAS") == std::string::npos)
    GTEST_SKIP() << "no OpenBLAS: OPENBLAS_CORETYPE changes nothing";
  const auto& mixed =
      summary["hosts"][0]["pid"] == other ? summary["hosts"][0] : summary["hosts"][1];
  const std::string theirs = own.substr(0, own.find(", ")) + ", OpenBLAS Prescott kernels)";
  EXPECT_EQ(mixed["build"], theirs) << mixed;
  EXPECT_NE(r.err.find(fmt::format("warning: client process pid {} runs {}, the server {}: its "
                                   "sums may round apart",
                                   other, theirs, own)),
            std::string::npos)
      << r.err;
}

TEST(Distributed, VirtualClientsFollowSlotsAndBytesAreCountedPerProcess) {
  TempDir tmp;
  pid_t big = -1;
  const RunResult r = run_distributed(
      tmp, "slots", "tcp://127.0.0.1:*", 1,
      {"regime=model", "rounds=2", "partition.clients=8", "max_slots=3"},
      [&](const std::string& ep) {
        big = testing::spawn_fedpar({"client", "--quiet", "--slots", "3", "--server", ep},
                                    tmp / "big.out", tmp / "big.err");
      });
  EXPECT_EQ(testing::wait_exit(big, 30).value_or(-99), 0);
  ASSERT_EQ(r.server_code, 0) << r.err;
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res/slots/summary.json"));
  std::multiset<std::pair<int, size_t>> hosts;  // (slots, virtual clients)
  for (const auto& h : summary["hosts"]) hosts.insert({h["slots"], h["clients"].size()});
  EXPECT_EQ(hosts, (std::multiset<std::pair<int, size_t>>{{1, 2}, {3, 6}}));
  for (const auto& h : summary["hosts"])  // the most slots first, whoever said HELLO first
    EXPECT_EQ(h["clients"][0] == 0, h["slots"] == 3) << h;

  std::ifstream in(tmp / "res/slots/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    uint64_t up_clients = 0, up_processes = 0;
    for (const auto& c : j["clients"]) up_clients += c["bytes_up"].get<uint64_t>();
    for (const auto& p : j["processes"]) {
      up_processes += p["bytes_up"].get<uint64_t>();
      // one TASK per process per round, carrying the model once
      EXPECT_GT(p["bytes_down"].get<uint64_t>(), j["bytes_down_per_task"].get<uint64_t>());
      EXPECT_LT(p["bytes_down"].get<uint64_t>(), j["bytes_down_per_task"].get<uint64_t>() + 512);
    }
    EXPECT_EQ(up_clients, up_processes);
    EXPECT_EQ(j["clients"].size(), 8u);
  }
}

// The child processes of `pid` whose command line contains `word`.
std::vector<pid_t> children_with(pid_t pid, const std::string& word) {
  std::vector<pid_t> out;
  std::ifstream in(fmt::format("/proc/{}/task/{}/children", pid, pid));
  for (pid_t c; in >> c;) {
    std::string cmd = testing::slurp(fmt::format("/proc/{}/cmdline", c));
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find(word) != std::string::npos) out.push_back(c);
  }
  return out;
}

// `fedpar run` of a config on synthetic data with 2 client processes and `sets`; returns its
// pid once both clients run, with their pids in `clients`.
// `stale_reason`: the run starts with a stop-reason file in its pid's temp folder, as a dead
// fedpar run of the same pid would have left it (the run must not take it for its own).
pid_t supervised(const TempDir& tmp, const std::vector<std::string>& sets,
                 std::vector<pid_t>& clients, bool stale_reason = false) {
  std::ofstream(tmp / "run.toml") << "processes = 2\n[data]\nname = 'synthetic'\n"
                                     "iid = true\n[model]\nname = 'logreg'\n";
  std::vector<std::string> args = {"run", (tmp / "run.toml").string(), "--set",
                                   "results_dir=" + (tmp / "res").string()};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  if (stale_reason) {  // sh writes it, then becomes fedpar run (exec keeps its pid)
    args.insert(args.begin(), {"-c",
                               "d=${TMPDIR:-/tmp}/fedpar-run-$$; mkdir -p $d; echo 'client "
                               "process 7 was stale' > $d/stop-reason; exec \"$0\" \"$@\"",
                               FEDPAR_BIN});
  }
  const pid_t run = stale_reason
                        ? testing::spawn_program("/bin/sh", args, tmp / "run.out", tmp / "run.err")
                        : testing::spawn_fedpar(args, tmp / "run.out", tmp / "run.err");
  clients.clear();
  for (int i = 0; i < 500 && clients.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    clients = children_with(run, "client");
  }
  return run;
}

// fedpar run listens where the config's bind (or --set) says, and on a free loopback port where
// it keeps fedpar server's default; --bind says last.
TEST(FedparRun, ListensWhereTheConfigsBindSays) {
  TempDir tmp;
  const std::string toml =
      "rounds = 1\nprocesses = 1\n[data]\nname = 'synthetic'\niid = true\n[model]\nname = "
      "'logreg'\n";
  const std::string sock = "ipc://" + (tmp / "s.sock").string();
  auto r = testing::run_config(tmp.path(), toml, "chosen", "--set bind=" + sock);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("listening on " + sock), std::string::npos) << r.err;
  const std::string flag = "ipc://" + (tmp / "f.sock").string();
  r = testing::run_config(tmp.path(), toml, "flag", "--set bind=" + sock + " --bind " + flag);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("listening on " + flag), std::string::npos) << r.err;
  r = testing::run_config(tmp.path(), toml, "default", "--set bind=tcp://127.0.0.1:5555");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("listening on tcp://127.0.0.1:5555"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("listening on tcp://127.0.0.1:"), std::string::npos) << r.err;
}

// The server and client processes show as `fedpar server ...` and `fedpar client ...` (argv[0]
// and the kernel's name are the executable's file name), so ps and pgrep find them.

TEST(FedparRun, ChildProcessesCarryTheExecutablesName) {
  TempDir tmp;
  std::vector<pid_t> clients;
  const pid_t run = supervised(tmp, {"rounds=100000"}, clients);
  ASSERT_EQ(clients.size(), 2u);
  const std::string name = std::filesystem::path(FEDPAR_BIN).filename().string();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // each has named itself
  const std::vector<pid_t> all = children_with(run, "");
  ASSERT_EQ(all.size(), 3u);
  std::multiset<std::string> roles;
  for (pid_t p : all) {
    const std::string cmd = testing::slurp(fmt::format("/proc/{}/cmdline", p));
    const std::string argv0 = cmd.substr(0, cmd.find('\0'));
    EXPECT_EQ(argv0, name) << "process " << p;
    const size_t at = argv0.size() + 1;
    roles.insert(cmd.substr(at, cmd.find('\0', at) - at));
    std::string comm = testing::slurp(fmt::format("/proc/{}/comm", p));
    comm.erase(comm.find_last_not_of('\n') + 1);
    EXPECT_EQ(comm, name.substr(0, 15)) << "process " << p;
  }
  EXPECT_EQ(roles, (std::multiset<std::string>{"client", "client", "server"}));
  kill(run, SIGINT);
  EXPECT_EQ(testing::wait_exit(run, 30).value_or(-99), 130);
}

TEST(FedparRun, StopsEverythingWhenAClientDiesOrOnInterrupt) {
  TempDir tmp;
  for (const bool interrupt : {false, true}) {
    SCOPED_TRACE(interrupt ? "interrupt" : "killed client");
    std::vector<pid_t> clients;  // the gradient regime needs every client
    const pid_t run =
        supervised(tmp, {"rounds=100000", "regime=gradient", "name=run"}, clients, interrupt);
    ASSERT_EQ(clients.size(), 2u);
    const std::vector<pid_t> all = children_with(run, "");        // the server and both clients
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // some rounds run
    kill(interrupt ? run : clients[0], interrupt ? SIGINT : SIGKILL);
    EXPECT_EQ(testing::wait_exit(run, 30).value_or(-99), interrupt ? 130 : kExitRunFailed);
    const std::string err = testing::slurp(tmp / "run.err");
    EXPECT_NE(err.find(interrupt ? "interrupted by SIGINT; stopping the server and clients"
                                 : "was killed by signal 9"),
              std::string::npos)
        << err;
    if (interrupt) {  // the server hears the same signal, and says so
      EXPECT_EQ(err.find("signal 15"), std::string::npos) << err;
      // clients stopped first are not reported unreachable by the server's last STOP
      EXPECT_EQ(err.find("cannot be reached"), std::string::npos) << err;
      EXPECT_NE(err.find("fedpar server: stopped by SIGINT; its rounds are kept (above)"),
                std::string::npos)
          << err;
    }
    for (pid_t p : all)
      EXPECT_NE(kill(p, 0), 0) << "process " << p << " outlived the run: "
                               << testing::slurp(fmt::format("/proc/{}/cmdline", p)) << "\n"
                               << err;
    // no partial folder is left: the rounds that ran are kept as <name>.incomplete, saying that
    // without a checkpoint they cannot be continued
    EXPECT_NE(err.find("the metrics of the rounds that ran are kept in " +
                       (tmp / "res" / "run.incomplete").string() + (interrupt ? "-2" : "") +
                       " (no checkpoint, so it cannot be resumed"),
              std::string::npos)
        << err;
    std::set<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(tmp / "res"))
      left.insert(e.path().filename().string());
    const std::set<std::string> kept =
        interrupt ? std::set<std::string>{"run.incomplete", "run.incomplete-2"}
                  : std::set<std::string>{"run.incomplete"};
    EXPECT_EQ(left, kept);
    const std::string readme = testing::slurp(tmp / "res" / "run.incomplete" / "README.md");
    EXPECT_NE(readme.find("This run stopped after "), std::string::npos) << readme;
    // the cause, not the SIGTERM fedpar run stopped the server with (it said so once). A killed
    // client's connection may drop at the server before fedpar run reaps the process: then the
    // server stops on its own, naming the clients it lost, which is the same cause.
    const std::string own = testing::slurp(
        tmp / "res" / (interrupt ? "run.incomplete-2" : "run.incomplete") / "README.md");
    EXPECT_TRUE(interrupt
                    ? own.find("stopped by SIGINT") != std::string::npos
                    : own.find("stopped by fedpar run: client process ") != std::string::npos ||
                          own.find(" not reachable)") != std::string::npos)
        << own;
    EXPECT_EQ(own.find("SIGTERM"), std::string::npos) << own;
    EXPECT_EQ(own.find("stale"), std::string::npos) << own;  // an earlier pid's reason is not its
    EXPECT_NE(readme.find("no checkpoint (`checkpoint_every = 0`), so it cannot be continued"),
              std::string::npos)
        << readme;
    EXPECT_GT(testing::jsonl(tmp / "res" / "run.incomplete" / "metrics.jsonl").size(), 0u);
    // a record, not a starting point
    testing::expect_refused(fmt::format("run {} --resume {}", (tmp / "run.toml").string(),
                                        (tmp / "res" / "run.incomplete").string()),
                            tmp.path(), 2,
                            "holds no checkpoint.bin, so there is nothing to resume");
  }
}

// The run's own fault policy: model averaging (the server drops a missing client's updates at the
// round's deadline), and an all-reduce ring with allreduce.elastic (the survivor goes on as a
// ring of one), finish without a killed client process. With fraction 0.5 of 4 clients on 2
// processes, the rounds that sample only the dead process's clients keep the model and go on.
TEST(FedparRun, ModelAveragingAndAnElasticRingGoOnWhenAClientDies) {
  for (const std::string regime : {"regime=model", "fraction=0.5", "topology=allreduce"}) {
    SCOPED_TRACE(regime);
    TempDir tmp;
    std::vector<pid_t> clients;
    std::vector<std::string> sets = {"rounds=40", regime, "wait_seconds=2",
                                     "stragglers.delay_seconds=0:0.05"};
    if (regime == "fraction=0.5") sets.insert(sets.end(), {"regime=model", "partition.clients=4"});
    if (regime == "topology=allreduce")
      sets.insert(sets.end(), {"regime=gradient", "allreduce.elastic=true",
                               "allreduce.deadline_seconds=1", "partition.clients=2"});
    const pid_t run = supervised(tmp, sets, clients);
    ASSERT_EQ(clients.size(), 2u);
    testing::wait_for_round(tmp, "run", 2);  // the ring has formed, the rounds have begun
    kill(clients[1], SIGKILL);
    EXPECT_EQ(testing::wait_exit(run, 120).value_or(-99), 0) << testing::slurp(tmp / "run.err");
    EXPECT_NE(testing::slurp(tmp / "run.err").find("the run goes on without its virtual clients"),
              std::string::npos)
        << testing::slurp(tmp / "run.err");
    EXPECT_NE(testing::slurp(tmp / "run.out").find("final model hash:"), std::string::npos);
    if (regime == "fraction=0.5") {  // 1 round in 6 samples clients 2 and 3 alone
      EXPECT_NE(testing::slurp(tmp / "run.err").find("were on a dropped process"),
                std::string::npos)
          << testing::slurp(tmp / "run.err");
    }
  }
}

// A supervisor killed outright (SIGKILL: no chance to clean up) takes its server and clients
// with it: the kernel sends each the SIGTERM they asked for (PR_SET_PDEATHSIG).
TEST(FedparRun, AKilledSupervisorLeavesNoProcessBehind) {
  TempDir tmp;
  std::vector<pid_t> clients;
  const pid_t run = supervised(tmp, {"rounds=100000"}, clients);
  ASSERT_EQ(clients.size(), 2u);
  const std::vector<pid_t> all = children_with(run, "");  // the server and both clients
  ASSERT_EQ(all.size(), 3u);
  kill(run, SIGKILL);
  waitpid(run, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const auto alive = [](pid_t p) {  // a zombie waiting for init to reap it has exited
    const std::string stat = testing::slurp(fmt::format("/proc/{}/stat", p));
    const auto close = stat.rfind(')');
    return kill(p, 0) == 0 && close != std::string::npos && stat.size() > close + 2 &&
           stat[close + 2] != 'Z';
  };
  for (pid_t p : all) {
    while (alive(p) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(alive(p)) << "process " << p << " outlived its supervisor: "
                           << testing::slurp(fmt::format("/proc/{}/cmdline", p));
  }
}

// A server killed outright under fedpar run (SIGKILL, the OOM killer) says nothing itself, and
// fedpar run once exited 137 without a word: it now says where the server's rounds are. With a
// checkpoint it names the --resume (and a --resume of the folder while its server still writes
// it is refused: it removed the folder under that run); without, the next run in the results
// folder keeps them as NAME.incomplete (it removed them without a word).
TEST(FedparRun, AKilledServersRoundsAreNamedAndKept) {
  TempDir tmp;
  const auto res = tmp / "res";
  for (const bool checkpoints : {true, false}) {
    SCOPED_TRACE(checkpoints ? "checkpoints" : "none");
    std::vector<pid_t> clients;
    const std::string name = checkpoints ? "ck" : "run";
    const pid_t run = supervised(
        tmp,
        {"rounds=100000", "name=" + name, fmt::format("checkpoint_every={}", checkpoints ? 1 : 0)},
        clients);
    ASSERT_EQ(clients.size(), 2u);
    const auto servers = children_with(run, " server ");
    ASSERT_EQ(servers.size(), 1u);
    ASSERT_TRUE(testing::wait_for_text(tmp / "run.err", "round 2/", 60));
    const auto partial = res / fmt::format(".{}.partial-{}", name, servers[0]);
    ASSERT_TRUE(std::filesystem::exists(partial));
    if (checkpoints)
      testing::expect_refused(
          fmt::format("run {} --resume {}", (partial / "config.resolved.toml").string(),
                      partial.string()),
          tmp.path(), 2, "is in use by another fedpar process");
    kill(servers[0], SIGKILL);
    EXPECT_EQ(testing::wait_exit(run, 30).value_or(-99), 128 + SIGKILL);
    const std::string err = testing::slurp(tmp / "run.err");
    EXPECT_NE(err.find("fedpar run: the server was killed by signal 9"), std::string::npos) << err;
    EXPECT_NE(
        err.find(checkpoints
                     ? fmt::format("holds a checkpoint: continue with fedpar run "
                                   "{0}/config.resolved.toml --resume {0}",
                                   partial.string())
                     : fmt::format("holds no checkpoint (checkpoint_every = N writes them where "
                                   "the run can keep one): "
                                   "the next run in {} keeps its rounds as run.incomplete",
                                   res.string())),
        std::string::npos)
        << err;
  }
  const auto next =
      testing::run_config(tmp.path(), "[data]\nname = 'synthetic'\n", "next", "--set rounds=1");
  ASSERT_EQ(next.code, 0) << next.err;
  EXPECT_NE(
      next.err.find("held the rounds of a run that died unfinished (no checkpoint): kept as " +
                    (res / "run.incomplete").string()),
      std::string::npos)
      << next.err;
  EXPECT_NE(next.err.find("holds the checkpoint of a run that was killed"), std::string::npos)
      << next.err;
  EXPECT_GE(testing::jsonl(res / "run.incomplete" / "metrics.jsonl").size(), 2u);
  EXPECT_NE(testing::slurp(res / "run.incomplete" / "README.md").find("# run (died unfinished)"),
            std::string::npos);
}

// A DEALER that says HELLO with garbage first, then a valid HELLO, then never answers a TASK.
void silent_peer(const std::string& ep, bool garbage) {
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.connect(ep);
  if (garbage) {
    std::vector<zmq::const_buffer> junk = {zmq::str_buffer("not a fedpar header"),
                                           zmq::str_buffer("x")};
    zmq::send_multipart(s, junk);
    std::vector<zmq::message_t> reply;
    EXPECT_TRUE(zmq::recv_multipart(s, std::back_inserter(reply)));  // the server answers ERROR
    std::vector<std::span<const uint8_t>> spans;
    for (auto& f : reply) spans.emplace_back(static_cast<const uint8_t*>(f.data()), f.size());
    auto parsed = parse_message(spans);
    ASSERT_TRUE(std::holds_alternative<ParsedMessage>(parsed));
    EXPECT_EQ(std::get<ParsedMessage>(parsed).header.type, MessageType::kError);
    EXPECT_NE(std::get<ParsedMessage>(parsed).body.value("reason", "").find("bad magic"),
              std::string::npos);
  }
  const WireMessage hello = encode_message(MessageType::kHello, 0, 0, 0, {{"slots", 1}});
  std::vector<zmq::const_buffer> bufs;
  for (const auto& f : hello.spans()) bufs.push_back(zmq::buffer(f.data(), f.size()));
  zmq::send_multipart(s, bufs);
  std::this_thread::sleep_for(std::chrono::seconds(6));  // receives TASKs, answers none
}

TEST(DistributedFaults, SilentClientIsDroppedInModelRegimeAndStopsGradientRegime) {
  TempDir tmp;
  std::thread peer;
  const RunResult m = run_distributed(
      tmp, "model", "tcp://127.0.0.1:*", 1,
      {"regime=model", "rounds=3", "partition.clients=4", "wait_seconds=1", "start_wait_seconds=1"},
      [&](const std::string& ep) { peer = std::thread(silent_peer, ep, true); });
  peer.join();
  EXPECT_EQ(m.server_code, 0) << m.err;
  // it said HELLO but never READY: the rounds begin without it after wait_seconds
  EXPECT_NE(m.err.find("not ready (their data loaded) after 1 s (start_wait_seconds): the "
                       "rounds begin without waiting for them"),
            std::string::npos)
      << m.err;
  EXPECT_NE(m.err.find("dropped a message from a peer: bad magic"), std::string::npos) << m.err;
  EXPECT_NE(m.err.find("continuing with the rest"), std::string::npos) << m.err;
  // still connected, so asked again each round until drop_after_missed_rounds (3) misses
  EXPECT_NE(m.err.find("missed 2 round(s) in a row; at 3 it gets no more tasks"), std::string::npos)
      << m.err;
  EXPECT_NE(m.err.find("missed 3 round(s) in a row; it gets no more tasks in this run"),
            std::string::npos)
      << m.err;
  EXPECT_EQ(m.hash.size(), 16u);

  const RunResult g =
      run_distributed(tmp, "gradient", "tcp://127.0.0.1:*", 1,
                      {"regime=gradient", "rounds=2", "partition.clients=4", "wait_seconds=1"},
                      [&](const std::string& ep) { peer = std::thread(silent_peer, ep, false); });
  peer.join();
  EXPECT_EQ(g.server_code, kExitRunFailed);
  EXPECT_NE(g.err.find("no update from client(s)"), std::string::npos) << g.err;
  EXPECT_NE(g.err.find("continue_without_missing"), std::string::npos) << g.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "res" / "gradient"));  // nothing half-written
}

void send_frames(zmq::socket_t& s, const WireMessage& m) {
  std::vector<zmq::const_buffer> bufs;
  for (const auto& f : m.spans()) bufs.push_back(zmq::buffer(f.data(), f.size()));
  zmq::send_multipart(s, bufs);
}

// A peer that says HELLO, reads until its WELCOME when `after_welcome`, and closes its socket:
// a process that died before the run started, or while it loaded its data.
void hello_and_leave(const std::string& ep, bool after_welcome) {
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 20000);
  s.connect(ep);
  send_frames(s, encode(HelloMsg{.slots = 1, .pid = 424242}));
  std::vector<zmq::message_t> frames;
  if (!after_welcome) {  // until the server has its HELLO
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return;
  }
  EXPECT_TRUE(zmq::recv_multipart(s, std::back_inserter(frames)));
  std::vector<std::span<const uint8_t>> spans;
  for (auto& f : frames) spans.emplace_back(static_cast<const uint8_t*>(f.data()), f.size());
  const auto parsed = parse_message(spans);
  ASSERT_TRUE(std::holds_alternative<ParsedMessage>(parsed));
  EXPECT_EQ(std::get<ParsedMessage>(parsed).header.type, MessageType::kWelcome);
}

// A process that said HELLO and closed before the run started gives its place up: the server
// sees its connection's end, and two processes that come later make the run (gradient regime,
// which needs every client each round: before, the dead process kept its place, the run waited
// wait_seconds for its READY and failed at round 1).
TEST(DistributedFaults, AProcessThatLeavesBeforeTheRunStartsFreesItsPlace) {
  TempDir tmp;
  const auto server =
      testing::spawn_server(tmp, "free", 2, {"regime=gradient", "rounds=3", "wait_seconds=60"});
  const std::string& ep = server.endpoint;
  hello_and_leave(ep, false);
  ASSERT_TRUE(testing::wait_for_text(
      tmp / "free.err",
      "the client process with pid 424242 closed its connection before the run started and did "
      "not come back within 2 s: its place is free (0 of 2 processes now)",
      10))
      << testing::slurp(tmp / "free.err");
  std::vector<pid_t> clients;
  for (int i = 0; i < 2; ++i)
    clients.push_back(testing::spawn_fedpar({"client", "--quiet", "--wait", "60", "--server", ep},
                                            tmp / fmt::format("c{}.out", i),
                                            tmp / fmt::format("c{}.err", i)));
  EXPECT_EQ(testing::wait_exit(server.pid, 60).value_or(-99), 0)
      << testing::slurp(tmp / "free.err");
  for (const pid_t c : clients) EXPECT_EQ(testing::wait_exit(c, 20).value_or(-99), 0);
  const auto rows = testing::jsonl(tmp / "res" / "free" / "metrics.jsonl");
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) EXPECT_EQ(row["received"], 4) << row.dump();  // every client
}

// A process that dies after its WELCOME, loading its data, is not waited for: its connection's
// end is seen within seconds, and the rounds begin without it (model averaging goes on without
// its virtual clients) instead of after wait_seconds (60 s) without its READY.
TEST(DistributedFaults, AProcessThatDiesBeforeItIsReadyIsNotWaitedFor) {
  TempDir tmp;
  std::thread peer;
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = run_distributed(
      tmp, "unready", "tcp://127.0.0.1:*", 1,
      {"regime=model", "rounds=3", "partition.clients=4", "wait_seconds=60"},
      [&](const std::string& ep) { peer = std::thread(hello_and_leave, ep, true); });
  peer.join();
  ASSERT_EQ(r.server_code, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30)) << r.err;
  EXPECT_NE(r.err.find("closed before it was ready and did not come back within 2 s (the process "
                       "died, or its network did): the rounds begin without waiting for it"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("1 client process(es) ready, their data loaded, after"), std::string::npos)
      << r.err;
  for (const auto& row : testing::jsonl(tmp / "res" / "unready" / "metrics.jsonl"))
    EXPECT_EQ(row["received"], 2) << row.dump();  // the living process's two clients
}

// A welcomed peer that lies: it floods the server with `garbage` bad messages, says HELLO, and
// answers each TASK for its clients with zeros claiming 10^15 samples (such an update once set
// the averaged model to zeros). Returns the reasons of the ERRORs it was sent.
std::vector<std::string> lying_peer(const std::string& ep, int garbage) {
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 8000);
  s.connect(ep);
  for (int i = 0; i < garbage; ++i) {
    std::vector<zmq::const_buffer> junk = {zmq::str_buffer("not a fedpar header")};
    zmq::send_multipart(s, junk);
  }
  send_frames(s, encode_message(MessageType::kHello, 0, 0, 0, {{"slots", 1}}));
  std::vector<std::string> errors;
  std::vector<uint32_t> mine;
  size_t num_params = 0;
  while (true) {
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(s, std::back_inserter(frames))) break;  // dropped: no more tasks
    std::vector<std::span<const uint8_t>> spans;
    for (auto& f : frames) spans.emplace_back(static_cast<const uint8_t*>(f.data()), f.size());
    auto parsed = parse_message(spans);
    if (!std::holds_alternative<ParsedMessage>(parsed)) continue;
    const ParsedMessage& m = std::get<ParsedMessage>(parsed);
    if (m.header.type == MessageType::kStop) break;
    if (m.header.type == MessageType::kError)
      errors.push_back(std::get<ErrorMsg>(decode_error(m)).reason);
    if (m.header.type == MessageType::kWelcome) {
      const WelcomeMsg w = std::get<WelcomeMsg>(decode_welcome(m));
      mine = w.clients;
      num_params = w.num_params;
      send_frames(s, encode_ready({0, m.header.run, 0}));
    }
    if (m.header.type != MessageType::kTask) continue;
    const TaskMsg t = std::get<TaskMsg>(decode_task(m));
    const std::vector<float> zeros(num_params, 0.0f);
    for (uint32_t c : t.clients)
      if (std::find(mine.begin(), mine.end(), c) != mine.end())
        send_frames(s, encode(UpdateMsg{.kind = t.kind,
                                        .num_samples = 1'000'000'000'000'000ull,
                                        .vectors = {std::span<const float>(zeros)}},
                              {c, m.header.run, m.header.round}));
  }
  return errors;
}

// The config grants slots, not the peer: a HELLO asking for a million (it once took 3 of 4
// virtual clients) is refused with the reason while the server still waits for its second
// process, and the two honest processes then host two clients each.
TEST(DistributedFaults, AHelloCannotTakeMoreSlotsThanTheConfigGrants) {
  TempDir tmp;
  std::string reason;
  pid_t second = -1;
  const RunResult r = run_distributed(
      tmp, "greedy", "tcp://127.0.0.1:*", 1, {"regime=model", "rounds=1", "partition.clients=4"},
      [&](const std::string& ep) {
        zmq::context_t ctx;
        zmq::socket_t s(ctx, zmq::socket_type::dealer);
        s.set(zmq::sockopt::linger, 0);
        s.set(zmq::sockopt::rcvtimeo, 10000);
        s.connect(ep);
        send_frames(s, encode(HelloMsg{.slots = HelloMsg::kMaxSlots, .pid = 1}));
        std::vector<zmq::message_t> frames;
        if (zmq::recv_multipart(s, std::back_inserter(frames))) {
          std::vector<std::span<const uint8_t>> spans;
          for (auto& f : frames)
            spans.emplace_back(static_cast<const uint8_t*>(f.data()), f.size());
          const auto parsed = parse_message(spans);
          if (const auto* m = std::get_if<ParsedMessage>(&parsed))
            if (const auto e = decode_error(*m); std::holds_alternative<ErrorMsg>(e))
              reason = std::get<ErrorMsg>(e).reason;
        }
        second = testing::spawn_fedpar({"client", "--quiet", "--server", ep}, tmp / "second.out",
                                       tmp / "second.err");
      });
  EXPECT_EQ(testing::wait_exit(second, 30).value_or(-99), 0);
  ASSERT_EQ(r.server_code, 0) << r.err;
  EXPECT_NE(reason.find("at most 1 slot(s) per process (max_slots)"), std::string::npos) << reason;
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res/greedy/summary.json"));
  ASSERT_EQ(summary["hosts"].size(), 2u);
  for (const auto& h : summary["hosts"]) EXPECT_EQ(h["clients"].size(), 2u);
}

// A bare ROUTER standing in for a server, and a real client (started with `flags`) that said
// HELLO to it; welcome() answers the client, exit() is its exit code and stderr.
class BareServer {
 public:
  BareServer(const TempDir& tmp, const std::vector<std::string>& flags) : tmp_(tmp) {
    router_.set(zmq::sockopt::rcvtimeo, 20000);
    router_.bind("tcp://127.0.0.1:*");
    std::vector<std::string> args = {"client", "--wait", "20", "--server",
                                     router_.get(zmq::sockopt::last_endpoint)};
    args.insert(args.end(), flags.begin(), flags.end());
    client_ = testing::spawn_fedpar(args, tmp / "c.out", tmp / "c.err");
    std::vector<zmq::message_t> hello;
    if (zmq::recv_multipart(router_, std::back_inserter(hello))) peer_ = hello[0].to_string();
  }
  bool heard_hello() const { return !peer_.empty(); }
  void welcome(const WireMessage& m) {
    router_.send(zmq::buffer(peer_), zmq::send_flags::sndmore);
    send_frames(router_, m);
  }
  std::pair<int, std::string> exit() {
    const int code = testing::wait_exit(client_, 30).value_or(-99);
    return {code, testing::slurp(tmp_ / "c.err")};
  }

 private:
  const TempDir& tmp_;
  zmq::context_t ctx_;
  zmq::socket_t router_{ctx_, zmq::socket_type::router};
  pid_t client_ = -1;
  std::string peer_;
};

// A client trusts no WELCOME blindly: a server (here a bare ROUTER) that names a sample past the
// end of the training set, or sends no shards, gets a client that exits with the reason.
TEST(DistributedFaults, AClientRefusesAWelcomeThatDoesNotFitItsData) {
  for (const bool with_shards : {true, false}) {
    TempDir tmp;
    BareServer server(tmp, {});
    ASSERT_TRUE(server.heard_hello());
    WelcomeMsg w{"[data]\nname = 'synthetic'\n[model]\nname = 'logreg'\n", {0}, {}, 610, "h"};
    if (with_shards) w.shards = {{0, 99999999}};
    WireMessage m = encode(w, {});
    if (!with_shards)  // the shards field gone from the body altogether
      m = encode_message(MessageType::kWelcome, 0, 0, 0,
                         {{"config", w.config_toml},
                          {"clients", {0}},
                          {"num_params", 610},
                          {"dataset_hash", "h"}});
    server.welcome(m);
    const auto [code, err] = server.exit();
    EXPECT_EQ(code, 2);
    EXPECT_NE(err.find(with_shards ? "sample 99999999 was asked for" : "WELCOME needs 'shards'"),
              std::string::npos)
        << err;
    EXPECT_EQ(err.find("internal error"), std::string::npos) << err;
  }
}

// A client whose frame limit (--max-frame-mib) is below what the run's TASKs need says so at the
// WELCOME, instead of later taking the dropped TASK for a silent server.
TEST(DistributedFaults, AClientWhoseFrameLimitIsTooSmallSaysSoAtTheWelcome) {
  TempDir tmp;
  BareServer server(tmp, {"--max-frame-mib", "2"});
  ASSERT_TRUE(server.heard_hello());
  // 200,000 values: 1.6 MB at 8 bytes a value, plus a body: more than 2 MiB
  server.welcome(encode(WelcomeMsg{"[data]\nname = 'synthetic'\n", {0}, {{0}}, 200000, "h"}, {}));
  const auto [code, err] = server.exit();
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("start the client with --max-frame-mib 3 or more"), std::string::npos) << err;
}

// The averaging weight is the manifest's n_k, never the peer's claim: the lying peer's updates
// are refused with the reason, its clients count as missing, and the run ends with the honest
// client's updates alone. Its flood of bad messages is logged as 20 lines and a count.
TEST(DistributedFaults, AWelcomedPeerCannotBuyWeightAndItsFloodIsCounted) {
  TempDir tmp;
  std::vector<std::string> errors;
  std::thread peer;
  const RunResult m = run_distributed(
      tmp, "lie", "tcp://127.0.0.1:*", 1,
      {"regime=model", "rounds=2", "partition.clients=4", "wait_seconds=2"},
      [&](const std::string& ep) { peer = std::thread([&, ep] { errors = lying_peer(ep, 50); }); });
  peer.join();
  ASSERT_EQ(m.server_code, 0) << m.err;
  EXPECT_TRUE(std::any_of(errors.begin(), errors.end(), [](const std::string& e) {
    return e.find("reports 1000000000000000 samples; its task covers") != std::string::npos;
  })) << "the peer was not told why its update was refused";
  std::ifstream in(tmp / "res" / "lie" / "metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const auto first = nlohmann::json::parse(line);
  EXPECT_EQ(first["received"], 2) << line;  // the honest process's two clients
  EXPECT_EQ(first["missing"].size(), 2u) << line;
  size_t logged = 0;
  for (size_t at = 0; (at = m.err.find("dropped a message from a peer", at)) != std::string::npos;
       ++at)
    ++logged;
  EXPECT_EQ(logged, 20u) << m.err;
  EXPECT_NE(m.err.find("more message(s) from peers"), std::string::npos) << m.err;
}

// A process that fell behind (client 0 takes 3.5 s a round, the deadline is 1 s) serves the
// newest round when it is free again, not the ones the server has ended: after round 1 it skips
// the TASKs of rounds 2 and 3 that wait in its queue and trains round 4, so the server refuses a
// late update for round 4, not for 2 or 3 (which it would, had the process worked through them).
// It stays in the run throughout (drop_after_missed_rounds is high), and the other process
// answers every round.
TEST(DistributedFaults, AProcessThatFellBehindSkipsTheRoundsTheServerEnded) {
  TempDir tmp;
  const RunResult r =
      run_distributed(tmp, "behind", "ipc://" + (tmp / "b").string(), 2,
                      {"regime=model", "rounds=8", "partition.clients=2", "wait_seconds=1",
                       "stragglers.delay_seconds=0:3.5", "drop_after_missed_rounds=100"});
  ASSERT_EQ(r.server_code, 0) << r.err;
  EXPECT_NE(r.err.find("an update for round 4 came after that round's deadline"), std::string::npos)
      << r.err;
  for (const char* stale : {"an update for round 2 came", "an update for round 3 came"})
    EXPECT_EQ(r.err.find(stale), std::string::npos) << stale << "\n" << r.err;
  for (const auto& row : testing::jsonl(tmp / "res" / "behind" / "metrics.jsonl"))
    EXPECT_EQ(row["received"], 1) << row.dump();  // client 1 every round, client 0 never in time
}

// Two client processes; once the server has logged round 2, one of them is killed (SIGKILL).
struct KilledClientRun : RunResult {
  double server_exit_seconds = 0;  // from the kill
};
KilledClientRun run_with_killed_client(const TempDir& tmp, const std::string& tag,
                                       std::vector<std::string> sets,
                                       const std::vector<std::string>& server_flags = {}) {
  sets.insert(sets.begin(), {"partition.clients=4", "wait_seconds=5"});
  auto args =
      testing::server_args(tmp, tag, tag, "ipc://" + (tmp / (tag + ".sock")).string(), 2, sets);
  args.insert(args.end(), server_flags.begin(), server_flags.end());
  const auto run = testing::start_run(tmp, tag, args, 2);
  testing::wait_for_round(tmp, tag, 2);
  kill(run.clients[1], SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  waitpid(run.clients[1], nullptr, 0);
  KilledClientRun r;
  r.server_code = testing::wait_exit(run.server, 120).value_or(-99);
  r.server_exit_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_EQ(testing::wait_exit(run.clients[0], 30).value_or(-99),
            r.server_code == 0 ? 0 : kExitEndedByServer)
      << "the surviving client did not exit as the run ended";
  r.out = testing::slurp(tmp / (tag + ".out"));
  r.err = testing::slurp(tmp / (tag + ".err"));
  return r;
}

// A run of `processes` client processes over tcp whose rounds take at least 50 ms (client 0
// waits), started and at its round 2.
testing::Started start_slow_run(const TempDir& tmp, const std::string& tag, int processes,
                                int rounds) {
  const auto run = testing::start_run(
      tmp, tag,
      testing::server_args(tmp, tag, tag, "tcp://127.0.0.1:*", processes,
                           {"rounds=" + std::to_string(rounds), "stragglers.delay_seconds=0:0.05"}),
      processes);
  testing::wait_for_round(tmp, tag, 2);
  return run;
}

// A server killed outright is noticed by its clients within seconds (the connection's end, or
// ZMTP heartbeats when its machine vanished), not after --wait's 60 s of silence.
TEST(DistributedFaults, ClientsNoticeADeadServerWithinSeconds) {
  TempDir tmp;
  const auto run = start_slow_run(tmp, "dead", 2, 1000);
  kill(run.server, SIGKILL);
  waitpid(run.server, nullptr, 0);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < run.clients.size(); ++i) {
    EXPECT_EQ(testing::wait_exit(run.clients[i], 30).value_or(-99), kExitRunFailed);
    const std::string err = testing::slurp(tmp / ("dead" + std::to_string(i) + ".cerr"));
    EXPECT_NE(err.find("lost the connection to the server at tcp://127.0.0.1:"), std::string::npos)
        << err;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
}

// A client started before its server (here: none ever comes) says after a few seconds that it
// waits and that nothing accepts its connections, then gives up at --wait with the reason; an
// endpoint without its scheme says how to write one.
TEST(DistributedFaults, AClientWithoutAServerSaysItWaitsAndABareHostPortSaysHowToWriteIt) {
  TempDir tmp;
  auto r = testing::run_fedpar("client --wait 4 --server tcp://127.0.0.1:1", tmp.path());
  EXPECT_EQ(r.code, kExitRunFailed) << r.err;
  EXPECT_NE(r.err.find("no answer yet from the server at tcp://127.0.0.1:1 (nothing accepts "
                       "connections there yet: is the server running, at that host and port?); "
                       "waiting up to 4 s (--wait)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("no answer from the server at tcp://127.0.0.1:1 within 4 s: nothing "
                       "accepts connections there yet"),
            std::string::npos)
      << r.err;
  for (const std::string endpoint : {"127.0.0.1:5999", "tcp://127.0.0.1"})  // no scheme, port
    testing::expect_refused(
        "client --server " + endpoint, tmp.path(), 2,
        "cannot connect to " + endpoint +
            ": Invalid argument (an endpoint is tcp://HOST:PORT or ipc://PATH)");
}

// While it waits for its WELCOME a client says how its connection stands: connected to a server
// that waits for its other processes, or connected to a port where no ZeroMQ peer answers (here
// a plain TCP listener), so a wrong port is told from a run that has not started.
TEST(DistributedFaults, AWaitingClientSaysWhetherAServerOrSomethingElseIsThere) {
  TempDir tmp;
  const auto server = testing::spawn_server(tmp, "wait", 2, {"wait_seconds=30"});
  const std::string& ep = server.endpoint;
  const pid_t first = testing::spawn_fedpar({"client", "--wait", "30", "--server", ep},
                                            tmp / "first.out", tmp / "first.err");
  EXPECT_TRUE(testing::wait_for_text(
      tmp / "first.err",
      "(connected to the server, which starts the run once all its client processes have said "
      "HELLO); waiting up to 30 s",
      10))
      << testing::slurp(tmp / "first.err");
  const pid_t second = testing::spawn_fedpar({"client", "--quiet", "--server", ep},
                                             tmp / "second.out", tmp / "second.err");
  EXPECT_EQ(testing::wait_exit(server.pid, 60).value_or(-99), 0)
      << testing::slurp(tmp / "wait.err");
  EXPECT_EQ(testing::wait_exit(first, 20).value_or(-99), 0);
  EXPECT_EQ(testing::wait_exit(second, 20).value_or(-99), 0);

  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);  // accepts, and never speaks ZMTP
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string other = fmt::format("tcp://127.0.0.1:{}", ntohs(a.sin_port));
  const auto r = testing::run_fedpar("client --wait 4 --server " + other, tmp.path());
  ::close(listener);
  EXPECT_EQ(r.code, kExitRunFailed) << r.err;
  EXPECT_NE(r.err.find(fmt::format("no answer from the server at {} within 4 s: connected, but "
                                   "what listens there has not completed a ZeroMQ handshake: is "
                                   "it a fedpar server's port?",
                                   other)),
            std::string::npos)
      << r.err;
}

// A server host with no address is said while the client waits (ZeroMQ retries the name as it
// does a server not there yet: a cluster's name may appear with its server). Where this machine's
// resolver cannot answer for a name (no DNS server reachable) the client cannot tell, and the
// test has nothing to check.
TEST(DistributedFaults, AServerHostWithNoAddressIsSaidWhileTheClientWaits) {
  TempDir tmp;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo("no-such-host.invalid", nullptr, nullptr, &found);
  if (found) ::freeaddrinfo(found);
  if (rc != EAI_NONAME && rc != EAI_NODATA && rc != EAI_FAIL)
    GTEST_SKIP() << "the resolver cannot say that no-such-host.invalid has no address: "
                 << ::gai_strerror(rc);
  const auto r =
      testing::run_fedpar("client --wait 4 --server tcp://no-such-host.invalid:5555", tmp.path());
  EXPECT_EQ(r.code, kExitRunFailed) << r.err;
  EXPECT_NE(r.err.find("no answer yet from the server at tcp://no-such-host.invalid:5555 (the "
                       "host name has no address (yet?): is it spelled right?)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("within 4 s: the host name has no address (yet?)"), std::string::npos)
      << r.err;
}

// A client started by hand hears how the run ended when it did not complete, says it and exits
// kExitEndedByServer: a server that gives up waiting for its processes before the run starts
// (before: "bad WELCOME"), and one stopped mid-run (before: exit 0 without a word).
TEST(DistributedFaults, AClientSaysWhyTheServerEndedTheRunAndExitsAccordingly) {
  TempDir tmp;
  const auto waiting = testing::spawn_server(tmp, "few", 2, {"start_wait_seconds=2"});
  const pid_t alone =
      testing::spawn_fedpar({"client", "--wait", "20", "--server", waiting.endpoint},
                            tmp / "alone.out", tmp / "alone.err");
  EXPECT_EQ(testing::wait_exit(waiting.pid, 30).value_or(-99), kExitRunFailed);
  EXPECT_EQ(testing::wait_exit(alone, 20).value_or(-99), kExitEndedByServer);
  EXPECT_NE(testing::slurp(tmp / "alone.err")
                .find("the server ended the run (failed): only 1 of 2 client processes said "
                      "HELLO within 2 s"),
            std::string::npos)
      << testing::slurp(tmp / "alone.err");

  const auto run =
      testing::start_run(tmp, "stopped",
                         testing::server_args(tmp, "stopped", "stopped", "tcp://127.0.0.1:*", 2,
                                              {"rounds=1000", "stragglers.delay_seconds=0:0.05"}),
                         1);
  const pid_t told = testing::spawn_fedpar({"client", "--wait", "20", "--server", run.endpoint},
                                           tmp / "told.out", tmp / "told.err");
  testing::wait_for_round(tmp, "stopped", 2);
  kill(run.server, SIGTERM);
  EXPECT_EQ(testing::wait_exit(run.server, 30).value_or(-99), 128 + SIGTERM);
  EXPECT_EQ(testing::wait_exit(told, 20).value_or(-99), kExitEndedByServer);
  EXPECT_NE(testing::slurp(tmp / "told.err")
                .find("the server ended the run (stopped): stopped by SIGTERM"),
            std::string::npos)
      << testing::slurp(tmp / "told.err");
  EXPECT_EQ(testing::wait_exit(run.clients[0], 20).value_or(-99), kExitEndedByServer);
  // --quiet (as under fedpar run): the server says it
  EXPECT_EQ(testing::slurp(tmp / "stopped0.cerr").find("ended the run"), std::string::npos);
}

// A tight round deadline (wait_seconds = 1, a straggler study) with processes started by hand:
// start_wait_seconds gives the start its own wait (one setting held both, so the run failed
// before its first round when the client came 3 s after the server).
TEST(DistributedFaults, TheStartWaitsStartWaitSecondsNotTheRoundsDeadline) {
  TempDir tmp;
  const auto server = testing::spawn_server(
      tmp, "late", 1, {"rounds=2", "wait_seconds=1", "start_wait_seconds=30"});
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const pid_t client = testing::spawn_fedpar({"client", "--server", server.endpoint},
                                             tmp / "late.cout", tmp / "late.cerr");
  EXPECT_EQ(testing::wait_exit(server.pid, 60).value_or(-99), 0)
      << testing::slurp(tmp / "late.err");
  EXPECT_EQ(testing::wait_exit(client, 20).value_or(-99), 0);
  // its default is the larger of wait_seconds and 60 s, not the round deadline
  Config c = make_run_config();
  c.set_all({"wait_seconds=1"});
  EXPECT_EQ(resolve_run_spec(c).start_wait_seconds, 60.0);
  c.set_all({"wait_seconds=90"});
  EXPECT_EQ(resolve_run_spec(c).start_wait_seconds, 90.0);
  // and the failure names the key
  const auto alone = testing::spawn_server(tmp, "alone", 1, {"start_wait_seconds=1"});
  EXPECT_EQ(testing::wait_exit(alone.pid, 30).value_or(-99), kExitRunFailed);
  EXPECT_NE(testing::slurp(tmp / "alone.err")
                .find("only 0 of 1 client processes said HELLO within 1 s (start_wait_seconds; "
                      "start them with"),
            std::string::npos)
      << testing::slurp(tmp / "alone.err");
}

// A client started by hand says how it ended on its side too: that the run completed, or that a
// stop signal ended it (exit 128 + it, as before).
TEST(DistributedFaults, AClientSaysItCompletedOrWasStopped) {
  TempDir tmp;
  auto server = testing::spawn_server(tmp, "done", 1, {"rounds=2"});
  pid_t client = testing::spawn_fedpar({"client", "--wait", "20", "--server", server.endpoint},
                                       tmp / "done.cout", tmp / "done.cerr");
  EXPECT_EQ(testing::wait_exit(server.pid, 30).value_or(-99), 0);
  EXPECT_EQ(testing::wait_exit(client, 20).value_or(-99), 0);
  EXPECT_NE(testing::slurp(tmp / "done.cerr").find(": the run completed"), std::string::npos)
      << testing::slurp(tmp / "done.cerr");

  server = testing::spawn_server(
      tmp, "long", 1, {"rounds=1000", "stragglers.delay_seconds=0:0.05", "wait_seconds=2"});
  client = testing::spawn_fedpar({"client", "--wait", "20", "--server", server.endpoint},
                                 tmp / "long.cout", tmp / "long.cerr");
  testing::wait_for_round(tmp, "long", 2);
  kill(client, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(client, &status, 0), client);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;  // a shell's 143
  EXPECT_NE(testing::slurp(tmp / "long.cerr").find(": stopped by SIGTERM"), std::string::npos)
      << testing::slurp(tmp / "long.cerr");
  kill(server.pid, SIGTERM);
  testing::wait_exit(server.pid, 30);
}

// A client process that cannot start after its WELCOME (here a device this build lacks) tells the
// server why, and the server's run fails at once with that reason, naming the process's clients,
// instead of waiting out round 1's deadline (wait_seconds = 60) for an update that never comes;
// also where the ring's rendezvous awaits the process's endpoint.
TEST(DistributedFaults, AClientThatCannotStartFailsTheRunAtOnceWithItsReason) {
  for (const std::string topology : {"parameter-server", "allreduce"}) {
    SCOPED_TRACE(topology);
    TempDir tmp;
    const auto run = testing::start_run(
        tmp, "run",
        testing::server_args(
            tmp, "run", "nodevice", "ipc://" + (tmp / "s").string(), 1,
            {"regime=gradient", "topology=" + topology, "partition.clients=1", "wait_seconds=60"}),
        1, {"--device", "tpu"});
    EXPECT_EQ(testing::wait_exit(run.server, 20).value_or(-99), kExitRunFailed)
        << testing::slurp(tmp / "run.err");
    EXPECT_NE(testing::slurp(tmp / "run.err")
                  .find("the process of virtual clients 0 could not start: unknown device 'tpu'"),
              std::string::npos)
        << testing::slurp(tmp / "run.err");
    EXPECT_NE(testing::wait_exit(run.clients[0], 20).value_or(0), 0);
  }
}

// A process that comes once the run is under way (its processes all said HELLO) is turned away
// with the reason, and the run goes on with the process it has.
TEST(DistributedFaults, AProcessThatComesLateIsTurnedAwayWithTheReason) {
  TempDir tmp;
  const auto run = start_slow_run(tmp, "late", 1, 60);
  const pid_t late = testing::spawn_fedpar({"client", "--wait", "20", "--server", run.endpoint},
                                           tmp / "late.cout", tmp / "late.cerr");
  EXPECT_EQ(testing::wait_exit(late, 30).value_or(-99), 2);
  const std::string why =
      "this run already has its 1 client process(es) (processes = 1), all "
      "there when it started; a process joins a run under way only to take the place of one the "
      "run lost";
  EXPECT_NE(testing::slurp(tmp / "late.cerr").find("the server refused us: " + why),
            std::string::npos)
      << testing::slurp(tmp / "late.cerr");
  EXPECT_EQ(testing::wait_exit(run.server, 60).value_or(-99), 0);
  EXPECT_EQ(testing::wait_exit(run.clients[0], 30).value_or(-99), 0);
  EXPECT_NE(testing::slurp(tmp / "late.err")
                .find("refused a client process started during the run: " + why),
            std::string::npos);
}

// A client process started during the run after one of 2 died (`killed` by SIGKILL after round
// 3): it returns with a `fedpar client` started during the run, and the server logged the swap.
struct Swapped {
  int server_code = -99, newcomer_code = -99;
  std::string log, newcomer_err;
};
Swapped swap_a_client(const TempDir& tmp, const std::string& tag, int processes,
                      const std::vector<std::string>& sets) {
  const auto run = testing::start_run(
      tmp, tag,
      testing::server_args(tmp, tag, tag, "ipc://" + (tmp / (tag + ".sock")).string(), processes,
                           sets),
      processes);
  testing::wait_for_round(tmp, tag, 3);
  kill(run.clients.back(), SIGKILL);
  waitpid(run.clients.back(), nullptr, 0);
  const pid_t newcomer =
      testing::spawn_fedpar({"client", "--wait", "30", "--server", run.endpoint},
                            tmp / (tag + "-new.cout"), tmp / (tag + "-new.cerr"));
  Swapped s;
  s.server_code = testing::wait_exit(run.server, 90).value_or(-99);
  s.newcomer_code = testing::wait_exit(newcomer, 30).value_or(-99);
  for (size_t i = 0; i + 1 < run.clients.size(); ++i)
    EXPECT_EQ(testing::wait_exit(run.clients[i], 30).value_or(-99), s.server_code == 0 ? 0 : 3);
  s.log = testing::slurp(tmp / (tag + ".err"));
  s.newcomer_err = testing::slurp(tmp / (tag + "-new.cerr"));
  return s;
}

// A client process started during the run takes the place of one that died: the dead one's
// clients, their shards and (SCAFFOLD) the c_i the server holds for them, and their tasks once it
// is ready, so the rounds after it have every update again; summary.json says after which round
// it joined. The only process of a run is replaced as well (the run is not taken for one whose
// processes were all dropped). Where the clients hold state the server cannot give a newcomer
// (error-feedback residuals), it is refused at once with the reason.
TEST(DistributedFaults, AProcessStartedDuringTheRunTakesADeadOnesPlace) {
  TempDir tmp;
  const Swapped two =
      swap_a_client(tmp, "swap", 2,
                    {"partition.clients=4", "wait_seconds=5", "regime=model", "rounds=16",
                     "local.algorithm=scaffold",
                     R"(stragglers.delay_seconds=["0:0.2", "1:0.2", "2:0.2", "3:0.2"])"});
  ASSERT_EQ(two.server_code, 0) << two.log;
  EXPECT_EQ(two.newcomer_code, 0) << two.newcomer_err;
  EXPECT_NE(two.log.find("takes the place of the lost one"), std::string::npos) << two.log;
  EXPECT_NE(two.log.find("the new process is ready, its data loaded"), std::string::npos)
      << two.log;
  EXPECT_EQ(two.log.find("READY carries 0 vectors"), std::string::npos) << two.log;
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res" / "swap" / "summary.json"));
  ASSERT_EQ(summary["hosts"].size(), 2u);
  // the newcomer holds the dead process's place in HELLO order, whichever that was
  const bool second = summary["hosts"][1].contains("joined_after_round");
  const auto& took = summary["hosts"][second ? 1 : 0];
  ASSERT_TRUE(took.contains("joined_after_round")) << summary.dump();
  EXPECT_FALSE(summary["hosts"][second ? 0 : 1].contains("joined_after_round"));
  const int joined = took["joined_after_round"].get<int>();
  for (const auto& h : summary["hosts"]) EXPECT_FALSE(h["lost"].get<bool>());
  EXPECT_GE(joined, 3);
  EXPECT_LT(joined, 14) << "joined too late to show its rounds";
  const auto rounds = testing::jsonl(tmp / "res" / "swap" / "metrics.jsonl");
  ASSERT_EQ(rounds.size(), 16u);
  int short_of_updates = 0;
  for (const auto& rec : rounds) short_of_updates += rec["received"].get<int>() < 4;
  EXPECT_GE(short_of_updates, 1);                          // the dead process's rounds
  for (size_t r = size_t(joined); r < rounds.size(); ++r)  // the round after it joined, on
    EXPECT_EQ(rounds[r]["received"].get<int>(), 4) << rounds[r].dump();
  // the process it replaced is on record too, with its pid (the one the log named)
  ASSERT_TRUE(summary.contains("replaced")) << summary.dump();
  ASSERT_EQ(summary["replaced"].size(), 1u);
  const auto& gone = summary["replaced"][0];
  EXPECT_TRUE(gone["lost"].get<bool>());
  EXPECT_EQ(gone["replaced_after_round"].get<int>(), joined);
  EXPECT_EQ(gone["clients"], took["clients"]);
  ASSERT_TRUE(gone.contains("pid") && took.contains("pid")) << summary.dump();
  EXPECT_NE(gone["pid"], took["pid"]);
  EXPECT_NE(two.log.find(fmt::format("a client process (pid {}) takes the place of the lost one "
                                     "(pid {})",
                                     took["pid"].get<int64_t>(), gone["pid"].get<int64_t>())),
            std::string::npos)
      << two.log;
  EXPECT_NE(testing::slurp(tmp / "res" / "swap" / "README.md")
                .find(fmt::format("took the place of a lost one (pid {}) after round {}",
                                  gone["pid"].get<int64_t>(), joined)),
            std::string::npos);

  const Swapped one =
      swap_a_client(tmp, "one", 1,
                    {"partition.clients=2", "wait_seconds=5", "regime=model", "rounds=12",
                     "drop_after_missed_rounds=1000", "stragglers.delay_seconds=0:0.2"});
  ASSERT_EQ(one.server_code, 0) << one.log;
  EXPECT_EQ(one.newcomer_code, 0) << one.newcomer_err;
  EXPECT_NE(one.log.find("takes the place of the lost one"), std::string::npos) << one.log;

  const Swapped ef =
      swap_a_client(tmp, "ef", 2,
                    {"partition.clients=4", "wait_seconds=5", "regime=model", "rounds=30",
                     "compression.uplink=topk", "compression.error_feedback=true",
                     "stragglers.delay_seconds=0:0.1"});
  EXPECT_EQ(ef.newcomer_code, 2);
  EXPECT_NE(ef.newcomer_err.find("a process joins a run under way only to take the place of one "
                                 "the run lost, which this run cannot do: its clients' "
                                 "error-feedback residuals went with the lost process"),
            std::string::npos)
      << ef.newcomer_err;
  EXPECT_EQ(ef.server_code, 0) << ef.log;
}

// Resident memory of a running process, in MiB.
double rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return -1;
}

// A client process holds the rows of the clients it hosts, not the dataset: on MNIST, four
// processes of two clients each (a quarter of the 179 MiB float training set apiece) grow by
// less than half that set over a client still waiting for its WELCOME.
TEST(ClientMemory, AProcessHoldsItsClientsRowsNotTheWholeDataset) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  const pid_t bare =
      testing::spawn_fedpar({"client", "--quiet", "--wait", "30", "--server", "tcp://127.0.0.1:9"},
                            tmp / "bare.out", tmp / "bare.err");
  const auto run = testing::start_run(
      tmp, "mem",
      testing::server_args(tmp, "mem", "mem", "tcp://127.0.0.1:*", 4,
                           {"data.name=mnist", "data.iid=false", "partition.clients=8",
                            "rounds=1000", "local.batch=50", "stragglers.delay_seconds=0:0.05"}),
      4);
  testing::wait_for_round(tmp, "mem", 3);
  const double base = rss_mib(bare), train_set = 60000.0 * 784 * 4 / (1 << 20);
  for (pid_t c : run.clients) {
    const double rss = rss_mib(c);
    EXPECT_GT(rss, 0) << "client " << c << " is not running";
    EXPECT_LT(rss - base, 0.5 * train_set) << "client RSS " << rss << " MiB, bare " << base;
  }
  for (pid_t p : run.clients) kill(p, SIGKILL), waitpid(p, nullptr, 0);
  kill(run.server, SIGKILL), waitpid(run.server, nullptr, 0);
  kill(bare, SIGKILL), waitpid(bare, nullptr, 0);
}

// A 2NN FedAvg run on MNIST under `fedpar run` (`config`: its TOML, named `name`), which must
// succeed; returns its metrics lines and summary.
struct MnistRun {
  std::vector<nlohmann::json> rows;
  nlohmann::json summary;
};
MnistRun mnist_run(const TempDir& tmp, const std::string& name, const std::string& config) {
  std::ofstream(tmp / (name + ".toml"))
      << "name = '" << name << "'\n"
      << config << "[data]\nname = 'mnist'\n[model]\nname = '2nn'\n";
  const auto r = testing::run_fedpar(
      "run " + (tmp / (name + ".toml")).string() + " --set results_dir=" + (tmp / "res").string(),
      tmp.path());
  EXPECT_EQ(r.code, 0) << r.err;
  const auto dir = tmp / "res" / name;
  if (r.code != 0) return {};
  return {testing::jsonl(dir / "metrics.jsonl"),
          nlohmann::json::parse(std::ifstream(dir / "summary.json"))};
}

// Scale on one machine: 64 client processes of the 2NN on MNIST (one client of about 940
// samples each) complete a FedAvg run under `fedpar run`, and every process reports its peak
// resident memory, each under 60 MiB (a process holds its client's rows, and loads CUDA only
// when asked to compute there), and the server stays under 150 MiB.
TEST(Scale, SixtyFourClientProcessesOnMnistCompleteARunInUnder60MiBEach) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  const auto [rows, summary] =
      mnist_run(tmp, "scale",
                "processes = 64\nrounds = 2\neval_every = 2\nwait_seconds = 300\n"
                "[partition]\nclients = 64\n[local]\nepochs = 1\nbatch = 50\n");
  ASSERT_EQ(rows.size(), 2u);
  const auto& processes = rows.back()["processes"];
  ASSERT_EQ(processes.size(), 64u);
  double peak = 0, least = 1e9;
  for (const auto& p : processes) {
    ASSERT_TRUE(p.contains("peak_rss_mib")) << p.dump();
    peak = std::max(peak, p["peak_rss_mib"].get<double>());
    least = std::min(least, p["peak_rss_mib"].get<double>());
  }
  // docs/reliability.md quotes them (scripts/test-evidence.sh)
  ASSERT_TRUE(summary.contains("server_peak_rss_mib")) << summary.dump();
  RecordProperty("client_peak_rss_mib", fmt::format("{:.1f} to {:.1f}", least, peak));
  RecordProperty("server_peak_rss_mib",
                 fmt::format("{:.1f}", summary["server_peak_rss_mib"].get<double>()));
  EXPECT_GT(peak, 1.0);
  EXPECT_LT(peak, 60.0) << "the largest client process's peak RSS, MiB";
  EXPECT_EQ(rows.back()["received"].get<int>(), 64);
  // the server holds the test set and the training labels, never the training features
  EXPECT_LT(summary["server_peak_rss_mib"].get<double>(), 150.0);
}

// 1,000 virtual clients with C = 0.1 (100 sampled a round) on 4 processes: the server, which
// keeps a manifest entry per client and the test set, peaks under 300 MiB.
TEST(Scale, AThousandVirtualClientsKeepTheServerUnder300MiB) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  const auto [rows, summary] =
      mnist_run(tmp, "k",
                "processes = 4\nrounds = 3\neval_every = 3\nfraction = 0.1\n"
                "[partition]\nclients = 1000\n[local]\nepochs = 1\nbatch = 10\n");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows.back()["participants"].get<int>(), 100);
  EXPECT_EQ(rows.back()["received"].get<int>(), 100);
  EXPECT_EQ(summary["clients"].get<int>(), 1000);
  ASSERT_TRUE(summary.contains("server_peak_rss_mib")) << summary.dump();
  EXPECT_LT(summary["server_peak_rss_mib"].get<double>(), 300.0);
  RecordProperty("server_peak_rss_mib",
                 fmt::format("{:.1f}", summary["server_peak_rss_mib"].get<double>()));
}

TEST(DistributedFaults, KilledClientModelRegimeFinishesWithTheRest) {
  TempDir tmp;
  // Rounds long enough (each client waits 0.3 s) that the kill lands mid-round, short enough for
  // the 5 s deadline under the sanitizers.
  const auto m =
      run_with_killed_client(tmp, "model",
                             {"regime=model", "rounds=12", "local.steps=200", "local.batch=full",
                              R"(stragglers.delay_seconds=["0:0.3", "1:0.3", "2:0.3", "3:0.3"])"});
  ASSERT_EQ(m.server_code, 0) << m.err;
  EXPECT_NE(m.err.find("continuing with the rest"), std::string::npos) << m.err;
  // killed mid-round, its connection's end is noticed; then the next TASKs find none
  EXPECT_NE(m.err.find("round 3: the connection of the process of virtual clients "),
            std::string::npos)
      << m.err;
  EXPECT_NE(m.err.find("closed and did not come back within 2 s (the process died, or its "
                       "network did): its answers are not waited for"),
            std::string::npos)
      << m.err;
  EXPECT_NE(m.err.find("missed 3 round(s) in a row; it gets no more tasks"), std::string::npos)
      << m.err;
  // Every round is logged; after the kill, rounds have 2 of 4 updates and name the missing ones,
  // and none waited for the 5 s deadline: the killed process's connection had ended, so no
  // answer was awaited from it (drop_after_missed_rounds = 3 then dropped the process).
  std::ifstream in(tmp / "res" / "model" / "metrics.jsonl");
  std::string line;
  int rounds = 0, partial = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);  // still valid JSON lines
    ++rounds;
    if (j["received"] == 2) {
      ++partial;
      EXPECT_EQ(j["missing"].size(), 2u);
      EXPECT_LT(j["wait_seconds"].get<double>(), 4.0) << j.dump();
      if (partial == 1)  // docs/distributed.md quotes it (scripts/test-evidence.sh)
        RecordProperty("first_partial_round_wait_seconds",
                       fmt::format("{:.2f}", j["wait_seconds"].get<double>()));
    }
  }
  EXPECT_EQ(rounds, 12);
  EXPECT_GE(partial, 1);
  EXPECT_NE(m.out.find("final model hash:"), std::string::npos);
  // the README says whose clients the run lost, as summary.json's hosts record it
  const auto summary =
      nlohmann::json::parse(testing::slurp(tmp / "res" / "model" / "summary.json"));
  std::vector<uint32_t> lost;
  for (const auto& h : summary["hosts"])
    if (h["lost"].get<bool>()) lost = h["clients"].get<std::vector<uint32_t>>();
  ASSERT_EQ(lost.size(), 2u) << summary.dump();
  EXPECT_NE(
      testing::slurp(tmp / "res" / "model" / "README.md")
          .find(fmt::format("virtual client(s) {}, {} were on a client process the run dropped",
                            lost[0], lost[1])),
      std::string::npos)
      << testing::slurp(tmp / "res" / "model" / "README.md");
}

TEST(DistributedFaults, KilledClientStopsGradientRegimeWithAClearError) {
  TempDir tmp;
  const auto g = run_with_killed_client(tmp, "gradient", {"regime=gradient", "rounds=100000"});
  EXPECT_EQ(g.server_code, kExitRunFailed);
  // at the end of the killed process's connection, not after the round's 5 s deadline
  EXPECT_LT(g.server_exit_seconds, 4.0) << g.err;
  RecordProperty("server_exit_seconds_after_the_kill",
                 fmt::format("{:.2f}", g.server_exit_seconds));
  EXPECT_NE(g.err.find("no update from client(s)"), std::string::npos) << g.err;
  EXPECT_NE(g.err.find("continue_without_missing = true"), std::string::npos) << g.err;
  // not finished, but the rounds before the kill are kept as a record
  EXPECT_FALSE(std::filesystem::exists(tmp / "res" / "gradient"));
  EXPECT_GE(testing::jsonl(tmp / "res" / "gradient.incomplete" / "metrics.jsonl").size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(tmp / "res" / "gradient.incomplete" / "checkpoint.bin"));
  // what suites and the equivalence experiment ask for: their own folder goes with a failed run
  const auto none = run_with_killed_client(tmp, "none", {"regime=gradient", "rounds=100000"},
                                           {"--no-incomplete"});
  EXPECT_EQ(none.server_code, kExitRunFailed);
  EXPECT_EQ(none.err.find("are kept in"), std::string::npos) << none.err;
  for (const auto& e : std::filesystem::directory_iterator(tmp / "res"))
    EXPECT_EQ(e.path().filename().string().find("none"), std::string::npos) << e.path();
}

// Async waits for no round, so no deadline notices a dead process: its clients' tasks stayed out
// and the run went on with half its clients while summary.json called every host fine. Each task
// unanswered for wait_seconds is sent again, and a process whose clients left
// drop_after_missed_rounds tasks each unanswered in a row is dropped, said in the log and
// summary.json.
TEST(DistributedFaults, KilledClientAsyncRegimeIsDroppedAndTheRestGoOn) {
  TempDir tmp;
  const auto a = run_with_killed_client(
      tmp, "async",
      {"regime=async", "rounds=60", "wait_seconds=1", "drop_after_missed_rounds=2",
       R"(stragglers.delay_seconds=["0:0.05", "1:0.05", "2:0.05", "3:0.05"])"});
  ASSERT_EQ(a.server_code, 0) << a.err;
  EXPECT_NE(a.err.find("left 4 task(s) of its 2 client(s) unanswered in a row, each for "
                       "wait_seconds = 1 s (drop_after_missed_rounds = 2 each): it died, hangs, is "
                       "too slow, or its messages were lost; it gets no more tasks in this run"),
            std::string::npos)
      << a.err;
  const auto summary =
      nlohmann::json::parse(testing::slurp(tmp / "res" / "async" / "summary.json"));
  int lost = 0;
  for (const auto& h : summary["hosts"]) lost += h["lost"].get<bool>();
  EXPECT_EQ(lost, 1) << summary.dump();
  EXPECT_EQ(testing::jsonl(tmp / "res" / "async" / "metrics.jsonl").size(), 60u);
  // async rounds record no `missing` for the README to point to
  const std::string readme = testing::slurp(tmp / "res" / "async" / "README.md");
  EXPECT_NE(readme.find("got no tasks after; the other clients' updates filled the rounds"),
            std::string::npos)
      << readme;
}

// An async run stopped mid-way keeps its rounds without a checkpoint, and says why it has none:
// async cannot be checkpointed (it once advised checkpoint_every, which async refuses).
TEST(DistributedFaults, AStoppedAsyncRunSaysWhyItKeptNoCheckpoint) {
  TempDir tmp;
  const auto run = testing::start_run(
      tmp, "stopped",
      testing::server_args(
          tmp, "stopped", "stopped", "ipc://" + (tmp / "s").string(), 2,
          {"regime=async", "rounds=100000",
           R"(stragglers.delay_seconds=["0:0.01", "1:0.01", "2:0.01", "3:0.01"])"}),
      2);
  testing::wait_for_round(tmp, "stopped", 2);
  kill(run.server, SIGINT);
  EXPECT_EQ(testing::wait_exit(run.server, 30).value_or(-99), 128 + SIGINT);
  for (pid_t p : run.clients) testing::wait_exit(p, 30);
  const std::string err = testing::slurp(tmp / "stopped.err");
  EXPECT_NE(err.find("(no checkpoint, so it cannot be resumed: the async topology keeps state in "
                     "its workers)"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("checkpoint_every = N"), std::string::npos) << err;
  const std::string readme = testing::slurp(tmp / "res" / "stopped.incomplete" / "README.md");
  EXPECT_NE(readme.find("- no checkpoint, so it cannot be continued: run it again (this run "
                        "cannot be checkpointed: the async topology keeps state in its workers)"),
            std::string::npos)
      << readme;
}

// Your own CSV, partitioned one client per user: the log names what was read (a user id read as
// the label would show as its count of classes and "no user column"), and without a test file the
// run records no test accuracy (it once printed and summarised 0.00%); with eval_train it
// follows the model's loss on the training set, in its metrics, README and a plot.
TEST(CsvRun, ARunSaysWhatItReadAndRecordsNoAccuracyWithoutATestFile) {
  TempDir tmp;
  {
    std::ofstream csv(tmp / "train.csv");
    csv << "x1,x2,label,user\n";
    for (int i = 0; i < 60; ++i)
      csv << fmt::format("{},{},{},{}\n", (i % 7) * 0.1, (i % 5) * 0.2, i % 2, i % 3);
  }
  // the CSV, one client per user, into res/NAME
  const auto csv_run = [&](const std::string& name, const std::string& sets) {
    return testing::run_fedpar(
        fmt::format("run {}/experiments/fedavg-mnist-2nn.toml --set data.name=csv --set "
                    "data.csv_train={} --set partition.scheme=natural --set partition.clients=0 "
                    "--set model.name=logreg --set local.batch=10 --set results_dir={} --set "
                    "name={} {}",
                    FEDPAR_SOURCE_DIR, (tmp / "train.csv").string(), (tmp / "res").string(), name,
                    sets),
        tmp.path());
  };
  const auto r = csv_run("csv", "--set rounds=2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("server: data: csv:train.csv: 60 training samples of 2 features, 2 "
                       "classes, 3 users; no test set"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("data.csv_test is not set"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(", test accuracy"), std::string::npos) << r.err;  // in no round line
  EXPECT_EQ(r.out.find("test accuracy"), std::string::npos) << r.out;
  for (const auto& round : testing::jsonl(tmp / "res" / "csv" / "metrics.jsonl"))
    EXPECT_FALSE(round.contains("test_accuracy")) << round.dump();

  // with eval_train the model's loss on the training set is followed instead, and drawn
  const auto tr = csv_run("train", "--set rounds=5 --set eval_train=true");
  ASSERT_EQ(tr.code, 0) << tr.err;
  const auto rounds = testing::jsonl(tmp / "res" / "train" / "metrics.jsonl");
  ASSERT_EQ(rounds.size(), 5u);
  for (const auto& round : rounds) {
    EXPECT_FALSE(round.contains("test_accuracy")) << round.dump();
    EXPECT_TRUE(round.contains("global_train_loss")) << round.dump();
  }
  EXPECT_TRUE(
      std::filesystem::exists(tmp / "res" / "train" / "plots" / "train-loss-vs-round.svg.dat"));
  EXPECT_FALSE(
      std::filesystem::exists(tmp / "res" / "train" / "plots" / "accuracy-vs-round.svg.dat"));
  const std::string readme = testing::slurp(tmp / "res" / "train" / "README.md");
  EXPECT_NE(readme.find(fmt::format("the model on the whole training set: loss {:.4f}",
                                    rounds.back()["global_train_loss"].get<double>())),
            std::string::npos)
      << readme;
  EXPECT_NE(readme.find("plots/train-loss-vs-round.svg"), std::string::npos) << readme;

  // with eval_clients, each user's accuracy on its own rows, in its metrics, README and a plot;
  // compare, which keys runs on their test evaluations, says where they are instead
  const auto cl = csv_run("clients", "--set rounds=5 --set eval_clients=true");
  ASSERT_EQ(cl.code, 0) << cl.err;
  for (const auto& round : testing::jsonl(tmp / "res" / "clients" / "metrics.jsonl")) {
    EXPECT_FALSE(round.contains("test_accuracy")) << round.dump();
    ASSERT_TRUE(round.contains("client_accuracy")) << round.dump();
    EXPECT_EQ(round["client_accuracy"].size(), 3u) << round.dump();  // one per user
  }
  EXPECT_NE(testing::slurp(tmp / "res" / "clients" / "README.md")
                .find("the model on each client's own shard at round 5 (`eval_clients`, over 3 "
                      "clients)"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(tmp / "res" / "clients" / "plots" /
                                      "client-accuracy-vs-round.svg.dat"));
  testing::expect_refused("compare --metric client-worst10 " + (tmp / "res" / "clients").string() +
                              " --out " + (tmp / "cmp").string(),
                          tmp.path(), 2, "an eval_clients run's clients' accuracy");
}

}  // namespace
}  // namespace fedpar
