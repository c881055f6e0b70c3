// Partition schemes on label vectors shaped like MNIST's: cover, sizes, label bounds, the alpha
// trends, determinism, manifests that survive a round trip, and clear errors.
#include "partitioners/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/check.h"
#include "core/feature_noise.h"
#include "core/rng.h"
#include "partitioners/stats.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

// n samples, `classes` labels in a shuffled order with slightly unequal counts.
std::vector<int32_t> labels_like_mnist(size_t n = 60000, int classes = 10) {
  std::vector<int32_t> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = int32_t((i * 7 / 5) % size_t(classes));
  Rng(3, "test").shuffle(std::span(y));
  return y;
}

const std::vector<int32_t> kNoUsers;
const char* const kGoldenIidHash = "4449b803c3dbbc83";

Manifest run(const std::vector<int32_t>& y, PartitionParams p,
             const std::vector<int32_t>& users = kNoUsers) {
  return partition({"test", "0", y, users, 10}, p);
}

// Every index at most once; returns how many were assigned.
size_t check_disjoint(const Manifest& m, size_t n) {
  std::vector<bool> seen(n, false);
  size_t count = 0;
  for (const auto& c : m.clients)
    for (uint32_t i : c.indices) {
      EXPECT_LT(i, n);
      EXPECT_FALSE(seen[i]) << "sample " << i << " assigned twice";
      seen[i] = true;
      ++count;
    }
  return count;
}

TEST(Partition, SchemesThatUseAllSamplesCoverEachExactlyOnce) {
  const auto y = labels_like_mnist();
  for (const char* scheme : {"iid", "iid-quantity", "shards", "labels-k", "dirichlet-clients",
                             "dirichlet-classes", "feature-noise"}) {
    const Manifest m = run(y, {.scheme = scheme, .clients = 100});
    EXPECT_EQ(m.clients.size(), 100u) << scheme;
    EXPECT_EQ(check_disjoint(m, y.size()), y.size()) << scheme;
  }
}

// Lognormal sizes: a sigma whose weights would overflow is refused by name; the largest allowed
// still hands out every sample once.
TEST(Partition, LognormalSizesRefuseASigmaThatWouldOverflow) {
  const auto y = labels_like_mnist();
  const PartitionParams p{
      .scheme = "iid-quantity", .clients = 10, .sizes = "lognormal", .min_size = 1};
  PartitionParams huge = p, widest = p;
  huge.sigma = 1000;
  widest.sigma = 50;
  EXPECT_NE(testing::error_of([&] { run(y, huge); }).find("sigma must be in [0, 50], got 1000"),
            std::string::npos);
  EXPECT_EQ(check_disjoint(run(y, widest), y.size()), y.size());
}

TEST(Partition, IidSizesDifferByAtMostOne) {
  const auto y = labels_like_mnist(1003);
  const Manifest m = run(y, {.scheme = "iid", .clients = 10});
  for (size_t c = 0; c < 10; ++c) EXPECT_EQ(m.clients[c].indices.size(), c < 3 ? 101u : 100u);
}

TEST(Partition, ShardsFollowFedAvg) {
  const auto y = labels_like_mnist();
  const Manifest m = run(y, {.scheme = "shards", .clients = 100, .shards_per_client = 2});
  const PartitionStats st = partition_stats(m);
  for (const auto& c : st.clients) {
    EXPECT_EQ(c.size, 600u);         // 2 shards of 300
    EXPECT_LE(c.labels_present, 4);  // a shard of sorted labels spans at most 2 labels
  }
  EXPECT_LE(st.labels_present.median, 2.0);
}

TEST(Partition, LabelsKGivesExactlyKLabels) {
  const auto y = labels_like_mnist();
  for (int k : {1, 2, 3}) {
    const Manifest m = run(y, {.scheme = "labels-k", .clients = 50, .labels_per_client = k});
    for (const auto& c : partition_stats(m).clients) EXPECT_EQ(c.labels_present, k) << "k=" << k;
    // client i always holds label i mod 10
    for (const auto& c : m.clients) EXPECT_GT(c.label_histogram[c.id % 10], 0);
  }
}

