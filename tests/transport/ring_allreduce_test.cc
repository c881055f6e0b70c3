// The ring all-reduce on N threads joined by in-memory links: every worker ends with the same bits,
// those of the fixed ring order; each sends 2 (N - 1) / N of the vector; a mixed-up message or a
// silent neighbour fails with an Error instead of a wrong sum or a hang.
#include "transport/ring_allreduce.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "core/check.h"
#include "tests/util/memory_ring.h"
#include "tests/util/test_util.h"
#include "transport/zmq_ring_link.h"

namespace fedpar {
namespace {

using testing::Edge;
using testing::MemoryLink;
using testing::random_vector;

// Runs the all-reduce on n threads over copies of `inputs`; returns each worker's result.
std::vector<std::vector<float>> run_ring(const std::vector<std::vector<float>>& inputs,
                                         size_t bucket, std::vector<RingStats>* stats = nullptr) {
  const int n = int(inputs.size());
  std::vector<std::vector<float>> data = inputs;
  std::vector<RingStats> st(static_cast<size_t>(n));
  testing::on_memory_ring(n, [&](int r, RingLink& link) {
    st[size_t(r)] = ring_allreduce(data[size_t(r)], r, n, link, bucket);
  });
  if (stats) *stats = st;
  return data;
}

// The ring's order, written out: per bucket, chunk c summed x_c + x_{c+1} + ... + x_{c-1}.
std::vector<float> ring_order_sum(const std::vector<std::vector<float>>& x, size_t bucket) {
  const size_t n = x.size(), len = x[0].size();
  std::vector<float> out(len);
  for (size_t b0 = 0; b0 < len; b0 += bucket) {
    const size_t blen = std::min(bucket, len - b0);
    for (size_t c = 0; c < n; ++c)
      for (size_t i = b0 + blen * c / n; i < b0 + blen * (c + 1) / n; ++i) {
        float s = x[c][i];
        for (size_t k = 1; k < n; ++k) s = s + x[(c + k) % n][i];
        out[i] = s;
      }
  }
  return out;
}

TEST(RingAllreduce, EveryWorkerGetsTheSameBitsInTheRingOrder) {
  for (int n : {1, 2, 3, 4, 7})
    for (size_t len : {size_t(0), size_t(1), size_t(5), size_t(1000), size_t(100003)})
      for (size_t bucket : {size_t(3), size_t(64), size_t(1) << 20}) {
        if (bucket * 1000 < len) continue;  // tens of thousands of tiny messages add nothing
        std::vector<std::vector<float>> x;
        for (int r = 0; r < n; ++r) x.push_back(random_vector(len, uint64_t(100 + r)));
        const auto got = run_ring(x, bucket);
        const auto want = ring_order_sum(x, bucket);
        for (int r = 0; r < n; ++r)
          ASSERT_EQ(got[size_t(r)], want)
              << "n=" << n << " len=" << len << " bucket=" << bucket << " rank " << r;
        for (size_t i = 0; i < len; ++i) {
          double s = 0;
          for (int r = 0; r < n; ++r) s += x[size_t(r)][i];
          ASSERT_NEAR(got[0][i], s, 1e-5) << i;
        }
      }
}

TEST(RingAllreduce, EachWorkerSendsTwoNMinusOneOverNOfTheVector) {
  for (int n : {2, 4, 8}) {
    const size_t len = 8 * 1000;
    std::vector<std::vector<float>> x(size_t(n), std::vector<float>(len, 1.0f));
    std::vector<RingStats> st;
    const auto got = run_ring(x, len, &st);
    EXPECT_EQ(got[0][len - 1], float(n));
    for (const auto& s : st) {
      EXPECT_EQ(s.floats_sent, 2 * size_t(n - 1) * len / size_t(n)) << "n=" << n;
      EXPECT_EQ(s.floats_received, s.floats_sent);
      EXPECT_EQ(s.buckets, 1);
    }
  }
}

TEST(RingAllreduce, AWrongMessageOrASilentNeighbourIsAnError) {
  Edge out, in;
  MemoryLink link(out, in, std::chrono::milliseconds(200));
  std::vector<float> v(10, 1.0f);
  // Nobody upstream: the first receive waits out its deadline and fails, instead of hanging.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(ring_allreduce(v, 0, 2, link), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  // A message with another tag (a ring out of step) is refused, not added.
  in.q.emplace_back(ring_tag(0, 1, 0), std::vector<float>(5, 1.0f));
  try {
    ring_allreduce(v, 0, 2, link);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
  }
}

// The ring over ZeroMQ sockets (tcp on localhost), one thread per rank, chunks carried raw or
// encoded with `codec`: every rank's result and the bytes rank 0 sent.
struct ZmqRingResult {
  std::vector<std::vector<float>> data;
  uint64_t rank0_bytes_sent = 0;
};

ZmqRingResult run_zmq_ring(const std::vector<std::vector<float>>& x, size_t bucket,
                           const Codec* codec = nullptr) {
  const int n = int(x.size());
  zmq::context_t ctx;
  std::vector<std::unique_ptr<ZmqRingLink>> links;
  for (int r = 0; r < n; ++r) {
    links.push_back(std::make_unique<ZmqRingLink>(ctx, "tcp://127.0.0.1:*", 10.0));
    links.back()->set_codec(codec);
  }
  for (int r = 0; r < n; ++r)
    links[size_t(r)]->connect_next({links[size_t((r + 1) % n)]->endpoint()});
  ZmqRingResult out{x};
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back(
        [&, r] { ring_allreduce(out.data[size_t(r)], r, n, *links[size_t(r)], bucket); });
  for (auto& t : threads) t.join();
  out.rank0_bytes_sent = links[0]->bytes_sent();
  return out;
}

// The same ring over ZeroMQ sockets (tcp on localhost): the same bits as the in-memory ring, the
// bytes each worker moves, and a dead neighbour detected within the deadline.
TEST(RingAllreduce, OverZeroMqTheSameBitsAndBytes) {
  const int n = 4;
  const size_t len = 100003;
  std::vector<std::vector<float>> x;
  for (int r = 0; r < n; ++r) x.push_back(random_vector(len, uint64_t(200 + r)));
  const ZmqRingResult got = run_zmq_ring(x, 1 << 14);
  const auto want = run_ring(x, 1 << 14);
  for (int r = 0; r < n; ++r) EXPECT_EQ(got.data[size_t(r)], want[0]) << "rank " << r;
  const double payload = 2.0 * (n - 1) / n * double(len) * sizeof(float);
  EXPECT_NEAR(double(got.rank0_bytes_sent), payload, 0.01 * payload);
}

// With fp16 on the wire every hop rounds its partial sum and the finished chunk is rounded before
// the all-gather: every rank gets the same bits, those of the ring order with a rounding at each
// hop, and half the bytes.
TEST(RingAllreduce, OverZeroMqA16BitCastKeepsReplicasBitwiseEqualWithHalfTheBytes) {
  const int n = 3;
  const size_t len = 30011, bucket = 1 << 12;
  std::vector<std::vector<float>> x;
  for (int r = 0; r < n; ++r) x.push_back(random_vector(len, uint64_t(300 + r)));
  const auto fp16 = make_codec("fp16", {});
  const ZmqRingResult got = run_zmq_ring(x, bucket, fp16.get());
  auto h = [&](float v) {
    std::vector<uint8_t> bytes;
    std::vector<float> out(1);
    round_trip(*fp16, std::vector<float>{v}, {}, bytes, out);
    return out[0];
  };
  std::vector<float> want(len);
  for (size_t b0 = 0; b0 < len; b0 += bucket) {
    const size_t blen = std::min(bucket, len - b0);
    for (size_t c = 0; c < size_t(n); ++c)
      for (size_t i = b0 + blen * c / n; i < b0 + blen * (c + 1) / n; ++i) {
        float sum = x[c][i];
        for (size_t k = 1; k < size_t(n); ++k) sum = h(sum) + x[(c + k) % n][i];
        want[i] = h(sum);
      }
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(got.data[size_t(r)], want) << "rank " << r;
  const double payload = 2.0 * (n - 1) / n * double(len) * sizeof(uint16_t);
  EXPECT_NEAR(double(got.rank0_bytes_sent), payload, 0.01 * payload);
}

TEST(RingAllreduce, OverZeroMqADeadNeighbourStopsTheRingWithinTheDeadline) {
  zmq::context_t ctx;
  ZmqRingLink a(ctx, "tcp://127.0.0.1:*", 0.3), b(ctx, "tcp://127.0.0.1:*", 0.3);
  a.connect_next({b.endpoint()});
  b.connect_next({a.endpoint()});
  std::vector<float> v(1000, 1.0f);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ring_allreduce(v, 0, 2, a);  // rank 1 never runs: it "died"
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did it die?"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

// A re-formed ring (allreduce.elastic) drops what the broken ring left queued: a chunk sent
// before the epoch changed is skipped, the same tag sent after it is the one received.
TEST(RingAllreduce, AReformedRingSkipsTheChunksOfTheBrokenOne) {
  zmq::context_t ctx;
  ZmqRingLink a(ctx, "tcp://127.0.0.1:*", 2.0), b(ctx, "tcp://127.0.0.1:*", 2.0);
  b.connect_next({a.endpoint()});
  const std::vector<float> stale = {1, 2, 3}, fresh = {4, 5, 6};
  b.send_next(stale, 5);
  b.flush();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // queued at a, unread
  b.reconnect_next({a.endpoint()}, 1);
  a.reconnect_next({b.endpoint()}, 1);
  b.send_next(fresh, 5);
  std::vector<float> got(3);
  a.recv_prev(got, 5);
  EXPECT_EQ(got, fresh);
}

}  // namespace
}  // namespace fedpar
