// The client sampling schemes through the round engine (the server and its client processes on
// threads, synthetic data split into clients of unequal sizes): the weights each round's records
// carry are the scheme's, scaled asks uniform's clients and with every client asked ends on
// uniform's very model, and proportional's draws add up to the round's K.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/network.h"
#include "core/run_spec.h"
#include "partitioners/manifest.h"
#include "tests/util/inproc_run.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

constexpr const char* kUnequalRun =
    "seed = 5\nrounds = 8\nprocesses = 2\nregime = 'model'\n"
    "[partition]\nclients = 6\nscheme = 'iid-quantity'\nbeta = 1.0\n"
    "[data]\nname = 'synthetic'\niid = true\n[model]\nname = 'mlp'\nhidden = [16]\n"
    "[local]\nsteps = 2\nbatch = 10\n";

testing::InprocRun run(const TempDir& tmp, const std::string& name, std::vector<std::string> sets) {
  return testing::run_on_threads(kUnequalRun, tmp / "res", name, sets);
}

// Each round's clients and the weight its record gives each.
std::vector<std::map<uint32_t, double>> weights_by_round(const testing::InprocRun& r) {
  std::vector<std::map<uint32_t, double>> out;
  for (const auto& round : r.rounds) {
    auto& mine = out.emplace_back();
    for (const auto& c : round.at("clients"))
      mine[c.at("client").get<uint32_t>()] = c.value("weight", -1.0);
  }
  return out;
}

TEST(ClientSamplingRun, ScaledAsksUniformsClientsWithTheirSchemeWeights) {
  TempDir tmp;
  const auto uniform = run(tmp, "uniform", {"fraction=0.5"});
  const auto scaled = run(tmp, "scaled", {"fraction=0.5", "client_sampling=scaled"});
  const Manifest m = read_manifest(scaled.dir / "manifest.json", 1000000);
  ASSERT_EQ(m.clients.size(), 6u);
  double n = 0;
  for (const auto& c : m.clients) n += double(c.indices.size());
  const auto u = weights_by_round(uniform), s = weights_by_round(scaled);
  ASSERT_EQ(s.size(), 8u);
  for (size_t r = 0; r < s.size(); ++r) {
    ASSERT_EQ(s[r].size(), 3u) << "round " << r + 1;
    for (const auto& [client, w] : s[r]) {
      EXPECT_TRUE(u[r].count(client)) << "round " << r + 1 << " client " << client;
      EXPECT_EQ(u[r].at(client), -1.0) << "uniform's records carry no weight";
      // p_k N / K with N = 6, K = 3
      EXPECT_NEAR(w, double(m.clients[client].indices.size()) / n * 2.0, 1e-12);
    }
  }
  EXPECT_NE(scaled.hash, uniform.hash) << "unequal shards: the scheme's weights move the model";
}

// Where each update's n_k is its shard's size (model averaging, full-batch gradients); a
// mini-batch gradient counts its batch, which uniform weighs alike and scaled by the shard.
TEST(ClientSamplingRun, ScaledWithEveryClientAskedIsUniformsRunBitForBit) {
  TempDir tmp;
  EXPECT_EQ(run(tmp, "scaled", {"client_sampling=scaled"}).hash, run(tmp, "uniform", {}).hash);
  EXPECT_EQ(run(tmp, "scaled-gd", {"regime=gradient", "client_sampling=scaled"}).hash,
            run(tmp, "uniform-gd", {"regime=gradient"}).hash);
  EXPECT_NE(
      run(tmp, "scaled-sgd", {"regime=gradient", "sgd.batch=10", "client_sampling=scaled"}).hash,
      run(tmp, "uniform-sgd", {"regime=gradient", "sgd.batch=10"}).hash);
}

