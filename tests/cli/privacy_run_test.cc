// DP-FedAvg through the round engine (the server and its client processes on threads, synthetic
// data): Poisson draws whose updates weigh 1 / K, the accountant's epsilon on every round, and
// noise of z S / K on every coordinate of the model in every round, those that drew no client too.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/privacy_accountant.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "tests/util/inproc_run.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::slurp;
using testing::TempDir;

constexpr const char* kRun =
    "seed = 3\nrounds = 12\nprocesses = 2\nregime = 'model'\nweighting = 'uniform'\n"
    "client_sampling = 'poisson'\nfraction = 0.25\n"
    "[partition]\nclients = 20\n"
    "[data]\nname = 'synthetic'\niid = true\n[model]\nname = 'mlp'\nhidden = [16]\n"
    "[local]\nsteps = 2\nbatch = 10\n";

testing::InprocRun run(const TempDir& tmp, const std::string& name, std::vector<std::string> sets,
                       const char* base = kRun) {
  return testing::run_on_threads(base, tmp / "res", name, sets);
}

std::set<uint32_t> clients_of(const nlohmann::json& round) {
  std::set<uint32_t> out;
  for (const auto& c : round.value("clients", nlohmann::json::array()))
    out.insert(c.at("client").get<uint32_t>());
  return out;
}

TEST(PrivacyRun, PoissonDrawsWeighOneOverKAndEveryRoundCountsItsEpsilon) {
  TempDir tmp;
  const auto dp = run(tmp, "dp", {"privacy.clip_norm=0.05", "privacy.noise_multiplier=1"});
  const auto clip = run(tmp, "clip", {"privacy.clip_norm=0.05"});
  ASSERT_EQ(dp.rounds.size(), 12u);
  std::set<size_t> counts;
  double last = 0;
  for (size_t r = 0; r < dp.rounds.size(); ++r) {
    const auto& round = dp.rounds[r];
    const std::set<uint32_t> drawn = clients_of(round);
    counts.insert(drawn.size());
    for (const auto& c : round.value("clients", nlohmann::json::array()))
      EXPECT_EQ(c.at("weight").get<double>(), 0.2);
    EXPECT_LE(round.value("clipped", uint64_t{0}), drawn.size());
    // q = K / N = 5 / 20, z = 1, after r + 1 rounds
    const double eps = round.at("epsilon").get<double>();
    EXPECT_EQ(eps, privacy_spent(0.25, 1, r + 1, 1e-5).epsilon) << "round " << r + 1;
    EXPECT_GT(eps, last);
    last = eps;
    EXPECT_EQ(drawn, clients_of(clip.rounds[r])) << "the draws are the seed's";
    EXPECT_FALSE(clip.rounds[r].contains("epsilon")) << "no noise, no epsilon";
  }
  EXPECT_GT(counts.size(), 1u) << "Poisson's count varies about K = 5: " << counts.size();
  EXPECT_NE(dp.hash, clip.hash);
  const std::string readme = slurp(dp.dir / "README.md");
  EXPECT_NE(readme.find(fmt::format("(epsilon, delta) = ({:.3g}, 1e-05)** after 12 rounds", last)),
            std::string::npos)
      << readme;
  EXPECT_NE(slurp(clip.dir / "README.md").find("**no privacy guarantee**"), std::string::npos);
  EXPECT_EQ(readme.find("is not below 1 / 20 clients"), std::string::npos);
  const auto loose = run(
      tmp, "loose",
      {"rounds=1", "privacy.clip_norm=0.05", "privacy.noise_multiplier=1", "privacy.delta=0.1"});
  EXPECT_NE(slurp(loose.dir / "README.md").find("privacy.delta = 0.1 is not below 1 / 20 clients"),
            std::string::npos);
}

