// The model-parallel topologies as real processes over ZeroMQ. Pipeline: with one micro-batch it
// trains the one-client parameter server's model bit for bit; with several, GPipe and 1F1B give
// the same bits, runs repeat bit for bit, and the model stays within rounding of the parameter
// server's; the links carry exactly the activations and gradients at each boundary; 1F1B holds
// fewer activations than GPipe. Tensor: within rounding of the parameter server, bitwise
// repeatable, exactly one all-reduce per dense pair on its ring. Grids (data x pipeline, data x
// tensor): within rounding of the two-client parameter server, bitwise repeatable, replicas
// identical, each part's gradients all-reduced across replicas. A dead process stops any of them
// with a named error within the links' deadline.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/util/process.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::jsonl;
using testing::TempDir;

// 60 inputs -> 32 -> 24 -> 10 classes: three dense layers, so up to three stages.
constexpr const char* kModelParallelRun =
    "seed = 3\nregime = 'gradient'\nrounds = 10\neval_every = 5\n"
    "[data]\nname = 'synthetic'\niid = true\n[model]\nname = 'mlp'\nhidden = [32, 24]\n"
    "[partition]\nclients = 1\n[sgd]\nbatch = 24\n[optimizer]\nlr = 0.3\nmomentum = 0.5\n";

testing::CliRun run(const TempDir& tmp, const std::string& name, const std::string& sets) {
  std::ofstream(tmp / "run.toml") << kModelParallelRun;
  return testing::run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                                 (tmp / "res").string() + " --set name=" + name + " " + sets,
                             tmp.path());
}

testing::CliRun pipeline(const TempDir& tmp, const std::string& name, const char* schedule, int m) {
  return run(tmp, name,
             fmt::format("--set topology=pipeline --set processes=3 --set pipeline.schedule={} "
                         "--set pipeline.micro_batches={}",
                         schedule, m));
}

std::vector<float> final_params(const TempDir& tmp, const std::string& name) {
  return testing::final_params(tmp / "res" / name);
}

