// ClientScorer scores each client's shard as the client's process holds it: a process keeps the
// rows of the clients it hosts, renumbered, and adds each one's feature noise there; the server's
// copies must give the same scores to the bit, or eval_clients would score data no client has.
#include "server/client_evaluation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/backend.h"
#include "core/feature_noise.h"
#include "core/trainer.h"
#include "partitioners/partition.h"

namespace fedpar {
namespace {

TEST(ClientScorer, ScoresEachClientAsItsProcessHoldsItsData) {
  DataOptions d;
  d.name = "synthetic", d.iid = true, d.seed = 5;
  const TrainTest tt = load_dataset(d);
  PartitionParams p;
  p.scheme = "feature-noise", p.clients = 4, p.sigma = 2, p.seed = 5;
  const Manifest m = partition(
      {tt.train.name, tt.train.content_hash(), tt.train.y, tt.train.user, tt.train.num_classes}, p);
  auto be = make_backend("cpu");
  Model model(*be, {"logreg"}, tt.train.shape, tt.train.num_classes);
  model.init(5);
  const ClientScorer scorer(tt.train, m, p);
  const auto scores = scorer.score(model);
  ASSERT_EQ(scores.size(), 4u);

  // a process hosting clients 1 and 3, as clients/client.cc loads and noises its data
  std::vector<uint32_t> held;
  for (uint32_t c : {1u, 3u})
    held.insert(held.end(), m.clients[c].indices.begin(), m.clients[c].indices.end());
  std::sort(held.begin(), held.end());
  Dataset mine = tt.train;
  mine.keep_rows(held);
  for (uint32_t c : {1u, 3u}) {
    std::vector<uint32_t> rows;
    for (uint32_t i : m.clients[c].indices)
      rows.push_back(uint32_t(std::lower_bound(held.begin(), held.end(), i) - held.begin()));
    add_feature_noise(mine.x, mine.dim(), c, feature_noise_level(p, c, 4), rows, p.seed);
    const BatchStats st = evaluate(model, mine, rows);
    EXPECT_EQ(scores[c].samples, st.samples) << c;
    EXPECT_EQ(scores[c].correct, st.correct) << c;
    EXPECT_EQ(scores[c].loss_sum, st.loss_sum) << c;
  }
  // client 0 has no noise: its rows of the training set as they are; the noisiest differs
  const BatchStats clean = evaluate(model, tt.train, m.clients[0].indices);
  EXPECT_EQ(scores[0].loss_sum, clean.loss_sum);
  EXPECT_NE(scores[3].loss_sum, evaluate(model, tt.train, m.clients[3].indices).loss_sum);
  // and scoring again gives the same (the noisy copies are made once, not drawn anew)
  EXPECT_EQ(scorer.score(model)[3].loss_sum, scores[3].loss_sum);
}

// With partition.holdout a client is scored on its held-out samples, which carry its noise too,
// from their own stream (not the training rows' draws again).
TEST(ClientScorer, ScoresHeldOutSamplesWithTheClientsNoise) {
  DataOptions d;
  d.name = "synthetic", d.iid = true, d.seed = 5;
  const TrainTest tt = load_dataset(d);
  PartitionParams p;
  p.scheme = "feature-noise", p.clients = 4, p.sigma = 2, p.seed = 5, p.holdout = 0.25;
  const Manifest m = partition(
      {tt.train.name, tt.train.content_hash(), tt.train.y, tt.train.user, tt.train.num_classes}, p);
  auto be = make_backend("cpu");
  Model model(*be, {"logreg"}, tt.train.shape, tt.train.num_classes);
  model.init(5);
  const auto scores = ClientScorer(tt.train, m, p).score(model);
  ASSERT_EQ(scores.size(), 4u);
  const auto noisy_copy = [&](uint32_t c, NoisePart part) {
    Dataset own = tt.train;
    own.keep_rows(m.clients[c].held_out);
    std::vector<uint32_t> rows(own.size());
    std::iota(rows.begin(), rows.end(), 0u);
    add_feature_noise(own.x, own.dim(), c, feature_noise_level(p, c, 4), rows, p.seed, part);
    return evaluate(model, own);
  };
  for (uint32_t c : {1u, 3u}) {
    const BatchStats st = noisy_copy(c, NoisePart::kHeldOut);
    EXPECT_EQ(scores[c].samples, m.clients[c].held_out.size()) << c;
    EXPECT_EQ(scores[c].loss_sum, st.loss_sum) << c;
    EXPECT_NE(scores[c].loss_sum, noisy_copy(c, NoisePart::kTraining).loss_sum) << c;
  }
  EXPECT_EQ(scores[0].loss_sum, evaluate(model, tt.train, m.clients[0].held_out).loss_sum);
}

}  // namespace
}  // namespace fedpar
