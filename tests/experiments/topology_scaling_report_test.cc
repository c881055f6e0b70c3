// The topology scaling section's table and claims on runs made up to hold or to fail them.
#include "experiments/topology_scaling_report.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/run_records.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

// Steps in ms at N = 2, 4, 8 for the parameter server, the master and the ring; server MB per
// step grow with N for the first two, ring MB per worker as 2(N - 1)/N.
std::vector<ScalingRun> runs(double ps8, double ring8) {
  std::vector<ScalingRun> out;
  const double ps[] = {10, 20, ps8}, master[] = {11, 21, 41}, ring[] = {6, 8, ring8};
  const int ns[] = {2, 4, 8};
  for (int i = 0; i < 3; ++i) {
    const int n = ns[i];
    out.push_back({"ps", "2nn", "parameter-server", n, ps[i], 1.6 * n, 0});
    out.push_back({"master", "2nn", "master", n, master[i], 1.6 * n, 0});
    out.push_back({"ring", "2nn", "allreduce", n, ring[i], 0.001, 0.8 * 2 * (n - 1) / n});
    // (in the order ps, master, ring for each N: index 3 k + t)
  }
  return out;
}

TEST(TopologyScaling, TabulatesTheStepsAndChecksTheClaims) {
  const auto s = topology_scaling_section(runs(40, 10));
  EXPECT_TRUE(s.failed.empty());
  EXPECT_NE(s.markdown.find("| parameter-server | 10.00 | 20.00 | 40.00 | 4.00x | 4.00x |"),
            std::string::npos)
      << s.markdown;
  EXPECT_NE(s.markdown.find("| allreduce | 6.00 | 8.00 | 10.00 | 1.67x | 1.75x |"),
            std::string::npos)
      << s.markdown;
  ASSERT_EQ(s.json.size(), 3u);
  EXPECT_DOUBLE_EQ(s.json[2]["slow_down"].get<double>(), 10.0 / 6.0);
}

TEST(TopologyScaling, AClaimThatDoesNotHoldFailsAndSaysWhich) {
  // the parameter server barely slows down (2x): its link cannot have carried 4x the bytes
  const auto slow = topology_scaling_section(runs(20, 10));
  ASSERT_EQ(slow.failed.size(), 1u);
  EXPECT_NE(slow.failed[0].find("2nn: parameter-server: the server's link carries 4.00x the bytes"),
            std::string::npos)
      << slow.failed[0];
  EXPECT_NE(slow.markdown.find("- FAILED: parameter-server"), std::string::npos);
  // the ring slower than the master at N = 8, and slowing down more than the parameter server
  const auto ring = topology_scaling_section(runs(40, 45));
  ASSERT_EQ(ring.failed.size(), 2u);
  EXPECT_NE(ring.failed[0].find("allreduce slows down less than the parameter server (7.50x"),
            std::string::npos)
      << ring.failed[0];
  EXPECT_NE(ring.failed[1].find("the shortest: parameter-server, 40.00 ms"), std::string::npos)
      << ring.failed[1];
}

TEST(TopologyScaling, NothingToCompareFailsInsteadOfPassingEmpty) {
  std::vector<ScalingRun> one = {{"ps", "2nn", "parameter-server", 4, 20, 6.4, 0}};
  const auto s = topology_scaling_section(one);
  ASSERT_EQ(s.failed.size(), 1u);
  EXPECT_NE(s.failed[0].find("no model has parameter-server, master or allreduce runs at two"),
            std::string::npos);
  EXPECT_TRUE(s.json.empty());
  // suite.only picked runs at one N (the straggler runs alone): said, no failed claim (the suite
  // exited 1 for a subset it was asked for)
  const auto picked = topology_scaling_section(one, /*subset=*/true);
  EXPECT_TRUE(picked.failed.empty());
  EXPECT_NE(picked.markdown.find("(`suite.only`: no model has parameter-server, master or "
                                 "allreduce runs at two numbers of workers to compare among the "
                                 "runs it picked.)"),
            std::string::npos)
      << picked.markdown;
  // a run without time or bytes cannot pass a claim by dividing by zero
  auto zero = runs(40, 10);
  zero[2].worker_mb_sent = 0;  // the ring at N = 2
  zero[3].step_ms = 0;         // the parameter server at N = 4: not compared, still tabulated
  zero[6].step_ms = 0;         // the parameter server at N = 8
  const auto z = topology_scaling_section(zero);
  ASSERT_EQ(z.failed.size(), 2u) << z.markdown;
  EXPECT_EQ(z.failed[0], "2nn: parameter-server measured no step time or no bytes at N = 2 or 8");
  EXPECT_EQ(z.failed[1], "2nn: allreduce measured no step time or no bytes at N = 2 or 8");
}

// A ring's run read back: its step and bytes are the traffic table's steady rounds, the first
// (which brings the ring its model) and those that send the server its replica (to evaluate or
// checkpoint) left out, and the replica out of the server's bytes.
TEST(TopologyScaling, ARunsStepIsItsSteadyRounds) {
  testing::TempDir tmp;
  {
    std::ofstream(tmp / "config.resolved.toml")
        << "regime = \"gradient\"\ntopology = \"allreduce\"\nprocesses = 4\n[network]\nmode = "
           "\"simulated\"\n";
    std::ofstream out(tmp / "metrics.jsonl");
    for (int64_t k = 1; k <= 5; ++k) {
      RoundRecord r{.round = k,
                    .topology = "allreduce",
                    .server_bytes_sent = 1000000,
                    .server_bytes_received = 2000000};
      r.simulated_seconds = k == 1 ? 0.5 : 0.010 + 0.001 * double(k);
      if (k == 3 || k == 5) {  // evaluated, or a checkpoint: the replica up, 5 ms more
        r.diagnostic_bytes_up = 8000000, r.server_bytes_received += 8000000;
        r.model_sent_up = true;
        *r.simulated_seconds += 0.005;
        if (k == 3) r.test_accuracy = 0.5;
      }
      out << to_json(r).dump() << "\n";
    }
  }
  const ScalingRun r = read_scaling_run(tmp.path(), "ring");
  EXPECT_EQ(r.topology, "allreduce");
  EXPECT_EQ(r.workers, 4);
  EXPECT_DOUBLE_EQ(r.step_ms, 13.0);  // rounds 2 and 4: 12 and 14 ms
  EXPECT_DOUBLE_EQ(r.server_mb, 3.0);
}

}  // namespace
}  // namespace fedpar