// Label ids without samples (a CSV's labels 1..3 make 4 classes) are not dealt: each client
// still holds exactly k labels (5 of 6 once held one, dealt the empty label 0).
TEST(Partition, LabelsKDealsOnlyTheLabelsThatHaveSamples) {
  std::vector<int32_t> y;  // labels 1, 2, 3 of the 10 classes
  for (int i = 0; i < 600; ++i) y.push_back(1 + i % 3);
  for (int k : {1, 2, 3}) {
    const Manifest m = run(y, {.scheme = "labels-k", .clients = 6, .labels_per_client = k});
    EXPECT_EQ(check_disjoint(m, y.size()), y.size());  // every label has holders
    for (const auto& c : partition_stats(m).clients) EXPECT_EQ(c.labels_present, k) << "k=" << k;
  }
  std::string why;
  try {
    run(y, {.scheme = "labels-k", .clients = 6, .labels_per_client = 4});
  } catch (const Error& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("k must be between 1 and the number of labels with samples (3 of 10), got 4"),
            std::string::npos)
      << why;
}

TEST(Partition, DirichletConcentrationControlsSkew) {
  const auto y = labels_like_mnist();
  for (const char* scheme : {"dirichlet-classes", "dirichlet-clients"}) {
    auto emd = [&](double a) {
      return partition_stats(run(y, {.scheme = scheme, .clients = 20, .alpha = a, .beta = a}))
          .emd.median;
    };
    const double iid_like = emd(1000.0), skewed = emd(0.1);
    EXPECT_LT(iid_like, 0.15) << scheme;
    EXPECT_GT(skewed, 1.0) << scheme;
  }
}

TEST(Partition, DirichletClassesTerminatesAtTinyBetaWithMinSize) {
  const auto y = labels_like_mnist();
  const Manifest m =
      run(y, {.scheme = "dirichlet-classes", .clients = 100, .beta = 0.01, .min_size = 10});
  for (const auto& c : m.clients) EXPECT_GE(c.indices.size(), 10u);
  EXPECT_EQ(check_disjoint(m, y.size()), y.size());
  EXPECT_LE(partition_stats(m).labels_present.median, 2.0);
  // the top-up is said (it made the split less skewed than beta draws, without a word)
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("dirichlet-classes: none of 100 draws gave every client min_size = "
                            "10 samples, so "),
            std::string::npos)
      << m.notes[0];
  EXPECT_TRUE(run(y, {.scheme = "dirichlet-classes", .clients = 10, .beta = 0.5}).notes.empty());
}

// At a tiny beta a class's Dirichlet shares underflow to 0 on all but one client; when that one
// was full, the class went to every client evenly, so beta = 1e-4 split more evenly than 1e-3.
// Now it is drawn again over the clients not full: each class stays with few clients.
TEST(Partition, DirichletClassesKeepsClassesTogetherAsBetaFallsFurther) {
  const auto y = labels_like_mnist();
  for (double beta : {1e-3, 1e-4, 1e-5}) {
    const Manifest m = run(y, {.scheme = "dirichlet-classes", .clients = 10, .beta = beta});
    EXPECT_EQ(check_disjoint(m, y.size()), y.size());
    for (int label = 0; label < 10; ++label) {
      int holders = 0;
      for (const auto& c : m.clients) holders += c.label_histogram[size_t(label)] > 0;
      EXPECT_LE(holders, 3) << "beta " << beta << ", label " << label;
    }
  }
}

TEST(Partition, IidQuantitySizesRespectMinimum) {
  const auto y = labels_like_mnist();
  for (const char* sizes : {"dirichlet", "lognormal"}) {
    const Manifest m = run(y, {.scheme = "iid-quantity",
                               .clients = 50,
                               .beta = 0.3,
                               .sizes = sizes,
                               .sigma = 1.5,
                               .min_size = 20});
    const PartitionStats st = partition_stats(m);
    EXPECT_GE(st.size.min, 20.0) << sizes;
    EXPECT_GT(st.size.max, 3 * st.size.median) << sizes;  // really unequal
    EXPECT_LT(st.emd.median, 0.5) << sizes;               // labels stay IID
  }
}

