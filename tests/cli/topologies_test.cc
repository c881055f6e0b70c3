// The data-parallel topologies and asynchronous SGD as real processes over ZeroMQ: `master` and
// `allreduce` train the same model as `parameter-server` under full batch; the ring's traffic
// skips the server; a replica that drifts and a worker that dies stop the run with a clear error
// (no hang); an async run is reproduced bit for bit from its log (compressed links too), and a
// staleness bound rejects.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/check.h"
#include "core/safetensors.h"
#include "tests/util/process.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::jsonl;
using testing::relative_distance;
using testing::TempDir;

// `fedpar run` of a small synthetic-data run with `sets`; the results land in tmp/res/<name>.
testing::CliRun run(const TempDir& tmp, const std::string& name, const std::string& sets) {
  std::ofstream(tmp / "run.toml") << "seed = 3\n[data]\nname = 'synthetic'\niid = true\n"
                                     "[model]\nname = 'mlp'\nhidden = [32]\n";
  return testing::run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                                 (tmp / "res").string() + " --set name=" + name + " " + sets,
                             tmp.path());
}

std::vector<float> final_params(const TempDir& tmp, const std::string& name) {
  return testing::final_params(tmp / "res" / name);
}

TEST(Topologies, MasterAndAllReduceTrainWhatTheParameterServerTrainsUnderFullBatch) {
  TempDir tmp;
  // 4 clients on 2 processes: a ring rank and a master's worker process each serve two shards.
  const std::string common =
      "--set regime=gradient --set rounds=8 --set processes=2 --set partition.clients=4 "
      "--set sgd.batch=full --set optimizer.lr=0.5 --set allreduce.hash_every=2";
  for (const char* t : {"parameter-server", "master", "allreduce"}) {
    const auto r = run(tmp, t, common + " --set topology=" + t);
    ASSERT_EQ(r.code, 0) << t << ": " << r.err;
  }
  const auto ps = final_params(tmp, "parameter-server");
  const double master = relative_distance(final_params(tmp, "master"), ps);
  const double ring = relative_distance(final_params(tmp, "allreduce"), ps);
  // The same update in a different float summation order: rounding apart, nothing more. (A wrong
  // weight, a missing slice or a stale replica moves the model by 1e-2 or more.)
  EXPECT_LT(master, 1e-5);
  EXPECT_LT(ring, 1e-5);
  RecordProperty("master_vs_ps", fmt::format("{:.3g}", master));
  RecordProperty("allreduce_vs_ps", fmt::format("{:.3g}", ring));
  // Each replica was checked every 2 rounds, and the ring moved 2(N-1)/N of the gradient per
  // worker while the server saw only reports: no gradient passes through it.
  const auto rounds = jsonl(tmp / "res" / "allreduce" / "metrics.jsonl");
  const size_t model_bytes = ps.size() * sizeof(float);
  ASSERT_EQ(rounds.size(), 8u);
  for (const auto& rec : rounds) {
    EXPECT_EQ(rec["replicas_checked"].get<bool>(), rec["round"].get<int>() % 2 == 0);
    for (const auto& w : rec["workers"]) {
      const double ring_bytes = w["ring_bytes_sent"].get<double>();
      EXPECT_NEAR(ring_bytes, model_bytes * 2.0 * (2 - 1) / 2, 64.0);  // N = 2, plus tag frames
    }
    // the replica rank 0 sends for an evaluation is no step's traffic: the MB leave it out
    if (rec.contains("test_accuracy"))
      EXPECT_EQ(rec["diagnostic_bytes_up"].get<size_t>(), model_bytes) << rec;
    else
      EXPECT_FALSE(rec.contains("diagnostic_bytes_up")) << rec;
    if (rec["round"].get<int>() > 1 && !rec.contains("test_accuracy")) {
      for (const auto& p : rec["processes"])
        EXPECT_LT(p["bytes_down"].get<double>() + p["bytes_up"].get<double>(), 2048);
    }
  }
  // The master sent the model to both processes and got 4 gradients back: N times a worker's.
  size_t training_samples = 0;
  std::ifstream in(tmp / "res" / "master" / "manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  for (const auto& c : manifest["clients"]) training_samples += c["indices"].size();
  for (const auto& rec : jsonl(tmp / "res" / "master" / "metrics.jsonl")) {
    EXPECT_GE(rec["server_bytes_received"].get<double>(), 4.0 * model_bytes);
    EXPECT_GE(rec["server_bytes_sent"].get<double>(), 2.0 * model_bytes);
    EXPECT_EQ(rec["batch"].get<size_t>(), training_samples);  // full batch: every slice came
  }
}

TEST(Topologies, AllReduceWorkersOnEveryInterfaceAreNamedByTheirAddress) {
  TempDir tmp;
  // As on several hosts: each worker listens on 0.0.0.0; the server tells its neighbour the
  // address the worker's own connection came from (127.0.0.1 here).
  const auto r =
      run(tmp, "any",
          "--set regime=gradient --set topology=allreduce --set rounds=3 --set processes=3 "
          "--set partition.clients=3 --set allreduce.bind=tcp://0.0.0.0:*");
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch ring;
  ASSERT_TRUE(std::regex_search(r.err, ring, std::regex("ring of 3 workers formed: (.*)")))
      << r.err;
  EXPECT_EQ(std::regex_replace(ring[1].str(), std::regex("[0-9]+"), "N"),
            "tcp://N.N.N.N:N -> tcp://N.N.N.N:N -> tcp://N.N.N.N:N");
  EXPECT_EQ(ring[1].str().find("0.0.0.0"), std::string::npos) << ring[1];
  EXPECT_NE(ring[1].str().find("tcp://127.0.0.1:"), std::string::npos) << ring[1];
}

TEST(Topologies, AllReduceStopsLoudlyWhenReplicasDrift) {
  TempDir tmp;
  // Rank 1 flips one bit of its replica after round 1; the check at round 2 must name it.
  const auto r = run(
      tmp, "drift",
      "--set regime=gradient --set topology=allreduce --set rounds=6 --set processes=3 "
      "--set partition.clients=3 --set allreduce.hash_every=2 --set allreduce.fault_flip_rank=1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("round 2: the replicas drifted apart"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(worker(s) 1)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "res" / "drift"))
      << "a failed run leaves no results folder";
}

// A server of an allreduce run of 3 worker processes on synthetic data whose rounds are slowed
// by a fixed delay, so a kill lands mid-run; the ring deadline is 1 s.
pid_t slowed_allreduce_server(const TempDir& tmp, int rounds, std::vector<std::string> sets = {}) {
  std::vector<std::string> args = {"server", "--endpoint-file", (tmp / "ep").string()};
  sets.insert(sets.begin(),
              {"bind=tcp://127.0.0.1:*", "results_dir=" + (tmp / "res").string(), "name=ring",
               "data.name=synthetic", "model.name=logreg", "regime=gradient", "topology=allreduce",
               fmt::format("rounds={}", rounds), "processes=3", "partition.clients=3",
               "allreduce.deadline_seconds=1", "wait_seconds=60",
               "stragglers.delay_seconds=0:0.02,1:0.02,2:0.02"});
  for (const auto& kv : sets) args.insert(args.end(), {"--set", kv});
  return testing::spawn_fedpar(args, tmp / "s.out", tmp / "s.err");
}

// Its three workers, the second SIGKILLed once the server logged round 5; the server's exit.
testing::KilledMidRun kill_a_worker(const TempDir& tmp, pid_t server, std::vector<pid_t>& workers) {
  const std::string ep = testing::wait_for_file(tmp / "ep", 20);
  if (ep.empty()) return {};
  workers = testing::spawn_clients(3, ep, tmp.path());
  return testing::kill_mid_run(server, tmp / "s.err", "round 5/", workers[1]);
}

TEST(Topologies, AllReduceWorkerDyingMidRunStopsTheRingWithinTheDeadline) {
  TempDir tmp;
  std::vector<pid_t> workers;
  const auto k = kill_a_worker(tmp, slowed_allreduce_server(tmp, 100000), workers);
  ASSERT_TRUE(k.marker_seen) << testing::slurp(tmp / "s.err");
  ASSERT_TRUE(k.code.has_value()) << "the server hung after a worker died";
  EXPECT_NE(*k.code, 0);
  EXPECT_LT(k.seconds, 10.0)
      << "well inside wait_seconds (60): the survivors reported the ring failure";
  const std::string err = testing::slurp(tmp / "s.err");
  // A neighbour's ring receive timed out ("worker k failed: ring: ... did it die?"), or the dead
  // worker had finished its ring step and the server missed only its report ("... did it die?").
  EXPECT_NE(err.find("did it die?"), std::string::npos) << err;
  // the dead one is named by its pid, whoever's ERROR came first
  EXPECT_NE(err.find(fmt::format(" (pid {})", workers[1])), std::string::npos) << err;
  // a survivor whose ring failed exits as a run that could not go on (it once exited 2, the code
  // of bad input); one the server stopped first, as told
  for (int i : {0, 2}) {
    const auto code = testing::wait_exit(workers[size_t(i)], 20);
    ASSERT_TRUE(code.has_value()) << "survivor " << i << " hung";
    EXPECT_TRUE(*code == kExitRunFailed || *code == kExitEndedByServer)
        << "survivor " << i << " exited " << *code;
  }
  testing::wait_exit(workers[1], 1);
}

// allreduce.elastic: the two survivors redo the broken round in a ring re-formed without the
// dead worker and finish the run. Every round is recorded once, the replicas are checked
// identical every round (a survivor that kept its step of the broken round would drift), and
// from the re-formed ring on the rounds average the survivors' two clients.
TEST(Topologies, AnElasticRingReFormsWithoutADeadWorkerAndFinishes) {
  TempDir tmp;
  const int rounds = 40;
  std::vector<pid_t> workers;
  const auto k = kill_a_worker(
      tmp,
      slowed_allreduce_server(tmp, rounds, {"allreduce.elastic=true", "allreduce.hash_every=1"}),
      workers);
  ASSERT_TRUE(k.marker_seen) << testing::slurp(tmp / "s.err");
  ASSERT_TRUE(k.code.has_value()) << "the server hung after a worker died";
  const std::string err = testing::slurp(tmp / "s.err");
  ASSERT_EQ(*k.code, 0) << err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      err, m,
      std::regex(R"(round (\d+): worker\(s\) \d+ did not answer \(dead\?\); re-forming )"
                 R"(the ring with the other 2)")))
      << err;
  const int reformed = std::stoi(m[1]);  // the round redone by the re-formed ring
  EXPECT_GE(reformed, 5);
  const auto lines = jsonl(tmp / "res" / "ring" / "metrics.jsonl");
  ASSERT_EQ(lines.size(), size_t(rounds));
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["round"].get<int>(), int(i) + 1);
    EXPECT_TRUE(lines[i]["replicas_checked"].get<bool>());
    const size_t workers_in_round = lines[i]["workers"].size();
    EXPECT_EQ(workers_in_round, int(i) + 1 < reformed ? 3u : 2u) << "round " << i + 1;
    EXPECT_EQ(lines[i]["participants"].get<size_t>(), workers_in_round);  // a client each
  }
  for (int i : {0, 2}) EXPECT_EQ(testing::wait_exit(workers[size_t(i)], 20).value_or(-99), 0);
  testing::wait_exit(workers[1], 1);
}

