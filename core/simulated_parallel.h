// The simulated seconds of a model-parallel step ([network] mode = "simulated" with topology =
// "pipeline" or "tensor", docs/pipeline.md): each process's measured compute put on the links
// between the processes (each process's link is its first client's profile; a message from a to b
// crosses a's uplink and b's downlink, at the slower of the two, and pays both latencies) and on
// the server's, which the TASKs and reports cross as a synchronous round's do (network.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/network.h"
#include "core/pipeline_schedule.h"

namespace fedpar {

// One process of a pipeline or tensor group, as measured in one step.
struct SimulatedPart {
  uint32_t client = 0;                    // whose link profile: the process's first client's
  uint64_t down_bytes = 0, up_bytes = 0;  // its TASK, its report
  double compute_seconds = 0;             // the step's compute, its links excluded
  // pipeline: each op's compute and the bytes it sent its neighbour, in pipe_ops order
  std::vector<double> op_seconds;
  std::vector<uint64_t> op_bytes;
  // tensor: what it sent around its group's ring this step, in how many sends
  uint64_t ring_bytes = 0;
  uint32_t ring_steps = 0;
  uint64_t replica_bytes = 0;  // a [grid]'s: what it sent around the ring across the replicas
};

// A pipeline step: each stage starts when its TASK is in and runs its ops as the schedule orders
// them, each when its input has come (pipe_finish: a message queues on its sender's uplink); the
// compute after its last op (the SGD step) ends it. `processes` are replica-major (process i is
// stage i % parts of replica i / parts). In a grid each stage's gradients then go around the ring
// across the replicas once every replica's same stage has its own: 2 (d - 1) sends, its bytes
// at the slower of its uplink and the next replica's downlink. The step ends when the last report
// is in, plus the aggregation.
double simulated_pipeline_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                  PipeSchedule schedule, int micro_batches, int parts,
                                  const std::vector<SimulatedPart>& processes,
                                  double aggregate_seconds);

// A tensor-parallel step: each group moves in lockstep (its all-reduces join every rank), as the
// allreduce topology's ring does: the last rank to have its TASK and compute + the slowest rank's
// ring sends (bytes at the slower of its uplink and its neighbour's downlink, ring_steps x both
// latencies); then, in a grid, the replica ring as above; then the reports and the aggregation.
double simulated_tensor_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round, int parts,
                                const std::vector<SimulatedPart>& processes,
                                double aggregate_seconds);

}  // namespace fedpar
