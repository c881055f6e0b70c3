// ReplicaRing; see replica_ring.h.
#include "clients/replica_ring.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "core/check.h"
#include "transport/ring_allreduce.h"

namespace fedpar {

ReplicaRing::ReplicaRing(zmq::context_t& ctx, const RunSpec& s, const LinkSecurity& security)
    : s_(s), bucket_floats_(s.ring_bucket_floats) {
  if (s.grid_data > 1) link_.emplace(ctx, s.ring_bind, s.ring_deadline_seconds, &security);
}

void ReplicaRing::join(int replica, int replicas, const LinkPeer& next) {
  FEDPAR_CHECK(replicas >= 1 && replica >= 0 && replica < replicas)
      << "replica " << replica << " of " << replicas;
  if (replicas > 1 && !link_)
    throw Error("the server assigned data replicas to a run without [grid] data > 1");
  replica_ = replica, replicas_ = replicas;
  if (replicas > 1) link_->connect_next(next);
}

void ReplicaRing::sum(std::span<float> grads, PartStep& step) {
  if (replicas_ == 1) return;
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t sent = link_->bytes_sent(), received = link_->bytes_received();
  ring_allreduce(grads, replica_, replicas_, *link_, size_t(bucket_floats_));
  step.replica_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  step.replica_bytes_sent += link_->bytes_sent() - sent;
  step.replica_bytes_received += link_->bytes_received() - received;
}

void ReplicaRing::apply(std::vector<float> grads, int part, int parts, uint64_t round, HostSgd& sgd,
                        std::vector<float>& params, PartStep& step) {
  sum(grads, step);
  sgd.step(params, grads, s_.optimizer.lr.at(int64_t(round)));
  inject_replica_fault(s_, replica_ * parts + part, round, params);
}

void check_part_size(size_t got, size_t size, const char* unit, int index) {
  if (got != size)
    throw Error(
        fmt::format("malformed TASK from the server: {} {}'s part of the model has {} "
                    "values, the TASK carries {}",
                    unit, index, size, got));
}

void inject_replica_fault(const RunSpec& s, int process, uint64_t round,
                          std::vector<float>& params) {
  if (process != s.fault_flip_rank || round != 0 || params.empty()) return;
  uint32_t bits;
  std::memcpy(&bits, &params[0], sizeof bits);
  bits ^= 1u;
  std::memcpy(&params[0], &bits, sizeof bits);
}

}  // namespace fedpar