TEST(Async, ReplayReproducesTheRunBitForBitFromItsLog) {
  TempDir tmp;
  // Client 0 computes 5x slower and waits 100 ms before each update, the others 10 ms: they apply
  // several meanwhile, however slow the machine (at 50 ms a loaded machine once let it keep up).
  const auto r =
      run(tmp, "async",
          "--set regime=async --set rounds=20 --set processes=3 --set partition.clients=3 "
          "--set sgd.batch=20 --set optimizer.lr=0.1 --set "
          "stragglers.delay_seconds=0:0.1,1:0.01,2:0.01 "
          "--set stragglers.slowdown=0:5");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto log = jsonl(tmp / "res" / "async" / "updates.jsonl");
  ASSERT_GE(log.size(), 60u);
  uint64_t max_tau = 0;
  int straggler_updates = 0;
  for (const auto& e : log) {
    EXPECT_TRUE(e["applied"].get<bool>());
    if (e["client"] == 0)
      max_tau = std::max(max_tau, e["staleness"].get<uint64_t>()), ++straggler_updates;
  }
  EXPECT_GE(max_tau, 2u) << "the straggler's updates arrive stale";
  EXPECT_LT(straggler_updates * 3, int(log.size())) << "and it sends fewer of them";
  const auto rec = jsonl(tmp / "res" / "async" / "metrics.jsonl");
  ASSERT_EQ(rec.size(), 20u);
  EXPECT_EQ(rec.back()["model_version"].get<int>(), 60);
  // the run's plot of its staleness by round: the mean's block, then the max's, a line a round
  const std::string dat =
      testing::slurp(tmp / "res" / "async" / "plots" / "staleness-vs-round.svg.dat");
  ASSERT_NE(dat.find("# max"), std::string::npos) << dat;
  const std::string max_block = dat.substr(dat.find("# max"));
  for (const auto& round : rec)
    EXPECT_NE(max_block.find(fmt::format("\n{} {}\n", round["round"].get<int>(),
                                         round["staleness_max"].get<int>())),
              std::string::npos)
        << dat;
  const auto replay = testing::run_fedpar("replay " + (tmp / "res" / "async").string(), tmp.path());
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("matches"), std::string::npos) << replay.out;
  // A log that lies fails the replay: swap the batch draws of two applied updates that differ
  // (two clients' first updates may share draw 0, and swapping those changes nothing).
  size_t i = 0;
  while (i + 1 < log.size() && log[i]["draw"] == log[i + 1]["draw"]) ++i;
  ASSERT_LT(i + 1, log.size()) << "every update has the same draw";
  std::ofstream bad(tmp / "res" / "async" / "updates.jsonl");
  auto edited = log;
  std::swap(edited[i]["draw"], edited[i + 1]["draw"]);
  for (auto e : edited) bad << e.dump() << "\n";
  bad.close();
  const auto lied = testing::run_fedpar("replay " + (tmp / "res" / "async").string(), tmp.path());
  EXPECT_EQ(lied.code, 1) << lied.out << lied.err;
  EXPECT_NE(lied.out.find("DIFFERS"), std::string::npos) << lied.out;
  // A damaged log is said, with its line: a blank line (an editor's) is no damage; a line cut
  // off is not JSON (it was an "internal error" at line 1); a log short of whole lines says so.
  const auto replay_of = [&](const std::vector<std::string>& lines) {
    std::ofstream f(tmp / "res" / "async" / "updates.jsonl");
    for (const auto& l : lines) f << l << "\n";
    f.close();
    return testing::run_fedpar("replay " + (tmp / "res" / "async").string(), tmp.path());
  };
  std::vector<std::string> lines;
  for (const auto& e : log) lines.push_back(e.dump());
  auto blank = lines;
  blank.push_back("");
  const auto with_blank = replay_of(blank);
  EXPECT_EQ(with_blank.code, 0) << with_blank.out << with_blank.err;
  auto cut = lines;
  cut[28] = cut[28].substr(0, 20);
  const auto cut_off = replay_of(cut);
  EXPECT_EQ(cut_off.code, 2) << cut_off.out << cut_off.err;
  EXPECT_NE(cut_off.err.find("updates.jsonl line 29: not JSON"), std::string::npos) << cut_off.err;
  auto missing_field = lines;
  missing_field[4] = R"({"seq": 4})";
  const auto no_field = replay_of(missing_field);
  EXPECT_EQ(no_field.code, 2) << no_field.out << no_field.err;
  EXPECT_NE(no_field.err.find("updates.jsonl line 5: "), std::string::npos) << no_field.err;
  EXPECT_EQ(no_field.err.find("internal error"), std::string::npos) << no_field.err;
  const auto short_log = replay_of({lines.begin(), lines.end() - 3});
  EXPECT_EQ(short_log.code, 1) << short_log.out << short_log.err;
  EXPECT_NE(short_log.out.find("updates.jsonl has 57 applied updates where the run's rounds "
                               "applied 60: the log is short"),
            std::string::npos)
      << short_log.out;
  // a run that diverged kept the updates of its unfinished round: its log has more than its
  // finished rounds applied, and replays (the count once failed it as "too long")
  const auto diverged = run(tmp, "diverged",
                            "--set regime=async --set rounds=20 --set processes=3 --set "
                            "partition.clients=3 --set sgd.batch=20 --set optimizer.lr=1e20");
  ASSERT_EQ(diverged.code, kExitDiverged) << diverged.err;
  const auto again =
      testing::run_fedpar("replay " + (tmp / "res" / "diverged").string(), tmp.path());
  EXPECT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("matches"), std::string::npos) << again.out;
}

