// One client process as a rank of the `allreduce` topology: it keeps its own replica of the
// model, sums its virtual clients' weighted gradients, joins the ring all-reduce with the other
// processes (ring_allreduce.h over ZeroMQ; with uplink randk or powersgd the compressed forms,
// ring_randk.h, ring_powersgd.h, with this rank's error feedback when asked; with
// allreduce.backend = "mpi", MPI_Allreduce over the job's client ranks, transport/mpi_job.h; with
// "nccl", ncclAllReduce on this process's GPU, core/device_collective.h), and applies the same SGD
// step every rank applies.
// Replicas stay bitwise identical because every rank steps from the same bits with the same
// arithmetic; the server checks their hashes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/batch_buffer.h"
#include "core/checkpoint.h"
#include "core/dataset.h"
#include "core/device_collective.h"
#include "core/loss_scaler.h"
#include "core/model.h"
#include "core/optimizer.h"
#include "core/run_spec.h"
#include "transport/ring_powersgd.h"
#include "transport/zmq_ring_link.h"

namespace fedpar {

struct AllReduceStep {
  uint64_t num_samples = 0;  // this rank's samples behind the gradient
  double loss_sum = 0;
  double compute_seconds = 0, allreduce_seconds = 0;
  uint64_t ring_bytes_sent = 0, ring_bytes_received = 0;  // this step's
};

class AllReduceWorker {
 public:
  AllReduceWorker(zmq::context_t& ctx, const RunSpec& s, const LinkSecurity& security);
  std::string endpoint() const { return link_.endpoint(); }  // where the previous rank connects
  // `nccl_id`: allreduce.backend = "nccl"'s communicator (the RING message's; joined here).
  void join(int rank, int size, const LinkPeer& next, const std::string& nccl_id = "");
  // allreduce.elastic: rank `rank` of a ring of `size` re-formed without the dead, sending to
  // `next` from now on. A worker that finished round `redo` (its ring broke after this worker's
  // last chunk) goes back to the replica and optimizer state it had before it, so that every
  // survivor redoes that round from the same state.
  void reform(int rank, int size, const LinkPeer& next, uint32_t epoch, uint64_t redo);
  int rank() const { return rank_; }

  void set_replica(std::span<const float> params) { replica_.assign(params.begin(), params.end()); }
  const std::vector<float>& replica() const { return replica_; }
  // The optimizer's velocity (empty before the first step or without momentum), and back: what
  // a checkpoint keeps of a ring worker besides its replica (every rank holds the same).
  std::vector<float> velocity() const { return sgd_.velocity(); }
  void set_velocity(std::span<const float> v) { sgd_.set_velocity(v); }

  // One synchronous step: g = (sum over all ranks' clients of w_k g_k) / total_weight, w_k = n_k
  // (or 1 with uniform weighting), then replica <- SGD(replica, g, lr). Throws Error when the
  // ring fails (a neighbour died or went silent).
  AllReduceStep step(Model& model, const Dataset& data,
                     const std::map<uint32_t, std::vector<uint32_t>>& shards, int64_t batch,
                     uint64_t round, double total_weight, BatchBuffer& buffer);

 private:
  const RunSpec& s_;
  // The gradient sum over the ring: compressed by uplink randk / powersgd, else ring_allreduce.
  void reduce(const ParamLayout& layout, uint64_t round);

  std::unique_ptr<Codec> codec_;  // what the ring's chunks travel as (fp16, bf16; null: float32)
  std::optional<RingPowerSgd> powersgd_;   // uplink powersgd: its shared Q (made on first use)
  std::vector<float> residual_, own_, p_;  // error feedback: this rank's residual, scratch
  ZmqRingLink link_;
  std::unique_ptr<DeviceAllReduce> nccl_;  // allreduce.backend = "nccl", once joined
  int rank_ = 0, size_ = 1;
  std::vector<float> replica_, sum_;
  std::vector<std::vector<float>> retired_;  // sums of broken rings ZeroMQ may still be sending
  HostSgd sgd_;                              // steps the host replica
  std::optional<LossScaler> scaler_;         // fp16: the loss scale of this worker's gradients
  // allreduce.elastic: the state before the last finished step, and its round
  struct Before {
    uint64_t round = UINT64_MAX;
    std::vector<float> replica;
    Checkpoint sgd;
    std::optional<LossScaler> scaler;
  } before_;
};

}  // namespace fedpar
