// `fedpar partition` as a user runs it: the summary table, the three files, and clear errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/dataset.h"
#include "core/safetensors.h"
#include "partitioners/manifest.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::run_fedpar;

TEST(PartitionCli, MnistShardsWritesManifestStatsAndPicture) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST not fetched: run scripts/setup.sh";
  testing::TempDir tmp;
  const auto out = tmp / "shards";
  auto r = run_fedpar(
      "partition --dataset mnist --scheme shards --clients 100 --out " + out.string(), tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("scheme shards | 100 clients | 60000 samples assigned"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("EMD to global"), std::string::npos);
  const Manifest m = read_manifest(out / "manifest.json", 60000);
  ASSERT_EQ(m.clients.size(), 100u);
  for (const auto& c : m.clients) EXPECT_EQ(c.indices.size(), 600u);
  EXPECT_NE(r.out.find(m.hash), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(out / "stats.json"));
  const std::string svg = testing::slurp(out / "partition.svg");
  EXPECT_TRUE(svg.starts_with("<svg ")) << svg.substr(0, 80);
  // clients of one size: one bar, said in words, not a 20-bin axis from 600 to 600
  EXPECT_NE(svg.find(">every client holds 600 samples<"), std::string::npos);
  EXPECT_EQ(svg.find("size bin"), std::string::npos);
  // Same command, same bytes.
  auto again = run_fedpar(
      "partition --dataset mnist --scheme shards --clients 100 --out " + (tmp / "again").string(),
      tmp.path());
  ASSERT_EQ(again.code, 0);
  EXPECT_EQ(read_manifest(tmp / "again" / "manifest.json", 60000).hash, m.hash);
}

