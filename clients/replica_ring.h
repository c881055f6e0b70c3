// What a model-parallel process (a pipeline stage, a tensor slice) reports for one step, and the
// ring that joins the same part of a [grid]'s data replicas: after its backward pass each part
// sums its gradients with the ring all-reduce over its replicas, so every replica steps from the
// same sum and stays bitwise identical (the server checks their hashes).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/optimizer.h"
#include "core/run_spec.h"
#include "transport/zmq_ring_link.h"

namespace fedpar {

struct PartStep {
  uint64_t num_samples = 0;                      // this replica's batch
  double loss_sum = 0;                           // one process per replica reports it; 0 elsewhere
  double compute_seconds = 0, link_seconds = 0;  // link: blocked on the model-parallel links
  uint64_t bytes_sent = 0, bytes_received = 0;   // this step's, on the model-parallel links
  double replica_seconds = 0;                    // the replica ring's all-reduce
  uint64_t replica_bytes_sent = 0, replica_bytes_received = 0;
  // [network] simulated: a stage's ops (compute, bytes sent on), a rank's ring sends
  std::vector<double> op_seconds;
  std::vector<uint64_t> op_bytes;
  uint32_t ring_steps = 0;
};

class ReplicaRing {
 public:
  // Listens only when the run has data replicas ([grid] data > 1), on [allreduce]'s bind.
  ReplicaRing(zmq::context_t& ctx, const RunSpec& s, const LinkSecurity& security);
  std::string endpoint() const { return link_ ? link_->endpoint() : ""; }
  void join(int replica, int replicas, const LinkPeer& next);
  int replicas() const { return replicas_; }
  int replica() const { return replica_; }
  // Sums `grads` over the replicas in place (nothing with one); adds its time and bytes to `step`.
  void sum(std::span<float> grads, PartStep& step);
  // The end of part `part` of `parts`'s step: `grads` summed over the replicas, then one SGD step
  // of its host `params` (and the replica-check fault, when the run names this process).
  void apply(std::vector<float> grads, int part, int parts, uint64_t round, HostSgd& sgd,
             std::vector<float>& params, PartStep& step);

 private:
  const RunSpec& s_;
  std::optional<ZmqRingLink> link_;
  int64_t bucket_floats_;
  int replica_ = 0, replicas_ = 1;
};

// The first TASK brings a part its own parameters (and a resumed run's velocity) alone: throws
// Error naming `unit` ("stage", "rank") `index` when `got` is not its `size`.
void check_part_size(size_t got, size_t size, const char* unit, int index);

// Testing the server's replica check: process `process` flips one bit of its `params` after the
// first round when the run names it in allreduce.fault_flip_rank.
void inject_replica_fault(const RunSpec& s, int process, uint64_t round,
                          std::vector<float>& params);

}  // namespace fedpar