TEST(ClientSamplingRun, ProportionalDrawsAddUpToTheRoundsK) {
  TempDir tmp;
  const auto p = run(tmp, "proportional", {"fraction=0.5", "client_sampling=proportional"});
  int repeated = 0;
  for (const auto& round : weights_by_round(p)) {
    double sum = 0;
    for (const auto& [client, w] : round) {
      EXPECT_NEAR(w * 3, std::round(w * 3), 1e-12) << "a weight is draws / K";
      EXPECT_GT(w, 0.0);
      sum += w;
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
    EXPECT_LE(round.size(), 3u);
    repeated += round.size() < 3;
  }
  EXPECT_GT(repeated, 0) << "with replacement some client is drawn twice in 8 rounds (this seed)";
}

// network.sample_from = "available": a round draws its K among the clients available in it
// (as client_available says), so it asks K whenever K are available; drawing from all of them
// and leaving out the unavailable asks fewer in some round of this seed where K were available.
TEST(ClientSamplingRun, AmongTheAvailableARoundAsksKWheneverKAreAvailable) {
  TempDir tmp;
  const std::vector<std::string> flaky = {"fraction=0.5", "network.mode=simulated",
                                          "network.profile=custom",
                                          "network.custom.availability=0.6"};
  std::vector<std::string> among = flaky;
  among.push_back("network.sample_from=available");
  Config cfg = make_run_config();
  cfg.merge_toml(kUnequalRun, "the test");
  cfg.set_all(among);
  const RunSpec spec = resolve_run_spec(cfg);
  const auto a = run(tmp, "among", among), all = run(tmp, "all", flaky);
  std::vector<std::string> scaled_sets = among;
  scaled_sets.push_back("client_sampling=scaled");
  const auto scaled = run(tmp, "among-scaled", scaled_sets);
  const Manifest m = read_manifest(scaled.dir / "manifest.json", 1000000);
  int fewer_from_all = 0, short_rounds = 0;
  double sum_available = 0;
  for (uint64_t r = 0; r < 8; ++r) {
    std::vector<uint32_t> available;
    for (uint32_t c = 0; c < 6; ++c)
      if (client_available(spec.network, spec.seed, c, r)) available.push_back(c);
    sum_available += double(available.size());
    short_rounds += available.size() < 3;
    // scaled among them: p_k and N theirs, K at most their count
    double n_a = 0;
    for (uint32_t c : available) n_a += double(m.clients[c].indices.size());
    for (const auto& c : scaled.rounds[r].value("clients", nlohmann::json::array()))
      EXPECT_NEAR(c.at("weight").get<double>(),
                  double(m.clients[c.at("client").get<uint32_t>()].indices.size()) / n_a *
                      double(available.size()) / double(std::min<size_t>(3, available.size())),
                  1e-12)
          << "round " << r + 1;
    const auto& rec = a.rounds[r];
    EXPECT_EQ(rec.at("available").get<size_t>(), available.size()) << "round " << r + 1;
    EXPECT_EQ(rec.at("participants").get<size_t>(), std::min<size_t>(3, available.size()));
    EXPECT_TRUE(rec.at("unavailable").empty());
    for (const auto& c : rec.value("clients", nlohmann::json::array()))
      EXPECT_TRUE(std::ranges::binary_search(available, c.at("client").get<uint32_t>()));
    EXPECT_FALSE(all.rounds[r].contains("available"));
    fewer_from_all += available.size() >= 3 && all.rounds[r].at("participants").get<size_t>() < 3;
  }
  EXPECT_GT(fewer_from_all, 0);
  const std::string readme = testing::slurp(a.dir / "README.md");
  EXPECT_NE(readme.find(fmt::format("- the rounds drew their 3 clients among those available in "
                                    "them (`network.sample_from = \"available\"`): {:.1f} "
                                    "available on average",
                                    sum_available / 8)),
            std::string::npos)
      << readme;
  EXPECT_NE(readme.find(fmt::format("; {} of 8 rounds had fewer than 3", short_rounds)),
            std::string::npos)
      << readme;
}

// The README counts each client's aggregated rounds from the records, and sets them beside the
// clients' sizes; a run where every client was in every round says nothing of it.
TEST(ClientSamplingRun, TheReadmeSaysHowOftenEachClientWasAggregated) {
  TempDir tmp;
  const auto p = run(tmp, "proportional", {"fraction=0.5", "client_sampling=proportional"});
  const Manifest m = read_manifest(p.dir / "manifest.json", 1000000);
  std::vector<int> times(6, 0);
  for (const auto& round : weights_by_round(p))
    for (const auto& [client, w] : round) ++times[client];
  size_t largest = 0, smallest = 0;
  for (size_t c = 1; c < 6; ++c) {  // ties: the README names the lowest id largest, the highest
    if (m.clients[c].indices.size() > m.clients[largest].indices.size()) largest = c;
    if (m.clients[c].indices.size() <= m.clients[smallest].indices.size()) smallest = c;
  }
  const std::string readme = testing::slurp(p.dir / "README.md");
  EXPECT_NE(readme.find(fmt::format("- participation (`fraction = 0.5`, `client_sampling = "
                                    "\"proportional\"`): each client's update was aggregated in "
                                    "{} to {} of the 8 rounds",
                                    *std::min_element(times.begin(), times.end()),
                                    *std::max_element(times.begin(), times.end()))),
            std::string::npos)
      << readme;
  EXPECT_NE(
      readme.find(fmt::format("the largest client ({} samples) in {}, the smallest ({}) in {}",
                              m.clients[largest].indices.size(), times[largest],
                              m.clients[smallest].indices.size(), times[smallest])),
      std::string::npos)
      << readme;
  const auto all = run(tmp, "uniform", {});
  EXPECT_EQ(testing::slurp(all.dir / "README.md").find("- participation"), std::string::npos);
}

}  // namespace
}  // namespace fedpar
