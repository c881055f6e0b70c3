// allreduce.elastic from a worker's side: a re-formed ring redoes the round it broke in, and a
// worker that had already finished that round (the dead one's last chunk had left) goes back to
// the replica and momentum it had before it, so that every survivor redoes it from one state.
// A ring of one stands for the survivors.
#include "clients/allreduce_worker.h"

#include <gtest/gtest.h>

#include "core/batch_buffer.h"
#include "tests/util/local_update_fixture.h"

namespace fedpar {
namespace {

using ElasticWorker = testing::LocalUpdateFixture;

TEST_F(ElasticWorker, AReformGoesBackToTheStateBeforeTheRedoneRound) {
  const RunSpec s = run_spec_from_toml(
      "regime = 'gradient'\ntopology = 'allreduce'\n[allreduce]\nelastic = true\n"
      "deadline_seconds = 2.0\n[optimizer]\nlr = 0.5\nmomentum = 0.9\n"
      "[data]\nname = 'synthetic'\n[model]\nname = 'mlp'\nhidden = [16]\n",
      "test");
  zmq::context_t ctx;
  const LinkSecurity plain;
  AllReduceWorker w(ctx, s, plain);
  w.join(0, 1, {w.endpoint()});
  w.set_replica(w0);
  BatchBuffer buffer(*be, data.train.dim());
  const std::map<uint32_t, std::vector<uint32_t>> shards = {{0, shard}};
  const auto step = [&](uint64_t round) {
    w.step(model, data.train, shards, 0, round, 40, buffer);
  };
  step(0);
  const std::vector<float> after0 = w.replica(), velocity0 = w.velocity();
  step(1);
  const std::vector<float> after1 = w.replica(), velocity1 = w.velocity();
  ASSERT_NE(after1, after0);
  ASSERT_NE(velocity1, velocity0);

  w.reform(0, 1, {w.endpoint()}, 1, /*redo=*/0);  // not the round it last began: nothing moves
  EXPECT_EQ(w.replica(), after1);
  w.reform(0, 1, {w.endpoint()}, 2, /*redo=*/1);  // round 1 is redone: back to before it
  EXPECT_EQ(w.replica(), after0);
  EXPECT_EQ(w.velocity(), velocity0);
  step(1);  // and the redo lands on the same bits
  EXPECT_EQ(w.replica(), after1);
  EXPECT_EQ(w.velocity(), velocity1);
}

}  // namespace
}  // namespace fedpar