TEST(Pipeline, TrainsTheParameterServersModel) {
  TempDir tmp;
  auto r = run(tmp, "ps", "--set processes=1");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ps = final_params(tmp, "ps");
  for (const char* sched : {"gpipe", "1f1b"}) {
    r = pipeline(tmp, fmt::format("{}-m1", sched), sched, 1);
    ASSERT_EQ(r.code, 0) << r.err;
    // the server names the layers each stage holds
    EXPECT_NE(r.err.find("pipeline of 3 stages (fc1 | fc2 | fc3: 1952 + 792 + 250 parameters)"),
              std::string::npos)
        << r.err;
    // One micro-batch through three stages is the whole model's forward and backward, and SGD
    // steps each slice as the server steps the whole: the same bits.
    EXPECT_EQ(final_params(tmp, fmt::format("{}-m1", sched)), ps) << sched;
    r = pipeline(tmp, fmt::format("{}-m4", sched), sched, 4);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  // Four micro-batches: both schedules add the micro-batches' gradients in the same order.
  const auto m4 = final_params(tmp, "1f1b-m4");
  EXPECT_EQ(final_params(tmp, "gpipe-m4"), m4);
  r = pipeline(tmp, "again", "1f1b", 4);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(final_params(tmp, "again"), m4) << "a pipeline run repeats bit for bit";
  // Summed in four parts instead of one pass: rounding apart (a missing or doubled micro-batch
  // moves the model by 1e-2 or more).
  EXPECT_LT(testing::relative_distance(m4, ps), 1e-5);
}

TEST(Pipeline, LinksCarryTheBoundaryTensorsAndOneFOneBHoldsLess) {
  TempDir tmp;
  for (const char* sched : {"gpipe", "1f1b"}) {
    const auto r = pipeline(tmp, sched, sched, 4);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  // Stage boundaries after fc1 (32 wide) and fc2 (24 wide); a batch of 24 in 4 micro-batches.
  // Forward: activations + labels (4 bytes each) + an 8-byte tag per micro-batch; backward: the
  // gradient of the stage's input.
  const uint64_t b = 24, m = 4;
  const uint64_t fwd0 = b * 32 * 4 + b * 4 + 8 * m, fwd1 = b * 24 * 4 + b * 4 + 8 * m;
  const uint64_t bwd1 = b * 32 * 4 + 8 * m, bwd2 = b * 24 * 4 + 8 * m;
  const std::vector<uint64_t> sent = {fwd0, fwd1 + bwd1, bwd2},
                              received = {bwd1, fwd0 + bwd2, fwd1};
  uint64_t held[2][3];
  for (const char* sched : {"gpipe", "1f1b"}) {
    const auto rounds = jsonl(tmp / "res" / sched / "metrics.jsonl");
    ASSERT_EQ(rounds.size(), 10u);
    int evaluated = 0;
    for (const auto& rec : rounds) {
      // the stages' parts sent for an evaluation (the 60-32-24-10 model's 2994 floats) are no
      // step's traffic: the MB leave them out, as a ring's replica
      if (rec.contains("test_accuracy")) {
        ++evaluated;
        EXPECT_EQ(rec["diagnostic_bytes_up"].get<uint64_t>(), 2994u * 4) << rec;
      } else {
        EXPECT_FALSE(rec.contains("diagnostic_bytes_up")) << rec;
      }
      EXPECT_EQ(rec["topology"], "pipeline");
      ASSERT_EQ(rec["workers"].size(), 3u);
      for (size_t s = 0; s < 3; ++s) {
        const auto& w = rec["workers"][s];
        EXPECT_EQ(w["ring_bytes_sent"].get<uint64_t>(), sent[s]) << sched << " stage " << s;
        EXPECT_EQ(w["ring_bytes_received"].get<uint64_t>(), received[s]) << sched << " " << s;
        held[std::string(sched) == "1f1b"][s] = w["activation_bytes"].get<uint64_t>();
      }
    }
    EXPECT_GT(evaluated, 0);
    // the README says how much of what the server received was these parts (kB below 0.1 MB)
    EXPECT_NE(testing::slurp(tmp / "res" / sched / "README.md")
                  .find(fmt::format("; {:.1f} kB of what it received measured or saved rather "
                                    "than trained (`diagnostic_bytes_up`",
                                    double(evaluated * 2994 * 4) / 1e3)),
              std::string::npos)
        << sched;
  }
  // Stage 0 of 3: GPipe holds all 4 micro-batches, 1F1B at most 3; the last stage 4 vs 1. A slot
  // holds a micro-batch of 6's input and its layers' outputs (stage 0: 60 inputs, fc1 32, relu 32;
  // stage 2: 24 inputs, fc3 10), and a stage one gradient pair whatever its slots: twice its
  // widest output (the first layer's input gradient goes to the link's buffer).
  const uint64_t f = sizeof(float), slot0 = 6 * (60 + 32 + 32) * f, slot2 = 6 * (24 + 10) * f;
  const uint64_t pair0 = 2 * 6 * 32 * f, pair2 = 2 * 6 * 10 * f;
  EXPECT_EQ(held[0][0], 4 * slot0 + pair0);
  EXPECT_EQ(held[1][0], 3 * slot0 + pair0);
  EXPECT_EQ(held[0][2], 4 * slot2 + pair2);
  EXPECT_EQ(held[1][2], slot2 + pair2);
}

// [network] simulated on 1 Mbit/s links with 0.5 ms each way: each step's time is the chain of one
// micro-batch's four messages (forward through the two boundaries, their gradients back) at least,
// and with one micro-batch at most that plus every stage's compute and the TASK's and a report's
// bytes; four micro-batches overlap their messages and take less. Training is the unsimulated
// run's, bit for bit.
constexpr const char* kSimulatedLinks =
    "--set network.mode=simulated --set network.profile=custom --set network.custom.up_bps=1e6 "
    "--set network.custom.down_bps=1e6 --set network.custom.latency_seconds=0.0005 "
    "--set network.custom.jitter_seconds=0 --set network.custom.loss=0 "
    "--set network.custom.availability=1";
constexpr double kSimulatedLatency = 0.0005, kSimulatedBps = 1e6;

TEST(Pipeline, ASimulatedNetworkTimesEachStepWithoutChangingTheModel) {
  TempDir tmp;
  auto r = pipeline(tmp, "off", "1f1b", 4);
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<int, std::vector<double>> seconds;
  for (const int m : {1, 4}) {
    const std::string name = fmt::format("m{}", m);
    r = run(tmp, name,
            fmt::format("--set topology=pipeline --set processes=3 --set pipeline.micro_batches={} "
                        "{}",
                        m, kSimulatedLinks));
    ASSERT_EQ(r.code, 0) << r.err;
    // micro-batch 0 of the batch of 24 across the boundaries after fc1 (32 wide) and fc2 (24):
    // activations and labels forward, gradients back, an 8-byte tag each
    const uint64_t mb = 24 / uint64_t(m);
    const uint64_t chain_bytes = (mb * 32 * 4 + mb * 4 + 8) + (mb * 24 * 4 + mb * 4 + 8) +
                                 (mb * 24 * 4 + 8) + (mb * 32 * 4 + 8);
    const double latency = kSimulatedLatency,
                 chain = double(chain_bytes) * 8 / kSimulatedBps + 4 * 2 * latency;
    for (const auto& rec : jsonl(tmp / "res" / name / "metrics.jsonl")) {
      const double t = rec["simulated_seconds"].get<double>();
      seconds[m].push_back(t);
      // the TASK in and the report back each pay a latency at least
      EXPECT_GE(t, chain + 2 * latency) << name << " round " << rec["round"];
      if (m == 1) {
        double compute = 0;
        uint64_t task = 0, report = 0;
        for (const auto& w : rec["workers"]) compute += w["compute_seconds"].get<double>();
        for (const auto& p : rec["processes"]) {
          task = std::max(task, p["bytes_down"].get<uint64_t>());
          report = std::max(report, p["bytes_up"].get<uint64_t>());
        }
        EXPECT_LE(t,
                  chain + 2 * latency + double(task + report) * 8 / kSimulatedBps + compute + 1e-9)
            << name << " round " << rec["round"];
      }
    }
  }
  EXPECT_EQ(final_params(tmp, "m4"), final_params(tmp, "off")) << "the clock changes no bit";
  std::ranges::sort(seconds[1]), std::ranges::sort(seconds[4]);
  EXPECT_LT(seconds[4][5], seconds[1][5]) << "four micro-batches overlap their messages (medians)";
}

// Starts a run of `processes` with `sets`, kills process 1 at round 50 and checks the server
// stops with "did it die?" within the deadline (1 s; wait_seconds is 60) and the others leave.
void dead_process_stops_the_run(const std::vector<std::string>& sets, int processes) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kModelParallelRun;
  std::vector<std::string> args = {"server",
                                   "--config",
                                   (tmp / "run.toml").string(),
                                   "--endpoint-file",
                                   (tmp / "ep").string(),
                                   "--set",
                                   "bind=tcp://127.0.0.1:*",
                                   "--set",
                                   "results_dir=" + (tmp / "res").string(),
                                   "--set",
                                   fmt::format("processes={}", processes),
                                   "--set",
                                   "rounds=1000000",
                                   "--set",
                                   "eval_every=1000000",
                                   "--set",
                                   "pipeline.deadline_seconds=1",
                                   "--set",
                                   "allreduce.deadline_seconds=1",
                                   "--set",
                                   "wait_seconds=60"};
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  const pid_t server = testing::spawn_fedpar(args, tmp / "s.out", tmp / "s.err");
  const std::string ep = testing::wait_for_file(tmp / "ep", 20);
  ASSERT_FALSE(ep.empty()) << testing::slurp(tmp / "s.err");
  const std::vector<pid_t> workers = testing::spawn_clients(processes, ep, tmp.path());
  const auto k = testing::kill_mid_run(server, tmp / "s.err", "round 50/", workers[1]);
  ASSERT_TRUE(k.marker_seen) << testing::slurp(tmp / "s.err");
  ASSERT_TRUE(k.code.has_value()) << "the server hung after a process died";
  EXPECT_NE(*k.code, 0);
  EXPECT_LT(k.seconds, 10.0) << "well inside wait_seconds (60): a neighbour's link timed out";
  const std::string err = testing::slurp(tmp / "s.err");
  // A neighbour's receive timed out ("... from the previous stage ... did it die?"), or the dead
  // process's report was what went missing.
  EXPECT_NE(err.find("did it die?"), std::string::npos) << err;
  // the dead one is named, though its neighbours' ERRORs blame their links, or some of them are
  // missing too, blocked on it
  EXPECT_TRUE(std::regex_search(
      err, std::regex(fmt::format(R"(the connection of (stage|rank) \d+ \(pid {}\) (is )?closed)",
                                  workers[1]))))
      << err;
  for (int i = 0; i < processes; ++i) {
    if (i != 1) {
      EXPECT_TRUE(testing::wait_exit(workers[size_t(i)], 20).has_value())
          << "process " << i << " hung";
    }
  }
  testing::wait_exit(workers[1], 1);
}

TEST(Pipeline, DeadStageStopsTheRunWithinTheDeadline) {
  dead_process_stops_the_run({"topology=pipeline"}, 3);
}

TEST(Pipeline, ConfigErrorsNameTheFix) {
  TempDir tmp;
  auto r = run(tmp, "x", "--set topology=pipeline --set processes=2 --set partition.clients=2");
  EXPECT_NE(r.err.find("topology 'pipeline' trains one data stream per replica: it needs "
                       "partition.clients = grid.data = 1"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=pipeline --set processes=4");
  EXPECT_NE(r.err.find("splits into 1 to 3 stages (a stage starts at a layer with parameters: "
                       "fc1, fc2, fc3), not 4 (the stages: processes = 4)"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=pipeline --set processes=2 --set pipeline.split=fc9");
  EXPECT_NE(r.err.find("a stage cannot start at 'fc9' (it may start at: fc2, fc3)"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=pipeline --set processes=3 --set pipeline.split=fc3");
  EXPECT_NE(r.err.find("pipeline.split names where stages 2.. start: 1 name(s) for 3 stages, "
                       "expected 2"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=pipeline --set processes=2 --set pipeline.schedule=zb");
  EXPECT_NE(r.err.find("unknown pipeline schedule 'zb' (valid: gpipe, 1f1b)"), std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=pipeline --set processes=2 --set pipeline.micro_batches=30");
  EXPECT_NE(r.err.find("pipeline.micro_batches = 30 needs sgd.batch >= 30"), std::string::npos)
      << r.err;
}

// Every round's train_loss of run `a` within rounding of run `b`'s.
void expect_same_losses(const TempDir& tmp, const std::string& a, const std::string& b) {
  const auto ra = jsonl(tmp / "res" / a / "metrics.jsonl"),
             rb = jsonl(tmp / "res" / b / "metrics.jsonl");
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t k = 0; k < ra.size(); ++k)
    EXPECT_NEAR(ra[k]["train_loss"].get<double>(), rb[k]["train_loss"].get<double>(),
                1e-5 * rb[k]["train_loss"].get<double>())
        << a << " round " << k + 1;
}

// Bytes one rank of a ring of `n` sends to all-reduce `floats` values in one bucket (a multiple of
// n): 2 (n - 1) chunks of floats / n, each with its 8-byte tag.
uint64_t ring_bytes(uint64_t floats, uint64_t n) { return 2 * (n - 1) * (8 + 4 * floats / n); }

TEST(Tensor, TrainsWithinRoundingOfTheParameterServerOneAllReducePerPair) {
  TempDir tmp;
  auto r = run(tmp, "ps", "--set processes=1");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ps = final_params(tmp, "ps");
  for (int t : {2, 4}) {
    const std::string name = fmt::format("t{}", t);
    r = run(tmp, name, fmt::format("--set topology=tensor --set processes={}", t));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find(fmt::format("per rank: fc1 column-parallel 60->{0} of 32; relu on the "
                                     "local {0} of 32; fc2 row-parallel {0}->24 of 32 inputs, "
                                     "then all-reduce; relu replicated; fc3 replicated",
                                     32 / t)),
              std::string::npos)
        << r.err;
    // fc2's partial outputs summed across ranks instead of one dot product: rounding apart (a
    // missing or doubled partial sum moves the model by 1e-1).
    EXPECT_LT(testing::relative_distance(final_params(tmp, name), ps), 1e-5) << t;
    // fc1|fc2 is the one pair (fc3 replicated); fc1 is the first layer, so no backward
    // all-reduce: one forward all-reduce of fc2's 24 outputs for the batch of 24.
    for (const auto& rec : jsonl(tmp / "res" / name / "metrics.jsonl")) {
      EXPECT_EQ(rec["topology"], "tensor");
      ASSERT_EQ(rec["workers"].size(), size_t(t));
      for (const auto& w : rec["workers"]) {
        EXPECT_EQ(w["ring_bytes_sent"].get<uint64_t>(), ring_bytes(24 * 24, uint64_t(t))) << t;
        EXPECT_FALSE(w.contains("replica_bytes_sent"));
      }
    }
  }
  // [network] simulated: a step is the last rank's TASK and compute, then its ring's sends (the
  // bytes at 1 Mbit/s and each of 2 (t - 1) sends paying both ends' latency), then the report.
  r = run(tmp, "sim", fmt::format("--set topology=tensor --set processes=2 {}", kSimulatedLinks));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(final_params(tmp, "sim"), final_params(tmp, "t2")) << "the clock changes no bit";
  for (const auto& rec : jsonl(tmp / "res" / "sim" / "metrics.jsonl")) {
    const double ring =
        double(ring_bytes(24 * 24, 2)) * 8 / kSimulatedBps + 2 * 2 * kSimulatedLatency;
    double compute = 0;
    uint64_t task = 0, report = 0;
    for (const auto& w : rec["workers"])
      compute = std::max(compute, w["compute_seconds"].get<double>());
    for (const auto& p : rec["processes"]) {
      task = std::max(task, p["bytes_down"].get<uint64_t>());
      report = std::max(report, p["bytes_up"].get<uint64_t>());
    }
    const double t = rec["simulated_seconds"].get<double>();
    EXPECT_GE(t, ring + 2 * kSimulatedLatency + compute) << "round " << rec["round"];
    EXPECT_LE(t, ring + 2 * kSimulatedLatency + compute + double(task + report) * 8 / kSimulatedBps)
        << "round " << rec["round"];
  }
  r = run(tmp, "again", "--set topology=tensor --set processes=4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(final_params(tmp, "again"), final_params(tmp, "t4")) << "repeats bit for bit";
  // every rank computes the loss; it counts once (t times would be 2x or 4x)
  expect_same_losses(tmp, "t4", "ps");
}

TEST(Grid, DataReplicasOfPipelineAndTensorTrainTheTwoClientModel) {
  TempDir tmp;
  const std::string two = "--set partition.clients=2 --set grid.data=2 ";
  auto r = run(tmp, "ps", "--set processes=1 --set partition.clients=2");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ps = final_params(tmp, "ps");
  // 2 data x 2 parts on 4 processes. Part sizes: pipeline stages fc1 (60*32+32 = 1952) | fc2,
  // fc3 (792 + 250); tensor ranks fc1 column (16*60+16), fc2 row (24*16+24), fc3 whole = 1634.
  struct Grid {
    std::string name, sets;
    std::vector<uint64_t> part_params;
  };
  for (const auto& [name, sets, part_params] :
       {Grid{"pipeline", "topology=pipeline --set pipeline.micro_batches=2", {1952, 1042}},
        Grid{"tensor", "topology=tensor", {1634, 1634}}}) {
    r = run(tmp, name, two + "--set processes=4 --set allreduce.hash_every=3 --set " + sets);
    ASSERT_EQ(r.code, 0) << r.err;
    // the mean over both replicas' batches, summed in parts: rounding apart from the server's
    // weighted mean of the two clients' gradients (one replica's alone is 1e-1 away)
    EXPECT_LT(testing::relative_distance(final_params(tmp, name), ps), 1e-5) << name;
    const auto rounds = jsonl(tmp / "res" / name / "metrics.jsonl");
    ASSERT_EQ(rounds.size(), 10u);
    int checked = 0;
    for (const auto& rec : rounds) {
      checked += rec["replicas_checked"].get<bool>();
      ASSERT_EQ(rec["workers"].size(), 4u);
      for (size_t p = 0; p < 4; ++p)  // process p: replica p / 2, part p % 2
        for (const char* way : {"replica_bytes_sent", "replica_bytes_received"})
          EXPECT_EQ(rec["workers"][p][way].get<uint64_t>(), ring_bytes(part_params[p % 2], 2))
              << name << " process " << p << " " << way;
    }
    EXPECT_EQ(checked, 4) << "rounds 3, 6, 9 and the last";
    // round 1's TASK brings each process its part's parameters alone, not the model (2994)
    for (size_t p = 0; p < 4; ++p) {
      const uint64_t down = rounds[0]["processes"][p]["bytes_down"].get<uint64_t>();
      EXPECT_GE(down, 4 * part_params[p % 2]) << name << " process " << p;
      EXPECT_LT(down, 4 * part_params[p % 2] + 512) << name << " process " << p;
    }
    expect_same_losses(tmp, name, "ps");  // the last stage's or rank 0's loss, per replica
    // the README says how the model was split, and across machines the workers' links listen
    // beyond loopback (the replica ring's too)
    const std::string readme = testing::slurp(tmp / "res" / name / "README.md");
    EXPECT_NE(readme.find(name == "pipeline"
                              ? "- the model split: a pipeline of 2 stages x 2 data replicas"
                              : "- the model split: tensor parallelism over 2 ranks x 2 data "
                                "replicas"),
              std::string::npos)
        << readme;
    EXPECT_NE(readme.find(fmt::format("; replica 1 {} 1: ", name == "pipeline" ? "stage" : "rank")),
              std::string::npos)
        << readme;
    EXPECT_NE(readme.find("--set 'allreduce.bind=tcp://0.0.0.0:*'"), std::string::npos) << readme;
    EXPECT_EQ(readme.find("--set 'pipeline.bind=tcp://0.0.0.0:*'") != std::string::npos,
              name == "pipeline")
        << readme;
    r = run(tmp, name + "-again", two + "--set processes=4 --set " + sets);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(final_params(tmp, name + "-again"), final_params(tmp, name))
        << name << ": a grid repeats bit for bit";
  }
  // One bit flipped in replica 1's part 1 (process 3) after round 1: the hash check in round 3
  // stops the run and names the part.
  r = run(tmp, "flip",
          two +
              "--set processes=4 --set allreduce.hash_every=3 --set topology=tensor --set "
              "allreduce.fault_flip_rank=3");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("round 3: the replicas drifted apart: part 1:"), std::string::npos) << r.err;
}

// Replicas step on one batch size. Over unequal shards a batch above the smallest shard was cut
// to it without a word (data parallelism's clients each take min(batch, shard): another
// algorithm); it is refused, as a full batch over unequal shards is.
TEST(Grid, UnequalShardsRefuseABatchSomeReplicaCannotFill) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kModelParallelRun;
  const std::string args = "run " + (tmp / "run.toml").string() +
                           " --set results_dir=" + (tmp / "res").string() +
                           " --set partition.clients=2 --set grid.data=2 --set processes=4 "
                           "--set topology=tensor --set partition.scheme=iid-quantity "
                           "--set partition.beta=0.5 --set data.train_limit=400 ";
  testing::expect_refused(args + "--set sgd.batch=300", tmp.path(), 2,
                          "sgd.batch = 300 is more than the smallest of the 2 replicas' shards");
  testing::expect_refused(args + "--set sgd.batch=0", tmp.path(), 2,
                          "full-batch steps over 2 replicas need equal shards");
  EXPECT_FALSE(std::filesystem::exists(tmp / "res" / "run"));
}

TEST(Tensor, DeadRankStopsTheRunWithinTheDeadline) {
  dead_process_stops_the_run({"topology=tensor"}, 2);
}

TEST(Tensor, ConfigErrorsNameTheFix) {
  TempDir tmp;
  auto r = run(tmp, "x", "--set topology=tensor --set processes=3");
  EXPECT_NE(r.err.find("tensor parallelism splits fc1's 32 outputs 3 ways: it needs a multiple "
                       "of 3"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=tensor --set processes=3 --set grid.data=2");
  EXPECT_NE(r.err.find("grid.data = 2 replicas cannot divide processes = 3"), std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=tensor --set processes=2 --set grid.data=2");
  EXPECT_NE(r.err.find("it needs partition.clients = grid.data = 2"), std::string::npos) << r.err;
  r = run(tmp, "x", "--set topology=allreduce --set processes=2 --set grid.data=2");
  EXPECT_NE(r.err.find("grid.data replicates a pipeline or tensor group"), std::string::npos)
      << r.err;
  r = run(tmp, "x",
          "--set topology=tensor --set processes=2 --set model.name=logreg --set model.hidden=[]");
  EXPECT_NE(r.err.find("model 'logreg' has no pair of dense layers"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fedpar