// With the updates clipped to almost nothing, the model moves by the noise alone: after R rounds
// each coordinate has moved by N(0, R (z S / K)^2), rounds that drew no client included (1 of 4
// clients a round: about a third of the rounds draw none).
TEST(PrivacyRun, EveryRoundAddsNoiseOfZSOverKToEveryCoordinate) {
  TempDir tmp;
  const std::vector<std::string> few = {"partition.clients=4", "rounds=16",
                                        "diagnostics.save_params_every=16",
                                        "privacy.clip_norm=1e-4"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), few.begin(), few.end());
    return more;
  };
  auto params = [](const testing::InprocRun& r) {
    std::vector<float> all;
    for (const auto& [name, t] :
         load_safetensors(r.dir / "params" / "round-0016.safetensors").tensors)
      all.insert(all.end(), t.values.begin(), t.values.end());
    return all;
  };
  // the root mean square of the noised model's distance from the noise-free one's
  auto moved = [&](const std::string& name, const std::vector<std::string>& sets) {
    const auto noised = run(tmp, name, with(sets));
    std::vector<std::string> quiet_sets = with(sets);
    quiet_sets.push_back("privacy.noise_multiplier=0");
    const std::vector<float> a = params(noised), b = params(run(tmp, name + "-quiet", quiet_sets));
    EXPECT_EQ(a.size(), b.size());
    EXPECT_GT(a.size(), 1000u);
    double sq = 0;
    for (size_t i = 0; i < a.size(); ++i) sq += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    return std::make_pair(std::sqrt(sq / double(a.size())), noised);
  };
  // z S / K = 100 x 1e-4 / K per round; over 16 rounds sqrt(16) times that
  const auto [one, run_of_one] = moved("k1", {"privacy.noise_multiplier=100"});
  EXPECT_NEAR(one, 4 * 0.01, 0.08 * 4 * 0.01) << "K = 1 of 4 clients";
  size_t empty = 0;
  for (const auto& round : run_of_one.rounds) empty += round.at("participants").get<int>() == 0;
  // at least 4 of 16: without their noise the distance would be sqrt(12) / 4 = 0.87 of it or less
  EXPECT_GE(empty, 4u) << "this seed draws no client in some rounds";
  const auto [two, unused] = moved("k2", {"privacy.noise_multiplier=100", "fraction=0.5"});
  EXPECT_NEAR(two, 4 * 0.005, 0.08 * 4 * 0.005) << "K = 2 of 4 clients";
}

// The adaptive clip through the engine: each round's clip is the last one moved by the rule, with
// the count of updates within it (noised, with noise, from its stream), and without noise it
// settles where the quantile asked of the update norms is.
TEST(PrivacyRun, TheAdaptiveClipFollowsTheQuantileOfTheUpdateNorms) {
  TempDir tmp;
  auto clipped_share = [](const testing::InprocRun& r, size_t from) {
    double clipped = 0, updates = 0;
    for (size_t i = from; i < r.rounds.size(); ++i)
      clipped += r.rounds[i].at("clipped").get<double>(),
          updates += r.rounds[i].at("participants").get<double>();
    return clipped / updates;
  };
  const std::vector<std::string> all = {"fraction=1", "rounds=30", "privacy.clip_norm=1e-3",
                                        "privacy.adaptive_lr=1"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), all.begin(), all.end());
    return more;
  };
  const auto median = run(tmp, "median", with({"privacy.adaptive_quantile=0.5"}));
  ASSERT_EQ(median.rounds.size(), 30u);
  EXPECT_EQ(median.rounds[0].at("clip_norm").get<double>(), 1e-3);
  for (size_t i = 0; i + 1 < 30; ++i) {
    const auto& r = median.rounds[i];
    const double within = r.at("participants").get<double>() - r.at("clipped").get<double>();
    EXPECT_DOUBLE_EQ(median.rounds[i + 1].at("clip_norm").get<double>(),
                     r.at("clip_norm").get<double>() * std::exp(-(within / 20 - 0.5)))
        << "round " << i + 2;
  }
  EXPECT_NEAR(clipped_share(median, 20), 0.5, 0.25) << "the last 10 rounds";
  const auto most = run(tmp, "most", with({"privacy.adaptive_quantile=0.9"}));
  EXPECT_LT(clipped_share(most, 20), 0.3) << "a tenth or so clipped at the 0.9 quantile";
  // with noise the count is noised: sigma_b N(0, 1) from (seed, "dp-count-noise", round)
  const auto noised = run(tmp, "noised",
                          with({"privacy.adaptive_quantile=0.5", "privacy.noise_multiplier=1",
                                "privacy.count_noise=5"}));
  for (size_t i = 0; i + 1 < 30; ++i) {
    const auto& r = noised.rounds[i];
    // each update counts b_k - 1/2 (within the clip: +1/2, beyond: -1/2), then + 1/2 after / K
    const double n = r.at("participants").get<double>(), within = n - r.at("clipped").get<double>();
    const double share = std::clamp(
        (within - n / 2 + 5 * Rng(3, "dp-count-noise", 0, uint32_t(i)).normal()) / 20 + 0.5, 0.0,
        1.0);
    EXPECT_DOUBLE_EQ(noised.rounds[i + 1].at("clip_norm").get<double>(),
                     r.at("clip_norm").get<double>() * std::exp(-(share - 0.5)))
        << "round " << i + 2;
  }
  EXPECT_NE(slurp(median.dir / "README.md").find("followed the 0.5 quantile of the update norms"),
            std::string::npos);
}

