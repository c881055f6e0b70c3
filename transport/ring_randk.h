// random-k on the ring all-reduce: every worker draws the same k indices from (seed, round)
// (randk_indices, as the random-k codec does), so the ring sums only those k values, a dense
// all-reduce of a k-vector, and puts the sums back at their indices with zeros elsewhere: the
// random-k decoding of the sum of the workers' vectors (unbiased: the sums times d / k), the same
// bits on every worker.
#pragma once

#include <cstdint>
#include <span>

#include "core/codec/codec.h"
#include "transport/ring_allreduce.h"

namespace fedpar {

// Replaces `data` by the random-k decoding of its sum over the ring's `n` workers (this one is
// `rank`). `own`, when not empty (data's size), gets this worker's own contribution as the random-k
// decoding of `data` (error feedback keeps data - own). Every worker calls it alike.
RingStats ring_allreduce_randk(std::span<float> data, int rank, int n, RingLink& link,
                               size_t bucket_floats, const CodecParams& params, uint64_t round,
                               std::span<float> own = {});

}  // namespace fedpar