// One process serving two clients one after another, 0.6 s each, wait_seconds 1: the second's
// task waits 1.2 s for its answer, yet its process is heard at 0.6. Timed per client, every such
// task expired and was sent again, and its answers always came late (the client starved); timed
// per process, none is sent again and both clients' updates are applied.
TEST(Async, ClientsSharingAProcessAreNotTakenForLostWhileItServesTheOther) {
  TempDir tmp;
  const auto r = run(tmp, "shared",
                     "--set regime=async --set rounds=4 --set processes=1 --set "
                     "partition.clients=2 --set sgd.batch=20 --set wait_seconds=1 --set "
                     "drop_after_missed_rounds=100 --set stragglers.delay_seconds=0:0.6,1:0.6");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const auto& rec : jsonl(tmp / "res" / "shared" / "metrics.jsonl"))
    EXPECT_TRUE(rec["tasks_resent"].empty()) << rec.dump();
  std::map<uint32_t, int> applied;
  for (const auto& u : jsonl(tmp / "res" / "shared" / "updates.jsonl"))
    applied[u["client"].get<uint32_t>()] += u["applied"].get<bool>();
  EXPECT_GE(applied[0], 3);
  EXPECT_GE(applied[1], 3);
}

TEST(Async, StalenessBoundRejectsAndLogsStaleUpdates) {
  TempDir tmp;
  const auto r =
      run(tmp, "bounded",
          "--set regime=async --set rounds=20 --set processes=3 --set partition.clients=3 "
          "--set sgd.batch=20 --set async.staleness_bound=1 --set async.staleness_lr=true "
          "--set stragglers.delay_seconds=0:0.1,1:0.01,2:0.01 --set stragglers.slowdown=0:5");
  ASSERT_EQ(r.code, 0) << r.err;
  int rejected = 0, applied = 0;
  uint64_t client0_max = 0;
  for (const auto& e : jsonl(tmp / "res" / "bounded" / "updates.jsonl")) {
    const uint64_t tau = e["staleness"].get<uint64_t>();
    applied += e["applied"].get<bool>();
    if (e["client"] == 0) client0_max = std::max(client0_max, tau);
    EXPECT_EQ(e["applied"].get<bool>(), tau <= 1) << e.dump();
    if (e["applied"].get<bool>()) {
      EXPECT_FLOAT_EQ(e["lr"].get<float>(), 0.1f / float(std::max<uint64_t>(1, tau)));
    }
    rejected += !e["applied"].get<bool>();
  }
  EXPECT_GT(rejected, 0);
  EXPECT_NE(r.err.find("rejected client 0's update: staleness"), std::string::npos) << r.err;
  // a round's processes[].tasks are the tasks sent to each in it: every client's first in round
  // 1 (their bytes were in no round), then one for each update taken, applied or rejected (each
  // process was said to get 1 task a round whatever it got)
  int logged = 0;
  for (const auto& rec : jsonl(tmp / "res" / "bounded" / "metrics.jsonl")) {
    uint64_t tasks = 0;
    for (const auto& p : rec["processes"]) {
      tasks += p["tasks"].get<uint64_t>();
      EXPECT_EQ(p["tasks"].get<uint64_t>() > 0, p["bytes_down"].get<uint64_t>() > 0) << rec;
    }
    const uint64_t taken =
        rec["updates_applied"].get<uint64_t>() + rec["updates_rejected"].get<uint64_t>();
    EXPECT_EQ(tasks, taken + (rec["round"] == 1 ? 3 : 0)) << rec;
    logged += int(taken);
  }
  EXPECT_EQ(logged, applied + rejected);
  // the README counts them, and names the straggler among the stalest (the rounds' staleness
  // counts applied updates, so its rejected ones showed nowhere but the log)
  const std::string readme = testing::slurp(tmp / "res" / "bounded" / "README.md");
  EXPECT_NE(readme.find(fmt::format("- asynchronous updates: {} applied, {} rejected "
                                    "(`async.staleness_bound = 1`)",
                                    applied, rejected)),
            std::string::npos)
      << readme;
  EXPECT_NE(readme.find(fmt::format("stalest: client 0: ")), std::string::npos) << readme;
  EXPECT_NE(readme.find(fmt::format("at most {} (", client0_max)), std::string::npos) << readme;
  const auto replay =
      testing::run_fedpar("replay " + (tmp / "res" / "bounded").string(), tmp.path());
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
}

