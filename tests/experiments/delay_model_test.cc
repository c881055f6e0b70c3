// The delay model's fit on synthetic rounds with known coefficients: it recovers them, says which
// terms the records cannot separate, and refuses what one N alone cannot identify.
#include "experiments/delay_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"

namespace fedpar {
namespace {

// Known coefficients (seconds, bytes).
constexpr double kPerSample = 20e-6, kComputeFixed = 1e-3;      // compute = c_0 + c_s x samples
constexpr double kPerByteLink = 1e-9, kExchangeFixed = 0.5e-3;  // 1000 MB/s over up + down
constexpr double kPerByteAggregate = 0.25e-9, kAggregateFixed = 0.1e-3;
constexpr double kPerByteBroadcast = 5e-12, kBroadcastFixed = 10e-6;
constexpr double kModelBytes = 796840;  // the 2NN's 199,210 floats
constexpr double kBatch = 600;

// One parameter-server round at N processes (one client each), global batch kBatch; compute per
// client from samples / min(N, cores) (cores = 0: no limit, the seed's B/N). `jitter` adds a
// deterministic wobble to every part.
RoundRecord round_at(int n, int64_t k, int cores = 0, double jitter = 0) {
  RoundRecord r;
  r.round = k;
  r.topology = "parameter-server";
  const double wobble = jitter * std::sin(double(7 * k + n));
  const double per_process = kBatch / (cores ? std::min(n, cores) : n);
  const double compute = kComputeFixed + kPerSample * per_process + wobble;
  const double down = kModelBytes + 64 + 4.0 * n, up = kModelBytes + 40;  // headers differ a little
  std::vector<ClientRecord> clients;
  for (int i = 0; i < n; ++i) {
    clients.push_back({.client = uint32_t(i),
                       .process = i,
                       .bytes_up = uint64_t(up),
                       .compute_seconds = compute,
                       .samples_processed = int64_t(kBatch / n)});
    r.processes.push_back(
        {.process = i, .tasks = 1, .bytes_down = uint64_t(down), .bytes_up = uint64_t(up)});
  }
  r.clients = clients;
  const double bytes_up = n * std::floor(up), bytes_down = n * std::floor(down);
  const double broadcast = kBroadcastFixed + kPerByteBroadcast * bytes_down + wobble / 100;
  const double exchange = kExchangeFixed + kPerByteLink * (bytes_up + bytes_down) + wobble;
  r.broadcast_seconds = broadcast;
  r.wait_seconds = broadcast + compute + exchange;
  r.aggregate_seconds = kAggregateFixed + kPerByteAggregate * bytes_up + wobble / 10;
  return r;
}

std::vector<DelayRound> rounds_over(const std::vector<int>& ns, int cores = 0, double jitter = 0) {
  std::vector<DelayRound> out;
  for (int n : ns)
    for (int64_t k = 1; k <= 6; ++k) out.push_back(*delay_round(round_at(n, k, cores, jitter)));
  return out;
}

TEST(DelayModel, RecoversKnownCoefficients) {
  const auto rounds = rounds_over({1, 2, 4, 8});
  const DelayFit f = fit_delay_model(rounds, 16);  // 16 cores: B/min(N, P) = B/N
  ASSERT_TRUE(f.ok()) << f.why.front();
  EXPECT_EQ(f.rounds, 24u);
  for (int v = 0; v < 2; ++v) {
    EXPECT_NEAR(f.compute_per_sample[v], kPerSample, 1e-6 * kPerSample);
    EXPECT_NEAR(f.compute_fixed[v], kComputeFixed, 1e-6 * kComputeFixed);
  }
  // the headers differ by a few bytes only: up and down are collinear, one throughput is fitted
  EXPECT_FALSE(f.separate_links);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NEAR(f.exchange_per_byte_up, kPerByteLink, 1e-3 * kPerByteLink);
  EXPECT_NEAR(f.exchange_fixed, kExchangeFixed, 1e-2 * kExchangeFixed);
  EXPECT_NEAR(f.aggregate_per_byte, kPerByteAggregate, 1e-6 * kPerByteAggregate);
  EXPECT_NEAR(f.aggregate_fixed, kAggregateFixed, 1e-4 * kAggregateFixed);
  EXPECT_NEAR(f.broadcast_per_byte, kPerByteBroadcast, 1e-3 * kPerByteBroadcast);
  EXPECT_NEAR(f.broadcast_fixed, kBroadcastFixed, 1e-2 * kBroadcastFixed);
  EXPECT_NEAR(f.round_r2[0], 1.0, 1e-9);
  for (const DelayRow& r : delay_rows(f, rounds)) EXPECT_NEAR(r.error(0), 0, 1e-6) << r.processes;
  const std::string md = delay_model_markdown(rounds, 16);
  EXPECT_NE(md.find("The model explains the measured median round time: within 20% at every N"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("c_s = 20.00 µs per sample"), std::string::npos) << md;
  EXPECT_NE(md.find("bw = 1000 MB/s"), std::string::npos) << md;
}

TEST(DelayModel, NoisyRoundsStillRecoverTheSlopes) {
  const DelayFit f = fit_delay_model(rounds_over({1, 2, 4, 8}, 0, 0.2e-3), 16);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f.compute_per_sample[0], kPerSample, 0.05 * kPerSample);
  EXPECT_NEAR(f.exchange_per_byte_up, kPerByteLink, 0.05 * kPerByteLink);
  EXPECT_LT(f.round_r2[0], 1.0);
  EXPECT_GT(f.round_r2[0], 0.9);
}

// A few stalled rounds (a shared machine's scheduler) do not drag the fit: it fits the median.
TEST(DelayModel, StalledRoundsDoNotDragTheFit) {
  std::vector<DelayRound> rounds = rounds_over({1, 2, 4, 8});
  for (size_t i = 0; i < rounds.size(); i += 7) {  // 4 of 24 rounds: 200 ms more in every part
    rounds[i].compute += 0.2, rounds[i].exchange += 0.2, rounds[i].aggregate += 0.2;
    rounds[i].broadcast += 0.2, rounds[i].round += 0.8;
  }
  const DelayFit f = fit_delay_model(rounds, 16);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f.compute_per_sample[0], kPerSample, 1e-3 * kPerSample);
  EXPECT_NEAR(f.exchange_per_byte_up, kPerByteLink, 1e-2 * kPerByteLink);
  EXPECT_NEAR(f.aggregate_per_byte, kPerByteAggregate, 1e-2 * kPerByteAggregate);
  for (const DelayRow& r : delay_rows(f, rounds)) EXPECT_NEAR(r.error(0), 0, 1e-3) << r.processes;
  EXPECT_LT(f.round_r2[0], 0.5);  // R² counts the stalls
}

// Compute that stops falling past 2 cores: the cores-aware variant recovers it, the seed's does
// not.
TEST(DelayModel, CoresAwareComputeOnTwoCores) {
  const auto rounds = rounds_over({1, 2, 4, 8}, 2);
  const DelayFit f = fit_delay_model(rounds, 2);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f.compute_per_sample[1], kPerSample, 1e-6 * kPerSample);
  EXPECT_NEAR(f.compute_fixed[1], kComputeFixed, 1e-6 * kComputeFixed);
  EXPECT_NEAR(f.round_r2[1], 1.0, 1e-9);
  EXPECT_LT(f.compute_r2[0], 0.9);
  const std::string md = delay_model_markdown(rounds, 2);
  EXPECT_NE(md.find("The cores-aware model explains"), std::string::npos) << md;
  EXPECT_NE(md.find("Caveat: this machine has P = 2 cores"), std::string::npos) << md;
  EXPECT_NE(md.find("at N = 4 and 8"), std::string::npos) << md;
}

