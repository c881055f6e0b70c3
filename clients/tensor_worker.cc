// TensorWorker; see tensor_worker.h.
#include "clients/tensor_worker.h"

#include <fmt/format.h>

#include <chrono>

#include "core/check.h"
#include "core/local_update.h"
#include "transport/ring_allreduce.h"

namespace fedpar {

TensorWorker::TensorWorker(zmq::context_t& ctx, const RunSpec& s, const LinkSecurity& security,
                           Backend& be, Shape input, int classes)
    : s_(s),
      be_(be),
      input_(input),
      classes_(classes),
      link_(ctx, s.ring_bind, s.ring_deadline_seconds, &security),
      replicas_(ctx, s, security),
      sgd_(s.optimizer.sgd) {}

void TensorWorker::join(int rank, int ways, const LinkPeer& next, int replica, int replicas,
                        const LinkPeer& replica_next) {
  FEDPAR_CHECK(ways >= 1 && rank >= 0 && rank < ways) << "rank " << rank << " of " << ways;
  rank_ = rank, ways_ = ways;
  shard_ = std::make_unique<TensorShard>(be_, s_.model, input_, classes_, rank, ways);
  link_.connect_next(next);
  replicas_.join(replica, replicas, replica_next);
}

void TensorWorker::set_params(std::span<const float> part) {
  FEDPAR_CHECK(shard_) << "the model came before the rank assignment";
  check_part_size(part.size(), shard_->num_params(), "rank", rank_);
  shard_->set_params_host(part);
  params_.assign(part.begin(), part.end());
}

void TensorWorker::set_velocity(std::span<const float> part) {
  FEDPAR_CHECK(shard_) << "the velocity came before the rank assignment";
  check_part_size(part.size(), shard_->num_params(), "rank", rank_);
  sgd_.set_velocity(part);
}

PartStep TensorWorker::step(const Dataset& data, std::span<const uint32_t> shard, uint32_t client,
                            int64_t batch, uint64_t round, BatchBuffer& buffer) {
  using Clock = std::chrono::steady_clock;
  FEDPAR_CHECK(shard_ && !params_.empty()) << "a tensor step before the model came";
  const auto t0 = Clock::now();
  const std::vector<uint32_t> rows = gradient_batch(shard, batch, s_.seed, client, round);
  if (rows.size() != size_t(batch))
    throw Error(fmt::format("the shard gives a batch of {}, the task says {}", rows.size(), batch));
  buffer.load(data, rows);

  PartStep out;
  out.num_samples = uint64_t(batch);
  const uint64_t sent = link_.bytes_sent(), received = link_.bytes_received();
  const size_t bucket = size_t(s_.ring_bucket_floats);
  const AllReduceFn allreduce = [&](std::span<float> v) {
    const auto a = Clock::now();
    ring_allreduce(v, rank_, ways_, link_, bucket);
    out.link_seconds += std::chrono::duration<double>(Clock::now() - a).count();
    if (s_.network.mode == NetworkMode::kSimulated) out.ring_steps += uint32_t(2 * (ways_ - 1));
  };
  shard_->zero_grads();
  // the mean over every replica's batch, once the replica ring has summed the parts
  const BatchStats st = shard_->forward_backward(
      buffer.x(), buffer.y(), int(batch), 1.0f / float(batch * replicas_.replicas()), allreduce);
  if (rank_ == 0) out.loss_sum = st.loss_sum;  // every rank computed the same loss
  replicas_.apply(shard_->grads_host(), rank_, ways_, round, sgd_, params_, out);
  shard_->set_params_host(params_);
  out.bytes_sent = link_.bytes_sent() - sent;
  out.bytes_received = link_.bytes_received() - received;
  out.compute_seconds = std::chrono::duration<double>(Clock::now() - t0).count() -
                        out.link_seconds - out.replica_seconds;
  return out;
}

}  // namespace fedpar