// Compressed links replay too, and a staleness bound refuses some updates whose encoding still
// moved their client's state: bf16 down with top-k and error feedback up (the residual), and
// PowerSGD up without error feedback (its warm start).
TEST(Async, ACompressedRunIsReplayedBitForBit) {
  TempDir tmp;
  for (const auto& [name, links] : std::vector<std::pair<std::string, std::string>>{
           {"topk-ef",
            "--set compression.downlink=bf16 --set compression.uplink=topk "
            "--set compression.ratio=0.1 --set compression.error_feedback=true"},
           {"powersgd", "--set compression.uplink=powersgd"}}) {
    const auto r = run(tmp, name,
                       "--set regime=async --set rounds=12 --set processes=3 "
                       "--set partition.clients=3 --set sgd.batch=20 --set async.staleness_bound=1 "
                       "--set stragglers.delay_seconds=0:0.1,1:0.01,2:0.01 "
                       "--set stragglers.slowdown=0:5 " +
                           links);
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    int rejected = 0;
    for (const auto& e : jsonl(tmp / "res" / name / "updates.jsonl"))
      rejected += !e["applied"].get<bool>();
    EXPECT_GT(rejected, 0) << name << ": the straggler's stale updates are refused";
    const auto replay = testing::run_fedpar("replay " + (tmp / "res" / name).string(), tmp.path());
    EXPECT_EQ(replay.code, 0) << name << ": " << replay.out << replay.err;
    EXPECT_NE(replay.out.find("matches"), std::string::npos) << name << ": " << replay.out;
  }
}