// One N only: B/N, the bytes and hence every slope are constant: nothing is identified.
TEST(DelayModel, OneNOnlyIsRefused) {
  const auto rounds = rounds_over({4});
  const DelayFit f = fit_delay_model(rounds, 16);
  EXPECT_FALSE(f.ok());
  ASSERT_FALSE(f.why.empty());
  EXPECT_NE(f.why.front().find("B/N takes one value (150) in every round"), std::string::npos)
      << f.why.front();
  const std::string md = delay_model_markdown(rounds, 16);
  EXPECT_NE(md.find("Not fitted"), std::string::npos) << md;
  EXPECT_NE(md.find("exchange: bytes up + down takes one value"), std::string::npos) << md;
  EXPECT_FALSE(delay_model_json(rounds, 16)["fitted"].get<bool>());
}

TEST(DelayModel, NoRoundsIsRefused) { EXPECT_FALSE(fit_delay_model({}, 2).ok()); }

TEST(DelayModel, LeastSquaresSeparatesIndependentRegressors) {
  const std::vector<double> one(5, 1.0), a = {1, 2, 3, 4, 5}, b = {2, 1, 4, 3, 7};
  std::vector<double> y;
  for (size_t i = 0; i < 5; ++i) y.push_back(0.5 + 2 * a[i] - 3 * b[i]);
  const LeastSquares ls = least_squares({one, a, b}, y);
  ASSERT_TRUE(ls.identified());
  EXPECT_NEAR(ls.coef[0], 0.5, 1e-9);
  EXPECT_NEAR(ls.coef[1], 2, 1e-9);
  EXPECT_NEAR(ls.coef[2], -3, 1e-9);
  EXPECT_NEAR(ls.r2, 1, 1e-12);
  // a collinear third column is named, not fitted
  std::vector<double> twice_a;
  for (double v : a) twice_a.push_back(2 * v);
  const LeastSquares bad = least_squares({one, a, twice_a}, y);
  EXPECT_FALSE(bad.identified());
  EXPECT_EQ(bad.unidentified.size(), 1u);
}

