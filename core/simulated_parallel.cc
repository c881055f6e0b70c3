// simulated_pipeline_seconds, simulated_tensor_seconds; see simulated_parallel.h.
#include "core/simulated_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/check.h"

namespace fedpar {
namespace {

size_t replicas_of(const std::vector<SimulatedPart>& processes, int parts) {
  if (parts < 1 || processes.empty() || processes.size() % size_t(parts) != 0)
    throw Error(fmt::format("a model-parallel step of {} processes cannot have {} parts",
                            processes.size(), parts));
  return processes.size() / size_t(parts);
}

// When each process's TASK is in.
std::vector<double> task_arrivals(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                  const std::vector<SimulatedPart>& processes) {
  std::vector<SimulatedMessage> tasks;
  for (const SimulatedPart& p : processes) tasks.push_back({p.client, p.down_bytes, 0});
  return simulated_arrivals(n, seed, round, "down", tasks);
}

// From each process's end of its part of the step (`ready`): the ring across the replicas, when
// there is more than one (each part's starts once every replica's same part is ready), then the
// reports; the step's seconds.
double replicas_and_reports(const NetworkSpec& n, uint64_t seed, uint64_t round, int parts,
                            const std::vector<SimulatedPart>& processes, std::vector<double> ready,
                            double aggregate_seconds) {
  const size_t d = replicas_of(processes, parts), p = size_t(parts);
  if (d > 1)
    for (size_t part = 0; part < p; ++part) {
      double start = 0, ring = 0;
      for (size_t r = 0; r < d; ++r) {
        const SimulatedPart& me = processes[r * p + part];
        const uint32_t next = processes[((r + 1) % d) * p + part].client;
        start = std::max(start, ready[r * p + part]);
        ring = std::max(ring, ring_send_seconds(n, me.client, next, me.replica_bytes, 2 * (d - 1)));
      }
      for (size_t r = 0; r < d; ++r) ready[r * p + part] = start + ring;
    }
  std::vector<SimulatedMessage> reports;
  for (size_t i = 0; i < processes.size(); ++i)
    reports.push_back({processes[i].client, processes[i].up_bytes, ready[i]});
  const auto in = simulated_arrivals(n, seed, round, "up", reports);
  return *std::ranges::max_element(in) + aggregate_seconds;
}

}  // namespace

double simulated_pipeline_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                  PipeSchedule schedule, int m, int parts,
                                  const std::vector<SimulatedPart>& processes,
                                  double aggregate_seconds) {
  const size_t d = replicas_of(processes, parts), p = size_t(parts);
  const std::vector<double> task_in = task_arrivals(n, seed, round, processes);
  std::vector<double> ready(processes.size());
  for (size_t r = 0; r < d; ++r) {
    std::vector<PipeStageCosts> costs(p);
    for (size_t s = 0; s < p; ++s) {
      const SimulatedPart& me = processes[r * p + s];
      const std::vector<PipeOp> ops = pipe_ops(schedule, int(s), parts, m);
      if (me.op_bytes.size() != me.op_seconds.size())
        throw Error(fmt::format("stage {}: {} op times but {} op byte counts", s,
                                me.op_seconds.size(), me.op_bytes.size()));
      PipeStageCosts& c = costs[s];
      c.start = task_in[r * p + s];
      c.op_seconds = me.op_seconds;
      for (size_t i = 0; i < std::min(ops.size(), me.op_bytes.size()); ++i) {
        // a forward goes to the next stage, a backward to the previous (none past the ends)
        const bool forward = ops[i].kind == PipeOp::kForward;
        const size_t to = forward ? s + 1 : s - 1;
        const uint32_t other =
            (forward ? s + 1 < p : s > 0) ? processes[r * p + to].client : me.client;
        c.send_seconds.push_back(wire_seconds(n, me.client, other, me.op_bytes[i]));
        c.latency_seconds.push_back(latency_seconds(n, me.client, other));
      }
    }
    const std::vector<double> finish = pipe_finish(schedule, parts, m, costs);  // checks the sizes
    for (size_t s = 0; s < p; ++s) {
      const SimulatedPart& me = processes[r * p + s];
      // what it computed after its last op: the SGD step
      const double ops = std::accumulate(me.op_seconds.begin(), me.op_seconds.end(), 0.0);
      ready[r * p + s] = finish[s] + std::max(0.0, me.compute_seconds - ops);
    }
  }
  return replicas_and_reports(n, seed, round, parts, processes, std::move(ready),
                              aggregate_seconds);
}

double simulated_tensor_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round, int parts,
                                const std::vector<SimulatedPart>& processes,
                                double aggregate_seconds) {
  const size_t d = replicas_of(processes, parts), p = size_t(parts);
  const std::vector<double> task_in = task_arrivals(n, seed, round, processes);
  std::vector<double> ready(processes.size());
  for (size_t r = 0; r < d; ++r) {
    double computed = 0, ring = 0;
    for (size_t k = 0; k < p; ++k) {
      const SimulatedPart& me = processes[r * p + k];
      const uint32_t next = processes[r * p + (k + 1) % p].client;
      computed = std::max(computed, task_in[r * p + k] + me.compute_seconds);
      ring = std::max(ring, ring_send_seconds(n, me.client, next, me.ring_bytes, me.ring_steps));
    }
    for (size_t k = 0; k < p; ++k) ready[r * p + k] = computed + ring;
  }
  return replicas_and_reports(n, seed, round, parts, processes, std::move(ready),
                              aggregate_seconds);
}

}  // namespace fedpar
