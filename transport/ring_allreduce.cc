// Ring all-reduce; see ring_allreduce.h.
#include "transport/ring_allreduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/check.h"

namespace fedpar {

uint64_t ring_tag(uint64_t bucket, int phase, int step) {
  return (bucket << 24) | (uint64_t(phase) << 20) | uint64_t(step);
}

void RingLink::recv_prev_add(std::span<float> acc, uint64_t tag) {
  incoming_.resize(acc.size());
  recv_prev(incoming_, tag);
  for (size_t i = 0; i < acc.size(); ++i) acc[i] = incoming_[i] + acc[i];
}

RingStats ring_allreduce(std::span<float> data, int rank, int n, RingLink& link,
                         size_t bucket_floats) {
  FEDPAR_CHECK(n >= 1 && rank >= 0 && rank < n) << "rank " << rank << " of " << n;
  FEDPAR_CHECK(bucket_floats >= 1) << "bucket_floats must be >= 1";
  RingStats st;
  if (n == 1) return st;
  auto mod = [n](int v) { return ((v % n) + n) % n; };
  const size_t buckets = (data.size() + bucket_floats - 1) / bucket_floats;
  if (buckets >= (size_t(1) << 24))  // a tag holds the bucket in bits 24..47 (ring_tag)
    throw Error(
        fmt::format("ring: {} buckets of {} floats; raise allreduce.bucket_floats to at "
                    "least {}",
                    buckets, bucket_floats, data.size() >> 23));
  // Chunk c of bucket j: [c len / n, (c + 1) len / n) of the bucket.
  auto chunk = [&](size_t j, int c) {
    const size_t b0 = j * bucket_floats;
    const std::span<float> part = data.subspan(b0, std::min(bucket_floats, data.size() - b0));
    const size_t lo = part.size() * size_t(c) / size_t(n),
                 hi = part.size() * size_t(c + 1) / size_t(n);
    return part.subspan(lo, hi - lo);
  };
  auto send = [&](std::span<const float> v, uint64_t tag) {
    link.send_next(v, tag);
    st.floats_sent += v.size();
  };
  // Reduce-scatter, then all-gather, bucket by bucket within each step. At reduce-scatter step s
  // this worker receives chunk (rank - s - 1) and adds its own values, so that chunk (rank + 1)
  // ends with its full sum, added in the ring order starting at its own index; the all-gather
  // passes the finished chunks around. Pipelined: a bucket's chunk goes on to the next worker as
  // soon as it is ready, while the following buckets of the same step are still arriving.
  for (size_t j = 0; j < buckets; ++j) send(chunk(j, rank), ring_tag(j, 0, 0));
  for (int s = 0; s < n - 1; ++s) {
    for (size_t j = 0; j < buckets; ++j) {
      const auto in = chunk(j, mod(rank - s - 1));
      link.recv_prev_add(in, ring_tag(j, 0, s));
      st.floats_received += in.size();
      if (s + 1 == n - 1) link.finish(in);
      // The next reduce-scatter step sends this chunk; after the last, it is finished (chunk
      // rank + 1) and starts the all-gather.
      send(in, s + 1 < n - 1 ? ring_tag(j, 0, s + 1) : ring_tag(j, 1, 0));
    }
  }
  for (int s = 0; s < n - 1; ++s) {
    for (size_t j = 0; j < buckets; ++j) {
      const auto in = chunk(j, mod(rank - s));
      link.recv_prev(in, ring_tag(j, 1, s));
      st.floats_received += in.size();
      if (s + 1 < n - 1) send(in, ring_tag(j, 1, s + 1));
    }
  }
  st.buckets = int(buckets);
  link.flush();
  return st;
}

}  // namespace fedpar