// Records without the fields a parameter-server round always carries are an error, not zeros;
// rounds without per-client updates are no delay rounds.
TEST(DelayModel, MissingFieldsAreErrors) {
  RoundRecord r = round_at(2, 1);
  r.broadcast_seconds.reset();
  EXPECT_THROW(delay_round(r), Error);
  RoundRecord none;
  none.topology = "allreduce";
  EXPECT_FALSE(delay_round(none).has_value());
}

// Every N at or above the cores: B / min(N, P) is the same in every round, so the cores-aware
// variant cannot be fitted; the seed's model still is, and the report says what was left out.
TEST(DelayModel, AnUnidentifiableCoresAwareVariantLeavesTheSeedsModelStanding) {
  const DelayFit f = fit_delay_model(rounds_over({2, 4, 8}, 2), 2);
  ASSERT_TRUE(f.ok()) << (f.why.empty() ? "" : f.why[0]);
  EXPECT_FALSE(f.cores_aware);
  EXPECT_GT(f.compute_per_sample[0], 0);
  bool noted = false;
  for (const auto& n : f.notes)
    noted |= n.find("the cores-aware variant is left out") != std::string::npos;
  EXPECT_TRUE(noted);
  const std::string md = delay_model_markdown(rounds_over({2, 4, 8}, 2), 2);
  EXPECT_EQ(md.find("Not fitted"), std::string::npos) << md;
  EXPECT_EQ(md.find("| compute (cores-aware)"), std::string::npos) << md;
}

// A part that is zero in every round fits to zero, not NaN (the robust reweighting's floor).
TEST(DelayModel, AnAllZeroPartFitsToZero) {
  const std::vector<double> ones(6, 1.0), x = {1, 2, 3, 4, 5, 6}, zero(6, 0.0);
  const LeastSquares ls = least_squares({ones, x}, zero, true);
  ASSERT_TRUE(ls.identified());
  EXPECT_EQ(ls.coef[0], 0.0);
  EXPECT_EQ(ls.coef[1], 0.0);
}

}  // namespace
}  // namespace fedpar