TEST(Partition, FeatureNoiseGrowsLinearlyAndIsApplied) {
  const auto y = labels_like_mnist(1000);
  const Manifest m = run(y, {.scheme = "feature-noise", .clients = 5, .sigma = 0.4});
  for (size_t c = 0; c < 5; ++c) EXPECT_DOUBLE_EQ(m.clients[c].noise, 0.1 * double(c));
  std::vector<float> x(1000 * 4, 1.0f);
  auto apply = [&](const ClientShard& c) { add_feature_noise(x, 4, c.id, c.noise, c.indices, 1); };
  apply(m.clients[0]);  // level 0: untouched
  for (uint32_t i : m.clients[0].indices) EXPECT_EQ(x[i * 4], 1.0f);
  apply(m.clients[4]);
  double s2 = 0;
  for (uint32_t i : m.clients[4].indices)
    for (int j = 0; j < 4; ++j) s2 += (x[i * 4 + j] - 1.0) * (x[i * 4 + j] - 1.0);
  EXPECT_NEAR(std::sqrt(s2 / (4.0 * double(m.clients[4].indices.size()))), 0.4, 0.04);
  for (uint32_t i : m.clients[1].indices) EXPECT_EQ(x[i * 4], 1.0f);  // other clients untouched
}

TEST(Partition, NaturalIsOneClientPerUser) {
  const auto y = labels_like_mnist(100);
  std::vector<int32_t> users(100);
  for (size_t i = 0; i < 100; ++i) users[i] = int32_t(i % 7) * 10;  // ids 0, 10, ..., 60
  const Manifest m = run(y, {.scheme = "natural", .clients = 0}, users);
  ASSERT_EQ(m.clients.size(), 7u);
  for (const auto& c : m.clients)
    for (uint32_t i : c.indices) EXPECT_EQ(users[i], int32_t(c.id) * 10);
}

TEST(Partition, SameInputsSameHashEverywhere) {
  const auto y = labels_like_mnist(1000);
  const Manifest a = run(y, {.scheme = "dirichlet-classes", .clients = 10, .seed = 4});
  const Manifest b = run(y, {.scheme = "dirichlet-classes", .clients = 10, .seed = 4});
  const Manifest c = run(y, {.scheme = "dirichlet-classes", .clients = 10, .seed = 5});
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_NE(a.hash, c.hash);
  // Pinned: a change here means manifests from earlier versions no longer reproduce.
  std::vector<int32_t> simple(1000);
  for (size_t i = 0; i < 1000; ++i) simple[i] = int32_t(i % 10);
  EXPECT_EQ(run(simple, {.scheme = "iid", .clients = 10, .seed = 1}).hash, kGoldenIidHash);
}

TEST(Partition, ManifestRoundTripAndValidation) {
  const auto y = labels_like_mnist(500);
  const Manifest m = run(y, {.scheme = "shards", .clients = 5});
  testing::TempDir d;
  write_manifest(d / "m.json", m);
  const Manifest back = read_manifest(d / "m.json", y.size());
  EXPECT_EQ(back.hash, m.hash);
  EXPECT_EQ(back.clients[3].indices, m.clients[3].indices);
  EXPECT_THROW(read_manifest(d / "m.json", 100), Error);  // indices beyond a smaller dataset
  nlohmann::json j = to_json(m);
  j["clients"][0]["indices"][0] = j["clients"][1]["indices"][0];
  EXPECT_THROW(manifest_from_json(j, y.size()), Error);  // a sample held twice
  j = to_json(m);
  j["seed"] = 99;
  EXPECT_THROW(manifest_from_json(j, y.size()), Error);  // hash no longer matches
  j = to_json(m);
  j.erase("clients");
  EXPECT_THROW(manifest_from_json(j, y.size()), Error);
  // numbers that are not integers in range: refused, never cast (a cast is undefined)
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"version", 4.6e20}, {"version", 1.5}, {"seed", 4.6e20}, {"seed", -1}}) {
    j = to_json(m);
    j[key] = value;
    EXPECT_THROW(manifest_from_json(j, y.size()), Error) << key << " = " << value;
  }
  j = to_json(m);
  j["clients"][0]["indices"][0] = 1e30;
  EXPECT_THROW(manifest_from_json(j, y.size()), Error);
}

