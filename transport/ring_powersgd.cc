// PowerSGD on the ring; see ring_powersgd.h.
#include "transport/ring_powersgd.h"

#include <algorithm>

#include "core/check.h"

namespace fedpar {

RingPowerSgd::RingPowerSgd(const std::vector<std::vector<int64_t>>& shapes, uint32_t rank,
                           uint64_t seed)
    : plan_(powersgd_plan(shapes, rank)), rank_(rank), seed_(seed), q_(plan_.size()) {
  FEDPAR_CHECK(rank >= 1) << "powersgd rank " << rank;
  for (const PowerSgdTensor& t : plan_) {
    total_ += t.size();
    first_ += t.factored ? t.rows * rank : t.size();
    second_ += t.factored ? t.cols * rank : 0;
  }
}

RingStats RingPowerSgd::allreduce(std::span<float> data, int rank, int n, RingLink& link,
                                  size_t bucket_floats, uint64_t round, std::span<float> own) {
  FEDPAR_CHECK(data.size() == total_)
      << "powersgd ring: a vector of " << data.size() << " values for tensors of " << total_;
  FEDPAR_CHECK(own.empty() || own.size() == total_) << "powersgd ring: own of " << own.size();
  // First all-reduce: P_i = M_i Q for the matrices, the raw tensors as they are.
  a_.resize(first_);
  size_t at = 0;
  for (size_t t = 0; t < plan_.size(); ++t) {
    const PowerSgdTensor& x = plan_[t];
    const auto m = data.subspan(x.offset, x.size());
    if (!x.factored) {
      std::copy(m.begin(), m.end(), a_.begin() + long(at));
      if (!own.empty()) std::copy(m.begin(), m.end(), own.begin() + long(x.offset));
      at += x.size();
      continue;
    }
    std::vector<float>& q = q_[t];
    if (q.empty()) {  // the workers share Q: drawn as client 0's
      q.resize(x.cols * rank_);
      powersgd_initial_q(seed_, 0, uint32_t(t), q);
    }
    powersgd_redraw_dead_columns(seed_, round, 0, uint32_t(t), x.cols, rank_, q);
    powersgd_mq(m, x.rows, x.cols, q, rank_, std::span(a_).subspan(at, x.rows * rank_));
    at += x.rows * rank_;
  }
  RingStats st = ring_allreduce(a_, rank, n, link, bucket_floats);
  // P^ from the summed P (the same bits on every worker), then Q_i = M_i^T P^.
  b_.resize(second_);
  at = 0;
  size_t bt = 0;
  for (const PowerSgdTensor& x : plan_) {
    if (!x.factored) {
      at += x.size();
      continue;
    }
    const auto p = std::span(a_).subspan(at, x.rows * rank_);
    powersgd_orthonormalise(p, x.rows, rank_);
    const auto qi = std::span(b_).subspan(bt, x.cols * rank_);
    powersgd_mtp(data.subspan(x.offset, x.size()), x.rows, x.cols, p, rank_, qi);
    if (!own.empty())
      powersgd_expand(p, qi, x.rows, x.cols, rank_, own.subspan(x.offset, x.size()));
    at += x.rows * rank_;
    bt += x.cols * rank_;
  }
  const RingStats second = ring_allreduce(b_, rank, n, link, bucket_floats);
  st.floats_sent += second.floats_sent;
  st.floats_received += second.floats_received;
  st.buckets += second.buckets;
  // The result: P^ (sum Q_i)^T for the matrices, the sums for the raw tensors; sum Q_i is the
  // next round's Q.
  at = 0, bt = 0;
  for (size_t t = 0; t < plan_.size(); ++t) {
    const PowerSgdTensor& x = plan_[t];
    const auto m = data.subspan(x.offset, x.size());
    if (!x.factored) {
      std::copy(a_.begin() + long(at), a_.begin() + long(at + x.size()), m.begin());
      at += x.size();
      continue;
    }
    const auto p = std::span<const float>(a_).subspan(at, x.rows * rank_);
    const auto qsum = std::span<const float>(b_).subspan(bt, x.cols * rank_);
    powersgd_expand(p, qsum, x.rows, x.cols, rank_, m);
    q_[t].assign(qsum.begin(), qsum.end());
    at += x.rows * rank_;
    bt += x.cols * rank_;
  }
  return st;
}

}  // namespace fedpar
