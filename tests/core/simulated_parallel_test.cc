// The simulated seconds of pipeline and tensor steps against timelines worked out by hand.
#include "core/simulated_parallel.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace fedpar {
namespace {

// 8 bit/s both ways (a byte takes 1 s), 0.25 s each way: a message between two processes pays
// both ends' latency, 0.5 s.
NetworkSpec byte_per_second_links() {
  return resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                         {.down_bps = 8, .up_bps = 8, .latency_s = 0.25}, 1, 2);
}

TEST(SimulatedParallel, APipelineStepFollowsItsMessagesAcrossTheLinks) {
  const NetworkSpec n = byte_per_second_links();
  // 2 stages, 1 micro-batch (ops F0, B0 on each); TASKs of 1 byte are in at 1.25 s.
  const std::vector<SimulatedPart> stages = {{.client = 0,
                                              .down_bytes = 1,
                                              .up_bytes = 1,
                                              .compute_seconds = 2.5,
                                              .op_seconds = {1, 1},
                                              .op_bytes = {2, 0}},
                                             {.client = 0,
                                              .down_bytes = 1,
                                              .up_bytes = 1,
                                              .compute_seconds = 2,
                                              .op_seconds = {1, 1},
                                              .op_bytes = {0, 3}}};
  // stage 0: F0 1.25-2.25, its 2 bytes on the link to 4.25, at stage 1 at 4.75; stage 1: F0
  // 4.75-5.75, B0 to 6.75, 3 bytes back in at 10.25; stage 0: B0 10.25-11.25, then 0.5 s of SGD
  // step (2.5 s of compute, 2 in ops), its report in at 13; stage 1's at 8; + 0.1 aggregation.
  EXPECT_NEAR(simulated_pipeline_seconds(n, 1, 0, PipeSchedule::k1F1B, 1, 2, stages, 0.1), 13.1,
              1e-12);
  auto bad = stages;
  bad[1].op_bytes.pop_back();
  EXPECT_THROW(simulated_pipeline_seconds(n, 1, 0, PipeSchedule::k1F1B, 1, 2, bad, 0), Error);
}

TEST(SimulatedParallel, AGridsReplicaRingStartsWhenEveryReplicasPartIsReady) {
  const NetworkSpec n = byte_per_second_links();
  // 2 replicas of a 1-stage pipeline, each sending 4 bytes around the replica ring (2 sends)
  const std::vector<SimulatedPart> parts = {{.client = 0,
                                             .compute_seconds = 2,
                                             .op_seconds = {1, 1},
                                             .op_bytes = {0, 0},
                                             .replica_bytes = 4},
                                            {.client = 1,
                                             .compute_seconds = 4,
                                             .op_seconds = {2, 2},
                                             .op_bytes = {0, 0},
                                             .replica_bytes = 4}};
  // TASKs in at 0.25; ready at 2.25 and 4.25; the ring from 4.25: 4 bytes + 2 x 0.5 s latency;
  // reports in 0.25 s after 9.25.
  EXPECT_NEAR(simulated_pipeline_seconds(n, 1, 0, PipeSchedule::kGPipe, 1, 1, parts, 0), 9.5,
              1e-12);
  EXPECT_THROW(simulated_pipeline_seconds(n, 1, 0, PipeSchedule::kGPipe, 1, 2,
                                          {parts[0], parts[1], parts[0]}, 0),
               Error);
}

TEST(SimulatedParallel, ATensorGroupMovesInLockstep) {
  NetworkSpec n = byte_per_second_links();
  const std::vector<SimulatedPart> ranks = {
      {.client = 0, .compute_seconds = 1, .ring_bytes = 2, .ring_steps = 2},
      {.client = 0, .compute_seconds = 3, .ring_bytes = 4, .ring_steps = 2}};
  // the last rank's compute ends at 0.25 + 3; the slowest ring sends 4 bytes + 2 x 0.5 s; reports
  // 0.25 s later
  EXPECT_NEAR(simulated_tensor_seconds(n, 1, 0, 2, ranks, 0), 8.5, 1e-12);
  // A server link of 1 byte/s and 0.1 s: the two 4-byte TASKs share it (in at 8 + 0.35), so do
  // the two 2-byte reports (4 s + 0.35 after the compute).
  n.server = LinkProfile{.name = "server", .down_bps = 8, .up_bps = 8, .latency_s = 0.1};
  const std::vector<SimulatedPart> shared = {
      {.client = 0, .down_bytes = 4, .up_bytes = 2, .compute_seconds = 1},
      {.client = 0, .down_bytes = 4, .up_bytes = 2, .compute_seconds = 1}};
  EXPECT_NEAR(simulated_tensor_seconds(n, 1, 0, 2, shared, 0), 8.35 + 1 + 4.35, 1e-12);
}

}  // namespace
}  // namespace fedpar
