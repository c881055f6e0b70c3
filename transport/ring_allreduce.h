// Bucketed ring all-reduce (reduce-scatter, then all-gather) over an abstract link to the ring's
// neighbours, so the algorithm is tested on its own and the ZeroMQ ring only moves bytes. With N
// workers each sends and receives 2 (N - 1) / N of the vector. Deterministic: chunk c is summed
// in the fixed order x_c + x_{c+1} + ... + x_{c-1} (ranks mod N) whatever the timing, and the
// all-gather copies that one result around, so every worker ends with the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fedpar {

// One worker's links: to the next rank and from the previous. Messages are received in the order
// they were sent; `tag` names the message so a mixed-up ring fails loudly instead of adding the
// wrong chunk. recv_prev throws Error when the neighbour is gone or silent past its deadline.
class RingLink {
 public:
  virtual ~RingLink() = default;
  virtual void send_next(std::span<const float> chunk, uint64_t tag) = 0;
  virtual void recv_prev(std::span<float> into, uint64_t tag) = 0;
  // acc[i] = received[i] + acc[i]; a link may add straight from its receive buffer.
  virtual void recv_prev_add(std::span<float> acc, uint64_t tag);
  // Called on each chunk whose sum is complete, before the all-gather copies it around: a link
  // that carries chunks lossily (a 16-bit cast) rounds it here, so every rank, the chunk's owner
  // too, ends with the bits the others receive.
  virtual void finish(std::span<float> chunk) { (void)chunk; }
  // Returns once every chunk sent so far has left the caller's memory (a link that sends without
  // copying must not let the caller overwrite a chunk still on its way); ring_allreduce calls it
  // before it returns.
  virtual void flush() {}

 private:
  std::vector<float> incoming_;  // recv_prev_add's default buffer
};

struct RingStats {
  uint64_t floats_sent = 0, floats_received = 0;
  int buckets = 0;
};

// Sums `data` over the ring's `n` workers in place; this worker is `rank`. The vector is cut in
// buckets of at most `bucket_floats`, each split in n chunks; every step of the reduce-scatter and
// the all-gather moves one chunk of each bucket, pipelined: a bucket's chunk is forwarded as soon
// as it is summed, while the next bucket's is still on the wire. Every worker must call it with
// the same length, n and bucket size.
RingStats ring_allreduce(std::span<float> data, int rank, int n, RingLink& link,
                         size_t bucket_floats = size_t(1) << 20);

// The tag of a message: bucket, phase (0 reduce-scatter, 1 all-gather) and step.
uint64_t ring_tag(uint64_t bucket, int phase, int step);

}  // namespace fedpar