// --out into a folder holding another split refused, naming both hashes, and left it as it was
// (it was overwritten without a word); the same split is written again.
TEST(PartitionCli, AnotherSplitsFolderIsNotOverwritten) {
  testing::TempDir tmp;
  const std::string out = " --out " + (tmp / "p").string();
  auto r =
      run_fedpar("partition --dataset synthetic --scheme shards --clients 10" + out, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string before = testing::slurp(tmp / "p" / "manifest.json");
  r = run_fedpar("partition --dataset synthetic --scheme shards --clients 10" + out, tmp.path());
  EXPECT_EQ(r.code, 0) << r.err;
  testing::expect_refused("partition --dataset synthetic --scheme iid --clients 10" + out,
                          tmp.path(), 2, " already holds another split (manifest.json, ");
  EXPECT_EQ(testing::slurp(tmp / "p" / "manifest.json"), before);
}

TEST(PartitionCli, NaturalOnSyntheticUsers) {
  testing::TempDir tmp;
  auto r = run_fedpar(
      "partition --dataset synthetic --synthetic-alpha 1 --synthetic-beta 1 "
      "--scheme natural --clients 0 --out " +
          (tmp / "nat").string(),
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("scheme natural | 30 clients"), std::string::npos) << r.out;
}

// Without --out the table alone; the defaults are a run's (4 clients); a parameter the scheme
// does not read is warned of, with those it reads.
TEST(PartitionCli, TheTableAloneARunsDefaultsAndParametersTheSchemeDoesNotRead) {
  testing::TempDir tmp;
  auto r = run_fedpar("partition --dataset synthetic --scheme dirichlet-classes --alpha 0.1",
                      tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("scheme dirichlet-classes | 4 clients"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(--out DIR writes manifest.json"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("warning: --scheme dirichlet-classes does not read --alpha (it reads "
                       "--beta, --min-size)"),
            std::string::npos)
      << r.err;
  for (const auto& e : std::filesystem::recursive_directory_iterator(tmp.path()))
    EXPECT_TRUE(e.path().extension() == ".txt") << "written: " << e.path();  // (run_fedpar's)
  r = run_fedpar("partition --dataset synthetic --scheme dirichlet-clients --alpha 0.1",
                 tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  // the run's keys (--set, --config) are warned of as the run would
  r = run_fedpar(
      "partition --set data.name=synthetic --set partition.scheme=dirichlet-clients --set "
      "partition.beta=0.1",
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: the split does not read partition.beta = 0.1: partition.scheme = "
                       "\"dirichlet-clients\" reads partition.alpha"),
            std::string::npos)
      << r.err;
}

// partition.seed holds a run's data and split while its seed changes (Synthetic's draw too):
// the same manifest hash for seeds 1 and 2, another without it.
TEST(PartitionCli, PartitionSeedHoldsTheDataAndTheSplitAcrossRunSeeds) {
  testing::TempDir tmp;
  const auto hash_of = [&](const std::string& sets) {
    const auto r = run_fedpar(
        "partition --set data.name=synthetic --set data.alpha=1 --set data.beta=1 --set "
        "partition.scheme=natural --set partition.clients=0 " +
            sets,
        tmp.path());
    EXPECT_EQ(r.code, 0) << r.err;
    std::smatch m;
    return std::regex_search(r.out, m, std::regex("hash ([0-9a-f]{16})")) ? m[1].str() : "";
  };
  const std::string one = hash_of("--set seed=1 --set partition.seed=7");
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(hash_of("--set seed=2 --set partition.seed=7"), one);
  EXPECT_NE(hash_of("--set seed=2"), hash_of("--set seed=1"));
}

// labels-k with fewer clients than labels gives some labels to no client: said, with which, by
// `fedpar partition` and by a run (its log, README and summary.json's train_samples). It once
// trained on half of MNIST without a word.
TEST(PartitionCli, SamplesNoClientHoldsAreSaid) {
  testing::TempDir tmp;
  const std::string k1 = "--scheme labels-k --labels-per-client 1 --clients 5";
  auto r = run_fedpar("partition --dataset synthetic --synthetic-iid " + k1, tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::regex said(
      "warning: (\\d+) of (\\d+) training samples go to no client \\(no client "
      "holds label 5, 6, 7, 8, 9\\)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, said)) << r.err;
  EXPECT_NE(r.out.find(fmt::format("split {} training samples ({} assigned)", m[2].str(),
                                   std::stoi(m[2].str()) - std::stoi(m[1].str()))),
            std::string::npos)
      << r.out;
  EXPECT_EQ(run_fedpar("partition --dataset synthetic --synthetic-iid --scheme labels-k "
                       "--labels-per-client 1 --clients 10",
                       tmp.path())
                .err.find("go to no client"),
            std::string::npos);
  const auto run =
      testing::run_config(tmp.path(), "[data]\nname = 'synthetic'\niid = true\n", "k1",
                          "--set processes=1 --set rounds=1 --set partition.scheme=labels-k --set "
                          "partition.clients=5 --set partition.labels_per_client=1");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("server: warning: the partition (partition.scheme = \"labels-k\") leaves "
                         "samples out: " +
                         m[0].str().substr(9)),
            std::string::npos)
      << run.err;
  EXPECT_NE(testing::slurp(tmp / "res/k1/README.md").find("; " + m[0].str().substr(9)),
            std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(testing::slurp(tmp / "res/k1/summary.json")).at("train_samples"),
            std::stoi(m[2].str()));
  // the data it trained on is named in the summary, the README and the model file
  EXPECT_EQ(nlohmann::json::parse(testing::slurp(tmp / "res/k1/summary.json")).at("dataset"),
            "synthetic-iid");
  EXPECT_NE(testing::slurp(tmp / "res/k1/README.md").find("on synthetic-iid in the"),
            std::string::npos);
  EXPECT_EQ(load_safetensors(tmp / "res/k1/model.safetensors").metadata.at("dataset"),
            "synthetic-iid");
}

// A run's own split, previewed: --config and --set read the run's keys (its data limits, seed and
// partition); the scheme flags beside them are refused, so the split shown is the run's.
TEST(PartitionCli, ARunConfigsSplitIsPreviewed) {
  testing::TempDir tmp;
  std::ofstream(tmp / "run.toml") << "seed = 3\n[data]\nname = 'synthetic'\niid = true\n"
                                     "train_limit = 1000\n[partition]\nclients = 10\n";
  const auto r =
      run_fedpar("partition --config " + (tmp / "run.toml").string() +
                     " --set partition.scheme=labels-k --set partition.labels_per_client=2",
                 tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("scheme labels-k | 10 clients | 1000 samples assigned | seed 3"),
            std::string::npos)
      << r.out;
  testing::expect_refused("partition --config " + (tmp / "run.toml").string() + " --scheme shards",
                          tmp.path(), 2, "--scheme with --config or --set: give it as --set");
  // a split with empty clients, which the run would refuse, is shown with the warning
  const auto empty =
      run_fedpar("partition --config " + (tmp / "run.toml").string() +
                     " --set data.train_limit=30 --set partition.scheme=iid-quantity "
                     "--set partition.min_size=0 --set partition.clients=25 --out " +
                     (tmp / "empty").string(),
                 tmp.path());
  ASSERT_EQ(empty.code, 0) << empty.err;
  // an empty client has no label distribution: stats.json says so rather than "EMD 1, KL 0"
  const auto stats = nlohmann::json::parse(testing::slurp(tmp / "empty" / "stats.json"));
  size_t empties = 0;
  for (const auto& c : stats.at("clients")) {
    if (c.at("size") != 0) continue;
    ++empties;
    for (const char* k : {"entropy_bits", "emd", "kl"}) EXPECT_TRUE(c.at(k).is_null()) << c;
  }
  EXPECT_GT(empties, 0u);
  EXPECT_EQ(stats.at("summary").at("label_rows_over_clients"), 25 - empties) << stats;
  const std::regex said(
      "warning: (\\d+) client\\(s\\) get no samples \\(client [0-9, .]+\\): "
      "a run refuses this split; raise partition.min_size, lower "
      "partition.clients, train on more samples or choose another scheme");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(empty.err, m, said)) << empty.err;
  EXPECT_GT(std::stoi(m[1].str()), 0);
  const auto refused = testing::run_config(
      tmp.path(), testing::slurp(tmp / "run.toml"), "empty",
      "--set processes=1 --set rounds=1 --set data.train_limit=30 --set "
      "partition.scheme=iid-quantity --set partition.min_size=0 --set partition.clients=25");
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.err.find("no samples: raise partition.min_size"), std::string::npos)
      << refused.err;
}

TEST(PartitionCli, BadRequestsExitTwoWithTheConstraint) {
  testing::TempDir tmp;
  const std::string out = " --out " + (tmp / "x").string();
  auto r = run_fedpar("partition --dataset synthetic --scheme labels-k -k 11" + out, tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("k must be between 1 and the number of labels with samples (10), got 11"),
            std::string::npos)
      << r.err;
  r = run_fedpar("partition --dataset synthetic --scheme natural --clients 5" + out, tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("the dataset has 30 users"), std::string::npos) << r.err;
  r = run_fedpar("partition --dataset synthetic --scheme iid --clients 100000" + out, tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("100000 clients but only"), std::string::npos) << r.err;
  r = run_fedpar("partition --dataset synthetic --scheme dirichlet-classes --beta 0" + out,
                 tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("beta must be > 0"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "x" / "manifest.json"));
  // a run whose partition leaves a client without samples stops before any process starts
  std::ofstream(tmp / "run.toml") << "[data]\nname = 'synthetic'\niid = true\n"
                                     "[partition]\nscheme = 'iid-quantity'\nclients = 100\n"
                                     "min_size = 0\nbeta = 0.01\n";
  r = run_fedpar(
      "run " + (tmp / "run.toml").string() + " --set results_dir=" + (tmp / "res").string(),
      tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no samples: raise partition.min_size"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "res" / "run"));
  // labels-k reads no min_size: the advice does not name it (it was raised, and warned unread)
  testing::expect_refused("run " + (tmp / "run.toml").string() +
                              " --set results_dir=" + (tmp / "res").string() +
                              " --set partition.scheme=labels-k --set "
                              "partition.labels_per_client=1 --set data.train_limit=100",
                          tmp.path(), 2,
                          "gives client 11 no samples: lower partition.clients, train on more "
                          "samples or choose another scheme");
}

// The feature-noise scheme changes what the clients train on: with sigma = 0 the run is the IID
// run bit for bit; with sigma = 1 (client 1 of 2 gets noise of std 1) it ends elsewhere.
TEST(PartitionCli, FeatureNoiseReachesTheClientsData) {
  testing::TempDir tmp;
  std::ofstream(tmp / "run.toml")
      << "seed = 2\nregime = 'gradient'\nrounds = 5\nprocesses = 2\n"
         "[data]\nname = 'synthetic'\niid = true\n[partition]\nclients = 2\n"
         "[sgd]\nbatch = 20\n[optimizer]\nlr = 0.3\n";
  auto run = [&](const std::string& name, const std::string& sets) {
    const auto r = run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                                  (tmp / "res").string() + " --set name=" + name + " " + sets,
                              tmp.path());
    EXPECT_EQ(r.code, 0) << r.err;
    return testing::final_params(tmp / "res" / name);
  };
  const auto iid = run("iid", "");
  EXPECT_EQ(run("none", "--set partition.scheme=feature-noise --set partition.sigma=0"), iid);
  const auto noisy = run("noisy", "--set partition.scheme=feature-noise --set partition.sigma=1");
  EXPECT_GT(testing::relative_distance(noisy, iid), 1e-3);
  EXPECT_EQ(run("again", "--set partition.scheme=feature-noise --set partition.sigma=1"), noisy)
      << "the noise is drawn from the run's seed";
}

}  // namespace
}  // namespace fedpar
