// AllReduceWorker; see allreduce_worker.h.
#include "clients/allreduce_worker.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "clients/replica_ring.h"
#include "clients/straggle.h"
#include "core/check.h"
#include "core/local_update.h"
#include "core/weighted_average.h"
#include "transport/mpi_job.h"
#include "transport/ring_allreduce.h"
#include "transport/ring_randk.h"

namespace fedpar {

AllReduceWorker::AllReduceWorker(zmq::context_t& ctx, const RunSpec& s,
                                 const LinkSecurity& security)
    : s_(s),
      codec_(s.compression.uplink == "fp16" || s.compression.uplink == "bf16"
                 ? make_codec(s.compression.uplink, s.compression.params)
                 : nullptr),
      link_(ctx, s.ring_bind, s.ring_deadline_seconds, &security),
      sgd_(s.optimizer.sgd) {
  link_.set_codec(codec_.get());
  if (s.ring_backend == RingBackend::kMpi && !mpi_job_active())
    throw Error(fmt::format(
        "allreduce.backend = \"mpi\" sums through MPI: start the job with mpirun -n {} fedpar "
        "launch CONFIG (docs/cluster.md), or use backend = \"zmq-ring\"",
        s.processes + 1));
  if (s.ring_backend == RingBackend::kNccl) nccl();  // a build without NCCL says so at once
  if (s.optimizer.precision == Precision::kF16) scaler_.emplace();
}

void AllReduceWorker::join(int rank, int size, const LinkPeer& next, const std::string& nccl_id) {
  FEDPAR_CHECK(size >= 1 && rank >= 0 && rank < size) << "rank " << rank << " of " << size;
  rank_ = rank, size_ = size;
  link_.connect_next(next);
  if (s_.ring_backend != RingBackend::kNccl) return;
  if (nccl_id.empty())
    throw Error("allreduce.backend = \"nccl\": the server's ring assignment carries no NCCL id");
  nccl_ = nccl().join(nccl_id_from_hex(nccl_id), rank, size, s_.ring_deadline_seconds);
}

void AllReduceWorker::reform(int rank, int size, const LinkPeer& next, uint32_t epoch,
                             uint64_t redo) {
  FEDPAR_CHECK(size >= 1 && rank >= 0 && rank < size) << "rank " << rank << " of " << size;
  if (before_.round == redo) {  // it began (or finished) that round: back to where it began
    replica_ = before_.replica;
    sgd_.load_state(before_.sgd, "sgd");
    scaler_ = before_.scaler;
  }
  // Large chunks of the broken ring left as views of sum_ (zero copy) and ZeroMQ may still hold
  // some: the buffer is kept, not freed by the redo's new sum (one model per re-forming).
  retired_.push_back(std::move(sum_));
  rank_ = rank, size_ = size;
  link_.reconnect_next(next, epoch);
}

AllReduceStep AllReduceWorker::step(Model& model, const Dataset& data,
                                    const std::map<uint32_t, std::vector<uint32_t>>& shards,
                                    int64_t batch, uint64_t round, double total_weight,
                                    BatchBuffer& buffer) {
  using Clock = std::chrono::steady_clock;
  FEDPAR_CHECK(replica_.size() == model.num_params())
      << "no replica: the first task carries the model";
  if (s_.ring_elastic) {  // what a redo of this round starts from
    before_.round = round, before_.replica = replica_, before_.scaler = scaler_;
    before_.sgd = Checkpoint{};
    sgd_.save_state(before_.sgd, "sgd");
  }
  AllReduceStep out;
  const auto t0 = Clock::now();
  const Task task{.kind = LocalWork::kGradient,
                  .round = round,
                  .batch = batch,
                  .accumulate = s_.optimizer.accumulate,
                  .scaler = scaler_ ? &*scaler_ : nullptr};
  std::vector<LocalResult> results;
  results.reserve(shards.size());  // the updates view their values
  std::vector<ClientUpdate> updates;
  for (const auto& [c, shard] : shards) {  // client order
    const auto tc = Clock::now();
    const LocalResult& r = results.emplace_back(
        compute_update(model, data, shard, replica_, task, s_.seed, c, &buffer));
    straggle(s_, c, std::chrono::duration<double>(Clock::now() - tc).count());
    updates.push_back({c, round, r.num_samples, r.values});
    out.num_samples += r.num_samples;
    out.loss_sum += r.loss_sum;
  }
  // Gradients of the mean loss times their weight, summed as the server sums (double, client
  // order): the ring then sums the processes' parts of one mean.
  if (updates.empty())
    sum_.assign(replica_.size(), 0.0f);  // a rank without clients adds nothing
  else
    sum_ = weighted_sum(updates, s_.weighting);
  const auto t1 = Clock::now();
  const uint64_t sent = link_.bytes_sent(), received = link_.bytes_received();
  reduce(model.layout(), round);
  out.allreduce_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  out.compute_seconds = std::chrono::duration<double>(t1 - t0).count();
  out.ring_bytes_sent = link_.bytes_sent() - sent;
  out.ring_bytes_received = link_.bytes_received() - received;
  const float inv = float(1.0 / total_weight);
  for (float& v : sum_) v *= inv;
  sgd_.step(replica_, sum_, s_.optimizer.lr.at(int64_t(round)));
  inject_replica_fault(s_, rank_, round, replica_);
  return out;
}

void AllReduceWorker::reduce(const ParamLayout& layout, uint64_t round) {
  const CompressionSpec& c = s_.compression;
  if (s_.ring_backend == RingBackend::kMpi) {  // its bytes are MPI's, not counted here
    mpi_allreduce_clients(sum_);
    return;
  }
  if (s_.ring_backend == RingBackend::kNccl) {  // NCCL's too
    FEDPAR_CHECK(nccl_) << "a step before the ring assignment";
    nccl_->sum(sum_);
    return;
  }
  const size_t bucket = size_t(s_.ring_bucket_floats);
  if (c.uplink != "randk" && c.uplink != "powersgd") {
    ring_allreduce(sum_, rank_, size_, link_, bucket);
    return;
  }
  // error feedback: send p = sum + e, keep e = p - (what this rank's part counts as)
  if (c.error_feedback) {
    residual_.resize(sum_.size(), 0.0f);
    own_.resize(sum_.size());
    for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += residual_[i];
    p_ = sum_;
  }
  const std::span<float> own = c.error_feedback ? std::span<float>(own_) : std::span<float>();
  if (c.uplink == "randk") {
    ring_allreduce_randk(sum_, rank_, size_, link_, bucket, c.params, round, own);
  } else {
    if (!powersgd_)
      powersgd_.emplace(with_layout(c.params, layout).shapes, c.params.rank, c.params.seed);
    powersgd_->allreduce(sum_, rank_, size_, link_, bucket, round, own);
  }
  if (!c.error_feedback) return;
  bool finite = true;  // as ErrorFeedback: a non-finite update leaves the residual as it was
  for (size_t i = 0; i < p_.size(); ++i) finite &= std::isfinite(p_[i]) && std::isfinite(own_[i]);
  if (finite)
    for (size_t i = 0; i < p_.size(); ++i) residual_[i] = p_[i] - own_[i];
}

}  // namespace fedpar