TEST(Topologies, NcclWithoutAGpuStopsTheRunSayingWhy) {
  if (std::system("nvidia-smi -L >/dev/null 2>&1") == 0) GTEST_SKIP() << "this machine has a GPU";
  TempDir tmp;
  // the server makes the communicator's id and sends it with each rank; the workers cannot join
  // it here, and the server hears why from them
  auto r = run(tmp, "nccl",
               "--set regime=gradient --set topology=allreduce --set rounds=3 "
               "--set processes=2 --set partition.clients=2 --set allreduce.backend=nccl");
  // fedpar run's processes would all use device 0, which NCCL refuses
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("needs a GPU per client process"), std::string::npos) << r.err;
  r = run(tmp, "nccl",
          "--set regime=gradient --set topology=allreduce --set rounds=3 "
          "--set processes=1 --set partition.clients=2 --set allreduce.backend=nccl");
  EXPECT_NE(r.code, 0);
  const bool said = r.err.find(
                        "failed: allreduce.backend = \"nccl\" sums on GPUs: "
                        "this client process sees no CUDA device") != std::string::npos ||
                    r.err.find("built without NCCL") != std::string::npos ||
                    r.err.find("this build has no CUDA") != std::string::npos;
  EXPECT_TRUE(said) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "res" / "nccl"));
}

