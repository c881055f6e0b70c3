// PowerSGD on the ring all-reduce (Vogels et al. 2019, Algorithm 1): for each weight matrix, with a
// Q every worker holds alike (warm-started from the previous round's all-reduced Q), the ring sums
// P_i = M_i Q; every worker orthonormalises that sum the same way (the ring gives every worker the
// same bits), computes Q_i = M_i^T P^, and the ring sums those. The result is P^ (sum Q_i)^T =
// P^ P^^T sum M_i, the same bits on every worker; raw tensors (biases, and matrices whose factors
// would not be smaller) ride in the first all-reduce. Definition: docs/definitions.md#compression
// (PowerSGD).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/codec/powersgd.h"
#include "transport/ring_allreduce.h"

namespace fedpar {

class RingPowerSgd {
 public:
  // `shapes`: the tensors of the vectors to reduce, in order (the model's ParamLayout).
  RingPowerSgd(const std::vector<std::vector<int64_t>>& shapes, uint32_t rank, uint64_t seed);

  // Replaces `data` by the PowerSGD approximation of its sum over the ring's `n` workers (this one
  // is `rank`): two all-reduces, of sum_f n_f r + sum_raw size floats and of sum_f m_f r floats.
  // `own`, when not empty (data's size), gets this worker's own contribution as it counts in the
  // result, P^ Q_i^T for a matrix and its values for a raw tensor (error feedback keeps
  // data - own). Every worker calls it alike, with the same rounds.
  RingStats allreduce(std::span<float> data, int rank, int n, RingLink& link, size_t bucket_floats,
                      uint64_t round, std::span<float> own = {});

  // The floats of the first and second all-reduce.
  size_t first_floats() const { return first_; }
  size_t second_floats() const { return second_; }

 private:
  std::vector<PowerSgdTensor> plan_;
  uint32_t rank_;
  uint64_t seed_;
  size_t total_ = 0, first_ = 0, second_ = 0;
  std::vector<std::vector<float>> q_;  // per factored tensor: the shared Q (empty before use)
  std::vector<float> a_, b_;           // the two all-reduced buffers
};

}  // namespace fedpar