// partition.holdout moves a share of each client's samples out of its training: the two parts
// together are the client's samples without holdout, disjoint, the share rounded (at least one,
// never all), drawn from the seed, carried through manifest.json and into its hash; and a split
// without holdout keeps the hash it had before holdout existed (the golden hash above).
TEST(Partition, HoldoutSplitsEachClientsSamplesWithoutChangingTheScheme) {
  const auto y = labels_like_mnist(1003);
  for (const char* scheme : {"iid", "labels-k", "dirichlet-classes"}) {
    const PartitionParams p{.scheme = scheme, .clients = 7, .seed = 4};
    PartitionParams ph = p;
    ph.holdout = 0.3;
    const Manifest whole = run(y, p), held = run(y, ph);
    ASSERT_EQ(held.clients.size(), whole.clients.size()) << scheme;
    EXPECT_NE(held.hash, whole.hash) << scheme;
    EXPECT_EQ(held.params.at("holdout"), 0.3) << scheme;
    EXPECT_FALSE(whole.params.contains("holdout")) << scheme;
    for (size_t k = 0; k < whole.clients.size(); ++k) {
      const ClientShard &w = whole.clients[k], &h = held.clients[k];
      EXPECT_TRUE(w.held_out.empty());
      EXPECT_EQ(h.held_out.size(), size_t(std::lround(0.3 * double(w.indices.size())))) << k;
      std::vector<uint32_t> both = h.indices;
      both.insert(both.end(), h.held_out.begin(), h.held_out.end());
      std::sort(both.begin(), both.end());
      EXPECT_EQ(both, w.indices) << scheme << " client " << k;  // disjoint, and all of them
      EXPECT_TRUE(std::is_sorted(h.held_out.begin(), h.held_out.end()));
      int64_t trained = 0;  // the histogram counts what it trains on
      for (int64_t n : h.label_histogram) trained += n;
      EXPECT_EQ(size_t(trained), h.indices.size());
    }
    EXPECT_EQ(held.assigned() + held.held_out(), whole.assigned()) << scheme;
    EXPECT_EQ(partition_stats(held).held_out, held.held_out());
    EXPECT_EQ(unassigned_note(partition_stats(held), y.size()),  // held out is not left out
              unassigned_note(partition_stats(whole), y.size()))
        << scheme;
    ph.seed = 5;  // the share comes from the seed's stream
    EXPECT_NE(run(y, ph).clients[0].held_out, held.clients[0].held_out) << scheme;
    testing::TempDir d;
    write_manifest(d / "m.json", held);
    const Manifest back = read_manifest(d / "m.json", y.size());
    EXPECT_EQ(back.hash, held.hash);
    EXPECT_EQ(back.clients[2].held_out, held.clients[2].held_out);
    nlohmann::json j = to_json(held);  // a held-out sample that is also trained on is refused
    j["clients"][0]["held_out"][0] = j["clients"][0]["indices"][0];
    EXPECT_THROW(manifest_from_json(j, y.size()), Error);
    j = to_json(held);  // and so is a manifest whose held-out samples were edited
    j["clients"][1]["held_out"].erase(0);
    EXPECT_THROW(manifest_from_json(j, y.size()), Error);
  }
  // a run README's statistics read the manifest back, bounded by its largest index: a held-out one
  Manifest m{.scheme = "iid", .seed = 1};
  m.clients = {{.id = 0, .indices = {0, 1}, .held_out = {5}}, {.id = 1, .indices = {2, 3}}};
  m.finalize({0, 1, 0, 1, 0, 1}, 2);
  testing::TempDir d;
  write_manifest(d / "m.json", m);
  EXPECT_EQ(manifest_stats(d / "m.json").held_out, 1u);
  // a small share still holds one out, a large one leaves one to train on
  std::vector<int32_t> simple(1000);
  for (size_t i = 0; i < 1000; ++i) simple[i] = int32_t(i % 10);
  for (const auto& [share, held] : {std::pair{0.001, size_t(1)}, std::pair{0.999, size_t(99)}}) {
    const Manifest m = run(simple, {.scheme = "iid", .clients = 10, .seed = 1, .holdout = share});
    for (const auto& c : m.clients) EXPECT_EQ(c.held_out.size(), held) << share;
  }
}

