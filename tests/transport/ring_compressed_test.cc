// The compressed ring all-reduces on threads joined by in-memory links: random-k sums only the
// round's shared k values, PowerSGD the factors; every worker ends with the same bits, the
// aggregate is the CPU reference's, each worker sends 2 (N - 1) / N of what the formula says, and
// `own` is the worker's part of the result (what error feedback subtracts).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/codec/randk.h"
#include "tests/core/codec/codec_test_util.h"
#include "tests/util/memory_ring.h"
#include "tests/util/test_util.h"
#include "transport/ring_powersgd.h"
#include "transport/ring_randk.h"

namespace fedpar {
namespace {

using testing::random_vector;

std::vector<double> double_sum(const std::vector<std::vector<float>>& x) {
  std::vector<double> s(x[0].size(), 0.0);
  for (const auto& v : x)
    for (size_t i = 0; i < v.size(); ++i) s[i] += v[i];
  return s;
}

TEST(RingRandK, EveryWorkerGetsTheRandKDecodingOfTheSumWithKFloatsOnTheRing) {
  const int n = 3;
  const size_t d = 3000;  // ratio 0.1: k = 300, 100 per chunk
  std::vector<std::vector<float>> x, own(n, std::vector<float>(d));
  for (int r = 0; r < n; ++r) x.push_back(random_vector(d, uint64_t(400 + r)));
  const auto want = double_sum(x);
  auto data = x;
  std::vector<RingStats> st(n);
  testing::on_memory_ring(n, [&](int r, RingLink& link) {
    st[size_t(r)] = ring_allreduce_randk(data[size_t(r)], r, n, link, 1 << 20,
                                         {.ratio = 0.1, .seed = 7}, 5, own[size_t(r)]);
  });
  const auto idx = randk_indices(7, 5, d, 300);
  std::vector<bool> picked(d, false);
  for (uint32_t i : idx) picked[i] = true;
  const auto codec = make_codec("randk", {.ratio = 0.1, .seed = 7});
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(testing::same_bits(data[size_t(r)], data[0])) << "rank " << r;
    EXPECT_EQ(st[size_t(r)].floats_sent, 2u * (n - 1) * 300 / n);
    // a worker's own part is the random-k codec's decoding of its vector in this round
    std::vector<uint8_t> bytes;
    std::vector<float> decoded(d);
    round_trip(*codec, x[size_t(r)], {.round = 5, .client = uint32_t(r)}, bytes, decoded);
    EXPECT_TRUE(testing::same_bits(own[size_t(r)], decoded)) << "rank " << r;
  }
  for (size_t i = 0; i < d; ++i) {
    if (picked[i])
      ASSERT_NEAR(data[0][i], want[i], 1e-5) << i;
    else
      ASSERT_EQ(data[0][i], 0.0f) << i;
  }
}

// randk_unbiased: the same sums, each times float(d / k) on every worker, and `own` is the
// unbiased codec's decoding.
TEST(RingRandK, TheUnbiasedFormScalesTheSumsByDOverK) {
  const int n = 3;
  const size_t d = 3000;  // ratio 0.1: k = 300, scale 10
  std::vector<std::vector<float>> x;
  for (int r = 0; r < n; ++r) x.push_back(random_vector(d, uint64_t(400 + r)));
  auto plain = x, scaled = x;
  std::vector<std::vector<float>> own(n, std::vector<float>(d));
  const CodecParams unbiased{.ratio = 0.1, .seed = 7, .randk_unbiased = true};
  testing::on_memory_ring(n, [&](int r, RingLink& link) {
    ring_allreduce_randk(plain[size_t(r)], r, n, link, 1 << 20, {.ratio = 0.1, .seed = 7}, 5);
  });
  testing::on_memory_ring(n, [&](int r, RingLink& link) {
    ring_allreduce_randk(scaled[size_t(r)], r, n, link, 1 << 20, unbiased, 5, own[size_t(r)]);
  });
  const float s = randk_scale(d, 300, true);
  ASSERT_EQ(s, 10.0f);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < d; ++i)
      ASSERT_EQ(scaled[size_t(r)][i], plain[0][i] * s) << r << " " << i;
    std::vector<uint8_t> bytes;
    std::vector<float> decoded(d);
    round_trip(*make_codec("randk", unbiased), x[size_t(r)], {.round = 5}, bytes, decoded);
    EXPECT_TRUE(testing::same_bits(own[size_t(r)], decoded)) << "rank " << r;
  }
}

// Two tensors factored and two raw at rank 2: a 30x20 weight (2 (30 + 20) < 600), its 20 biases,
// a 4x3 weight (2 (4 + 3) >= 12: raw) and its 4 biases. First all-reduce: 60 + 20 + 12 + 4 = 96
// floats, second: 40.
const std::vector<std::vector<int64_t>> kShapes = {{30, 20}, {20}, {4, 3}, {4}};
constexpr size_t kLen = 600 + 20 + 12 + 4;