TEST(Topologies, ConfigErrorsNameTheFix) {
  TempDir tmp;
  auto r = run(tmp, "x", "--set topology=ring");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("topology must be parameter-server, master, allreduce, pipeline or tensor, "
                       "got 'ring' (the ring all-reduce among the workers is 'allreduce')"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=master --set regime=model");
  EXPECT_NE(r.err.find("needs regime = \"gradient\""), std::string::npos) << r.err;
  r = run(tmp, "x", "--set topology=allreduce --set regime=gradient --set fraction=0.5");
  EXPECT_NE(r.err.find("fraction must be 1"), std::string::npos) << r.err;
  r = run(tmp, "x", "--set topology=master --set regime=gradient --set weighting=uniform");
  EXPECT_NE(r.err.find("weighting must be samples"), std::string::npos) << r.err;
  r = run(tmp, "x", "--set stragglers.slowdown=0:0.5");
  EXPECT_NE(r.err.find("stragglers.slowdown: '0:0.5' is not \"client:value\""), std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set regime=gradient --set allreduce.elastic=true");
  EXPECT_NE(r.err.find("allreduce.elastic re-forms the all-reduce ring: it needs topology"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x",
          "--set topology=allreduce --set regime=gradient --set allreduce.elastic=true "
          "--set compression.uplink=randk");
  EXPECT_NE(r.err.find("allreduce.elastic cannot redo a round of randk or powersgd"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace fedpar
