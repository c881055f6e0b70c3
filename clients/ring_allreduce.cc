// Ring all-reduce; see ring_allreduce.h.
#include "clients/ring_allreduce.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

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

RingStats ring_allreduce(std::span<float> data, int rank, int n, RingLink& link, size_t bucket_floats) {
  FEDPAR_CHECK(n >= 1 && rank >= 0 && rank < n) << "rank " << rank << " of " << n;
  FEDPAR_CHECK(bucket_floats >= 1) << "bucket_floats must be >= 1";
  RingStats st;
  if (n == 1) return st;
  auto mod = [n](int v) { return ((v % n) + n) % n; };
  for (size_t b0 = 0, bucket = 0; b0 < data.size(); b0 += bucket_floats, ++bucket) {
    const std::span<float> part = data.subspan(b0, std::min(bucket_floats, data.size() - b0));
    auto chunk = [&](int c) {  // chunk c of this bucket: [c len / n, (c + 1) len / n)
      const size_t lo = part.size() * size_t(c) / size_t(n), hi = part.size() * size_t(c + 1) / size_t(n);
      return part.subspan(lo, hi - lo);
    };
    // Reduce-scatter: at step s send chunk (rank - s), receive chunk (rank - s - 1) and add this
    // worker's values to it. After n - 1 steps chunk (rank + 1) holds its full sum, added in the
    // ring order starting at its own index.
    for (int s = 0; s < n - 1; ++s) {
      const auto out = chunk(mod(rank - s));
      link.send_next(out, ring_tag(bucket, 0, s));
      const auto in = chunk(mod(rank - s - 1));
      link.recv_prev_add(in, ring_tag(bucket, 0, s));
      st.floats_sent += out.size();
      st.floats_received += in.size();
    }
    // All-gather: pass the finished chunks around; each worker overwrites with what it receives.
    for (int s = 0; s < n - 1; ++s) {
      const auto out = chunk(mod(rank + 1 - s));
      link.send_next(out, ring_tag(bucket, 1, s));
      const auto in = chunk(mod(rank - s));
      link.recv_prev(in, ring_tag(bucket, 1, s));
      st.floats_sent += out.size();
      st.floats_received += in.size();
    }
    ++st.buckets;
  }
  link.flush();
  return st;
}

}  // namespace fedpar