struct RingRun {
  std::vector<std::vector<float>> data, own;
  std::vector<RingStats> st;
};

RingRun run_powersgd(std::vector<RingPowerSgd>& workers, const std::vector<std::vector<float>>& x,
                     uint64_t round) {
  const int n = int(x.size());
  RingRun out{x, std::vector<std::vector<float>>(n, std::vector<float>(kLen)),
              std::vector<RingStats>(n)};
  testing::on_memory_ring(n, [&](int r, RingLink& link) {
    out.st[size_t(r)] = workers[size_t(r)].allreduce(out.data[size_t(r)], r, n, link, 1 << 20,
                                                     round, out.own[size_t(r)]);
  });
  return out;
}

TEST(RingPowerSgd, EveryWorkerGetsTheSameBitsOfTheReferencesLowRankSum) {
  const int n = 4;
  std::vector<std::vector<float>> x;
  for (int r = 0; r < n; ++r) x.push_back(random_vector(kLen, uint64_t(500 + r)));
  std::vector<RingPowerSgd> workers(n, RingPowerSgd(kShapes, 2, 11));
  EXPECT_EQ(workers[0].first_floats(), 96u);
  EXPECT_EQ(workers[0].second_floats(), 40u);
  const RingRun got = run_powersgd(workers, x, 0);
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(testing::same_bits(got.data[size_t(r)], got.data[0])) << "rank " << r;
    EXPECT_EQ(got.st[size_t(r)].floats_sent, 2u * (n - 1) * (96 + 40) / n);
  }
  // The reference, in double from the summed matrix: P = (sum M) Q0, P^ = Gram-Schmidt(P),
  // result = P^ P^^T sum M; the raw tensors are plain sums.
  const auto sum = double_sum(x);
  std::vector<float> q0(20 * 2), summed(sum.begin(), sum.begin() + 600), p(30 * 2), q(40),
      want(600);
  powersgd_initial_q(11, 0, 0, q0);
  powersgd_mq(summed, 30, 20, q0, 2, p);
  powersgd_orthonormalise(p, 30, 2);
  powersgd_mtp(summed, 30, 20, p, 2, q);
  powersgd_expand(p, q, 30, 20, 2, want);
  for (size_t i = 0; i < 600; ++i) ASSERT_NEAR(got.data[0][i], want[i], 1e-4) << i;
  for (size_t i = 600; i < kLen; ++i) ASSERT_NEAR(got.data[0][i], sum[i], 1e-5) << i;
  // Each worker's own part, P^ Q_i^T and its raw values, adds up to the result.
  for (size_t i = 0; i < kLen; ++i) {
    double s = 0;
    for (int r = 0; r < n; ++r) s += got.own[size_t(r)][i];
    ASSERT_NEAR(s, got.data[0][i], 1e-4) << i;
  }
  for (size_t i = 600; i < kLen; ++i) ASSERT_EQ(got.own[1][i], x[1][i]) << i;
}

// Workers whose matrices share a rank-2 column space: their sum is rank 2, so after the warm
// start the ring returns it to float rounding, and the shared Q stays the same bits everywhere.
TEST(RingPowerSgd, ARankTwoSumIsRecoveredAfterTheWarmStartedSecondRound) {
  const int n = 3;
  const auto u = random_vector(30 * 2, 600), base = random_vector(kLen, 601);
  std::vector<std::vector<float>> x;
  for (int r = 0; r < n; ++r) {
    auto v = random_vector(20 * 2, uint64_t(610 + r)), m = base;
    for (size_t i = 0; i < 30; ++i)
      for (size_t k = 0; k < 20; ++k)
        m[i * 20 + k] = u[i * 2] * v[k * 2] + u[i * 2 + 1] * v[k * 2 + 1];
    x.push_back(m);
  }
  std::vector<RingPowerSgd> workers(n, RingPowerSgd(kShapes, 2, 3));
  (void)run_powersgd(workers, x, 0);
  const RingRun second = run_powersgd(workers, x, 1);
  const auto sum = double_sum(x);
  double err = 0, norm = 0;
  for (size_t i = 0; i < 600; ++i)
    err += std::pow(second.data[0][i] - sum[i], 2), norm += sum[i] * sum[i];
  EXPECT_LT(std::sqrt(err / norm), 1e-5);
  for (int r = 1; r < n; ++r)
    EXPECT_TRUE(testing::same_bits(second.data[size_t(r)], second.data[0])) << "rank " << r;
}

}  // namespace
}  // namespace fedpar
