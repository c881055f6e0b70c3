// One client process as a rank of the `tensor` topology: it holds its slice of every dense pair
// (core/tensor_shard.h: a column slice of the first layer, the matching row slice of the second)
// and the replicated layers whole, and runs each batch's forward and backward with its group's
// other ranks, all-reducing the row layers' partial outputs and the column layers' input
// gradients over a ring among them (ring_allreduce.h over ZeroMQ). Every rank of a group draws
// the same batch from its replica's client (the data is replicated, as Megatron-LM's tensor
// groups share their input), then steps its own slice with SGD. In a [grid] each rank also sums
// its gradients with the same rank of the other replicas (replica_ring.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "clients/replica_ring.h"
#include "core/backend.h"
#include "core/batch_buffer.h"
#include "core/dataset.h"
#include "core/optimizer.h"
#include "core/run_spec.h"
#include "core/tensor_shard.h"
#include "transport/zmq_ring_link.h"

namespace fedpar {

class TensorWorker {
 public:
  TensorWorker(zmq::context_t& ctx, const RunSpec& s, const LinkSecurity& security, Backend& be,
               Shape input, int classes);
  std::string endpoint() const { return link_.endpoint(); }
  std::string replica_endpoint() const { return replicas_.endpoint(); }
  // Becomes rank `rank` of `ways` (its slices) and connects to the next rank, and to the next
  // replica's same rank in a [grid].
  void join(int rank, int ways, const LinkPeer& next, int replica, int replicas,
            const LinkPeer& replica_next);
  bool joined() const { return bool(shard_); }
  int rank() const { return rank_; }
  int part() const { return rank_; }

  // Takes this rank's parameters (the server sends each rank its own part alone); throws
  // Error when they are not this rank's size.
  void set_params(std::span<const float> part);
  const std::vector<float>& params() const { return params_; }
  // This rank's optimizer velocity, and a resumed run's (its part, as the parameters).
  std::vector<float> velocity() const { return sgd_.velocity(); }
  void set_velocity(std::span<const float> part);

  // One batch of `batch` samples from `client`'s `shard` (every rank of the group draws the same
  // rows). Throws Error when the ring fails.
  PartStep step(const Dataset& data, std::span<const uint32_t> shard, uint32_t client,
                int64_t batch, uint64_t round, BatchBuffer& buffer);

  size_t parameter_bytes() const { return shard_ ? shard_->parameter_bytes() : 0; }
  size_t activation_bytes() const { return shard_ ? shard_->activation_bytes_held() : 0; }

 private:
  const RunSpec& s_;
  Backend& be_;
  Shape input_;
  int classes_;
  ZmqRingLink link_;
  ReplicaRing replicas_;
  int rank_ = -1, ways_ = 0;
  std::unique_ptr<TensorShard> shard_;
  std::vector<float> params_;  // this rank's slices, stepped on the host
  HostSgd sgd_;
};

}  // namespace fedpar
