// The pipeline topology as real processes over ZeroMQ: with one micro-batch it trains the
// one-client parameter server's model bit for bit; with several, GPipe and 1F1B give the same bits,
// runs repeat bit for bit, and the model stays within rounding of the parameter server's; the links
// carry exactly the activations and gradients at each boundary; 1F1B holds fewer activations than
// GPipe; a dead stage stops the run with a named error within the links' deadline.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/util/process.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::jsonl;
using testing::TempDir;

// 20 inputs -> 32 -> 24 -> 10 classes: three dense layers, so up to three stages.
constexpr const char* kRun =
    "seed = 3\nregime = 'gradient'\nrounds = 10\neval_every = 5\n"
    "[data]\nname = 'synthetic'\niid = true\n[model]\nname = 'mlp'\nhidden = [32, 24]\n"
    "[partition]\nclients = 1\n[sgd]\nbatch = 24\nlr = 0.3\nmomentum = 0.5\n";

testing::CliRun run(const TempDir& tmp, const std::string& name, const std::string& sets) {
  std::ofstream(tmp / "run.toml") << kRun;
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
    for (const auto& rec : rounds) {
      EXPECT_EQ(rec["topology"], "pipeline");
      ASSERT_EQ(rec["workers"].size(), 3u);
      for (size_t s = 0; s < 3; ++s) {
        const auto& w = rec["workers"][s];
        EXPECT_EQ(w["ring_bytes_sent"].get<uint64_t>(), sent[s]) << sched << " stage " << s;
        EXPECT_EQ(w["ring_bytes_received"].get<uint64_t>(), received[s]) << sched << " " << s;
        held[std::string(sched) == "1f1b"][s] = w["activation_bytes"].get<uint64_t>();
      }
    }
  }
  // Stage 0 of 3: GPipe holds all 4 micro-batches, 1F1B at most 3; the last stage 4 vs 1.
  EXPECT_GT(held[0][0], held[1][0]);
  EXPECT_GT(held[0][2], 3 * held[1][2]);
}

TEST(Pipeline, DeadStageStopsTheRunWithinTheDeadline) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kRun;
  const pid_t server = testing::spawn_fedpar({"server",
                                              "--config",
                                              (tmp / "run.toml").string(),
                                              "--endpoint-file",
                                              (tmp / "ep").string(),
                                              "--set",
                                              "bind=tcp://127.0.0.1:*",
                                              "--set",
                                              "results_dir=" + (tmp / "res").string(),
                                              "--set",
                                              "topology=pipeline",
                                              "--set",
                                              "processes=3",
                                              "--set",
                                              "rounds=1000000",
                                              "--set",
                                              "eval_every=1000000",
                                              "--set",
                                              "pipeline.deadline_seconds=1",
                                              "--set",
                                              "wait_seconds=60"},
                                             tmp / "s.out", tmp / "s.err");
  const std::string ep = testing::wait_for_file(tmp / "ep", 20);
  ASSERT_FALSE(ep.empty()) << testing::slurp(tmp / "s.err");
  const std::vector<pid_t> stages = testing::spawn_clients(3, ep, tmp.path());
  const auto k = testing::kill_mid_run(server, tmp / "s.err", "round 50/", stages[1]);
  ASSERT_TRUE(k.marker_seen) << testing::slurp(tmp / "s.err");
  ASSERT_TRUE(k.code.has_value()) << "the server hung after a stage died";
  EXPECT_NE(*k.code, 0);
  EXPECT_LT(k.seconds, 10.0) << "well inside wait_seconds (60): a neighbour's link timed out";
  const std::string err = testing::slurp(tmp / "s.err");
  // A neighbour's receive timed out ("pipeline: no activations ... from the previous stage ...
  // did it die?"), or the dead stage's report was what went missing.
  EXPECT_NE(err.find("did it die?"), std::string::npos) << err;
  for (int i : {0, 2})
    EXPECT_TRUE(testing::wait_exit(stages[size_t(i)], 20).has_value()) << "stage " << i << " hung";
  testing::wait_exit(stages[1], 1);
}

TEST(Pipeline, ConfigErrorsNameTheFix) {
  TempDir tmp;
  auto r = run(tmp, "x", "--set topology=pipeline --set processes=2 --set partition.clients=2");
  EXPECT_NE(r.err.find("topology 'pipeline' trains one data stream through its stages: it needs "
                       "partition.clients = 1"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=pipeline --set processes=4");
  EXPECT_NE(r.err.find("splits into 1 to 3 stages (a stage starts at a layer with parameters: "
                       "fc1, fc2, fc3), not 4"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=pipeline --set processes=2 --set pipeline.split=fc9");
  EXPECT_NE(r.err.find("a stage cannot start at 'fc9' (it may start at: fc2, fc3)"),
            std::string::npos)
      << r.err;
  r = run(tmp, "x", "--set topology=pipeline --set processes=3 --set pipeline.split=fc3");
  EXPECT_NE(r.err.find("pipeline.split names where stages 2.. start: 1 name(s) for 3 processes, "
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

}  // namespace
}  // namespace fedpar