TEST(Partition, ImpossibleRequestsNameTheConstraint) {
  const auto y = labels_like_mnist(50);
  auto msg = [&](PartitionParams p) {
    try {
      run(y, p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({.scheme = "iid", .clients = 51}).find("51 clients but only 50 samples"),
            std::string::npos);
  EXPECT_NE(msg({.scheme = "labels-k", .clients = 5, .labels_per_client = 11})
                .find("k must be between 1 and"),
            std::string::npos);
  EXPECT_NE(msg({.scheme = "dirichlet-classes", .clients = 5, .beta = 0}).find("beta must be > 0"),
            std::string::npos);
  EXPECT_NE(
      msg({.scheme = "dirichlet-clients", .clients = 5, .alpha = -1}).find("alpha must be > 0"),
      std::string::npos);
  EXPECT_NE(msg({.scheme = "natural", .clients = 0}).find("no user ids"), std::string::npos);
  EXPECT_NE(
      msg({.scheme = "shards", .clients = 30, .shards_per_client = 2}).find("need at least 60"),
      std::string::npos);
  EXPECT_NE(msg({.scheme = "hash"}).find("valid schemes: iid, iid-quantity"), std::string::npos);
  EXPECT_NE(msg({.scheme = "iid", .clients = 0}).find("clients must be >= 1"), std::string::npos);
  EXPECT_NE(msg({.scheme = "iid-quantity", .clients = 5, .min_size = -5})
                .find("iid-quantity: partition.min_size is the fewest samples a client gets, >= 0, "
                      "got -5"),
            std::string::npos);
  EXPECT_EQ(msg({.scheme = "iid", .clients = 5, .min_size = -5}), "no error");  // iid reads none
  for (double share : {-0.1, 1.0, std::nan("")})
    EXPECT_NE(msg({.scheme = "iid", .clients = 5, .holdout = share}).find("0 <= holdout < 1"),
              std::string::npos)
        << share;
  EXPECT_NE(msg({.scheme = "iid", .clients = 50, .holdout = 0.2})
                .find("needs two samples per client (one to train on, one to hold out), but "
                      "client 0 has 1"),
            std::string::npos);
}

TEST(PartitionStats, HandComputedExample) {
  Manifest m;
  m.clients = {{.id = 0, .indices = {0, 1}}, {.id = 1, .indices = {2, 3}}};
  m.finalize({0, 0, 0, 1}, 2);  // global (3/4, 1/4); client 0 (1, 0); client 1 (1/2, 1/2)
  const PartitionStats s = partition_stats(m);
  EXPECT_DOUBLE_EQ(s.clients[0].emd, 0.25 + 0.25);
  EXPECT_DOUBLE_EQ(s.clients[1].emd, 0.25 + 0.25);
  EXPECT_DOUBLE_EQ(s.clients[0].entropy_bits, 0.0);
  EXPECT_DOUBLE_EQ(s.clients[1].entropy_bits, 1.0);
  EXPECT_NEAR(s.clients[0].kl, std::log(4.0 / 3.0), 1e-12);
  EXPECT_NEAR(s.clients[1].kl, 0.5 * std::log(0.5 / 0.75) + 0.5 * std::log(0.5 / 0.25), 1e-12);
  EXPECT_EQ(s.labels_present.min, 1.0);
  EXPECT_EQ(s.assigned, 4u);
  // an empty client (which a run refuses) has no label distribution: it counts in the sizes,
  // not in the label statistics, and its row says so
  m.clients.push_back({.id = 2});
  m.finalize({0, 0, 0, 1}, 2);
  const PartitionStats e = partition_stats(m);
  EXPECT_EQ(e.size.min, 0.0);
  EXPECT_DOUBLE_EQ(e.emd.max, 0.5);  // not the empty client's 1
  EXPECT_EQ(e.labels_present.min, 1.0);
  EXPECT_NE(format_stats(m, e).find("     2       0       0         -       -       -\n"),
            std::string::npos)
      << format_stats(m, e);
  EXPECT_NE(format_stats(m, e).find("(the label rows over the 2 clients holding samples; 1 hold "
                                    "none)"),
            std::string::npos)
      << format_stats(m, e);
}

}  // namespace
}  // namespace fedpar