// Under the adaptive clip each round's noise is z_Delta C_t / K, C_t that round's clip and z_Delta
// what the count's noise leaves of z: with no client ever there, the model moves by the noise
// alone, round by round (the clip moving by the count's noise alone).
TEST(PrivacyRun, TheAdaptiveClipsNoiseIsItsRoundsClipTimesWhatTheCountLeavesOfZ) {
  TempDir tmp;
  const auto r =
      run(tmp, "away",
          {"rounds=6", "diagnostics.save_params_every=1", "privacy.clip_norm=0.01",
           "privacy.noise_multiplier=1", "privacy.adaptive_quantile=0.5", "privacy.count_noise=0.6",
           "network.mode=simulated", "network.profile=custom", "network.custom.availability=1e-9"});
  const double z_updates = 1 / std::sqrt(1 - 1 / (4 * 0.6 * 0.6));  // 1.81
  auto params = [&](int round) {
    std::vector<float> all;
    for (const auto& [name, t] :
         load_safetensors(r.dir / "params" / fmt::format("round-{:04d}.safetensors", round))
             .tensors)
      all.insert(all.end(), t.values.begin(), t.values.end());
    return all;
  };
  std::set<double> clips;
  for (int round = 2; round <= 6; ++round) {
    const std::vector<float> before = params(round - 1), after = params(round);
    double sq = 0;
    for (size_t i = 0; i < after.size(); ++i)
      sq += (double(after[i]) - before[i]) * (double(after[i]) - before[i]);
    const double clip = r.rounds[size_t(round - 1)].at("clip_norm").get<double>();
    clips.insert(clip);
    const double expected = z_updates * clip / 5;  // K = 5
    EXPECT_NEAR(std::sqrt(sq / double(after.size())), expected, 0.08 * expected) << round;
  }
  EXPECT_EQ(clips.size(), 5u) << "the count's noise moves the clip every round";
}

// Clients that are never there: no round aggregates an update, each still adds the noise and
// counts in epsilon, and the README says that the model is the one it started from plus noise.
TEST(PrivacyRun, ARunThatAggregatedNothingSaysSo) {
  TempDir tmp;
  const auto r =
      run(tmp, "away",
          {"rounds=3", "privacy.clip_norm=0.05", "privacy.noise_multiplier=1",
           "network.mode=simulated", "network.profile=custom", "network.custom.availability=1e-9"});
  ASSERT_EQ(r.rounds.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.rounds[i].at("participants").get<int>(), 0);
    EXPECT_EQ(r.rounds[i].at("epsilon").get<double>(), privacy_spent(0.25, 1, i + 1, 1e-5).epsilon);
  }
  const std::string readme = slurp(r.dir / "README.md");
  EXPECT_NE(readme.find("- **no round of the 3 aggregated an update**: the model is the one the "
                        "run started from, plus [privacy]'s noise"),
            std::string::npos)
      << readme;
  EXPECT_EQ(slurp(run(tmp, "here", {"rounds=3"}).dir / "README.md").find("no round of the"),
            std::string::npos);
}

}  // namespace
}  // namespace fedpar
