// One client process as a stage of the `pipeline` topology: it holds a contiguous slice of the
// model's layers (core/stage.h) and only their parameters, runs its schedule's forwards and
// backwards of every batch's micro-batches, trading activations with the next stage and their
// gradients with the previous one over ZeroMQ (zmq_pipe_link.h), and steps its slice with SGD once
// per batch. The first stage draws the batch from its replica's client and sends each
// micro-batch's labels along with its activations, so the other stages need no data. In a [grid]
// each stage also sums its gradients with the same stage of the other replicas (replica_ring.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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
#include "core/stage.h"
#include "transport/zmq_pipe_link.h"

namespace fedpar {

class PipelineWorker {
 public:
  PipelineWorker(zmq::context_t& ctx, const RunSpec& s, const LinkSecurity& security, Backend& be,
                 Shape input, int classes);
  std::string endpoint() const { return link_.endpoint(); }
  std::string replica_endpoint() const { return replicas_.endpoint(); }
  // Becomes stage `stage` of `stages` (its layers from the run's split) and connects to its
  // neighbours ("" where there is none), and to the next replica's same stage in a [grid].
  void join(int stage, int stages, const LinkPeer& prev, const LinkPeer& next, int replica,
            int replicas, const LinkPeer& replica_next);
  int stage() const { return stage_; }
  int part() const { return stage_; }

  // Takes this stage's parameters (the server sends each stage its own part alone); throws
  // Error when they are not this stage's size.
  void set_params(std::span<const float> part);
  const std::vector<float>& params() const { return params_; }
  // This stage's optimizer velocity, and a resumed run's (its part, as the parameters).
  std::vector<float> velocity() const { return sgd_.velocity(); }
  void set_velocity(std::span<const float> part);
  bool joined() const { return bool(stage_model_); }

  // One batch of `batch` samples (per replica) (the server resolves it, so every stage splits it
  // alike): `shard` and `client` are the data's (only the first stage draws from
  // them). Throws Error when a link fails.
  PartStep step(const Dataset& data, std::span<const uint32_t> shard, uint32_t client,
                int64_t batch, uint64_t round, BatchBuffer& buffer);

  size_t parameter_bytes() const { return stage_model_ ? stage_model_->parameter_bytes() : 0; }
  size_t activation_bytes() const {
    return stage_model_ ? stage_model_->activation_bytes_held() : 0;
  }

 private:
  const RunSpec& s_;
  Backend& be_;
  Shape input_;
  int classes_;
  ZmqPipeLink link_;
  ReplicaRing replicas_;
  int stage_ = -1, stages_ = 0;
  std::unique_ptr<Stage> stage_model_;
  std::vector<float> params_;  // the slice, stepped on the host like the server's model
  HostSgd sgd_;
  DeviceArray<float> in_, dx_;   // a received micro-batch, a gradient to send
  DeviceArray<int32_t> labels_;  // the last stage's micro-batch labels
  std::vector<float> host_;      // staging for what goes on the wire
};

}  // namespace fedpar
