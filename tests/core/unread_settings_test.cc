// Settings a run does not read are named with why, so a config cannot quietly ask for another run
// than the one it gets (partition.alpha beside dirichlet-classes ran at the default beta); those
// the run reads, and defaults, are not.
#include "core/unread_settings.h"

#include <gtest/gtest.h>

#include "core/results_dir.h"

namespace fedpar {
namespace {

// Each unread setting of the run config with `sets`, as "key: why".
std::vector<std::string> unread(const std::vector<std::string>& sets) {
  Config c = make_run_config();
  c.set_all(sets);
  std::vector<std::string> out;
  for (const UnreadSetting& u : unread_settings(c, resolve_run_spec(c)))
    out.push_back(u.key + ": " + u.why);
  return out;
}

using Lines = std::vector<std::string>;

TEST(UnreadSettings, APartitionSchemeReadsItsOwnParametersOnly) {
  EXPECT_EQ(unread({"partition.scheme=dirichlet-classes", "partition.alpha=0.1"}),
            Lines{"partition.alpha: partition.scheme = \"dirichlet-classes\" reads partition.beta, "
                  "partition.min_size (its Dirichlet concentration is partition.beta)"});
  EXPECT_EQ(unread({"partition.scheme=dirichlet-clients", "partition.beta=0.1"}),
            Lines{"partition.beta: partition.scheme = \"dirichlet-clients\" reads "
                  "partition.alpha (its Dirichlet concentration is partition.alpha)"});
  // a non-IID parameter with the scheme left at iid
  EXPECT_EQ(unread({"partition.alpha=0.1"}),
            Lines{"partition.alpha: partition.scheme = \"iid\" reads no parameter of its own: set "
                  "partition.scheme for a non-IID split"});
  // iid-quantity reads beta or sigma by its sizes
  EXPECT_EQ(unread({"partition.scheme=iid-quantity", "partition.sigma=2"}).size(), 1u);
  EXPECT_TRUE(
      unread({"partition.scheme=iid-quantity", "partition.sizes=lognormal", "partition.sigma=2"})
          .empty());
  EXPECT_TRUE(unread({"partition.scheme=dirichlet-clients", "partition.alpha=0.1"}).empty());
  EXPECT_TRUE(unread({"partition.scheme=shards", "partition.shards_per_client=3"}).empty());
  EXPECT_TRUE(unread({"partition.clients=10"}).empty());
}

TEST(UnreadSettings, ParametersOfAnOptimizerRuleAttackOrCodecNotChosen) {
  EXPECT_EQ(unread({"regime=model", "server_optimizer.beta1=0.5"}),
            Lines{"server_optimizer.beta1: server_optimizer.name = \"sgd\" does not use it"});
  EXPECT_EQ(unread({"regime=model", "server_optimizer.name=avgm", "server_optimizer.beta1=0.5",
                    "server_optimizer.beta2=0.9", "server_optimizer.tau=0.01"}),
            (Lines{"server_optimizer.beta2: server_optimizer.name = \"avgm\" does not use it",
                   "server_optimizer.tau: server_optimizer.name = \"avgm\" does not use it"}));
  EXPECT_TRUE(unread({"regime=model", "server_optimizer.name=adam", "server_optimizer.beta2=0.9",
                      "server_optimizer.tau=0.01", "local.server_lr=0.1"})
                  .empty());
  EXPECT_EQ(unread({"robust.trim=0.2", "robust.clip_norm=1"}),
            Lines{"robust.trim: robust.rule = \"mean\" does not use it"});
  EXPECT_TRUE(unread({"robust.rule=trimmed-mean", "robust.trim=0.25"}).empty());
  EXPECT_EQ(unread({"client_sampling=poisson", "weighting=uniform", "privacy.clip_norm=1",
                    "privacy.delta=1e-6"}),
            Lines{"privacy.delta: privacy.noise_multiplier = 0: without noise there is no "
                  "(epsilon, delta) to report"});
  EXPECT_EQ(unread({"attack.kind=noise", "attack.clients=1", "attack.scale=5"}),
            Lines{"attack.scale: attack.kind = \"noise\" does not use it"});
  EXPECT_EQ(unread({"attack.clients=1"}).size(), 1u);  // no attack at all
  EXPECT_EQ(unread({"compression.ratio=0.1"}),
            Lines{"compression.ratio: no codec of the run uses it (compression.uplink = \"none\", "
                  "compression.downlink = \"none\")"});
  EXPECT_TRUE(unread({"compression.uplink=topk", "compression.ratio=0.1"}).empty());
  EXPECT_EQ(unread({"compression.uplink=topk", "compression.levels=8"}).size(), 1u);
  EXPECT_EQ(unread({"compression.uplink=topk", "compression.randk_unbiased=true"}).size(), 1u);
  EXPECT_TRUE(unread({"compression.uplink=randk", "compression.randk_unbiased=true"}).empty());
}

TEST(UnreadSettings, TablesOfAnotherTopologyOrRegime) {
  EXPECT_EQ(unread({"pipeline.micro_batches=2"}),
            Lines{"pipeline.micro_batches: topology = \"parameter-server\" has no pipeline"});
  EXPECT_EQ(unread({"allreduce.bucket_floats=1000"}),
            Lines{"allreduce.bucket_floats: topology = \"parameter-server\" has no ring of "
                  "workers"});
  EXPECT_TRUE(unread({"regime=gradient", "topology=allreduce", "processes=2",
                      "allreduce.bucket_floats=1000"})
                  .empty());
  EXPECT_TRUE(unread({"regime=gradient", "topology=tensor", "processes=2", "partition.clients=1",
                      "allreduce.bucket_floats=1000"})
                  .empty());
  // a pipeline without replicas has none to check, but still injects the check's test fault
  const std::vector<std::string> pipeline = {"regime=gradient", "topology=pipeline", "processes=2",
                                             "partition.clients=1", "model.name=mlp"};
  auto with = [&](std::vector<std::string> v, const std::string& more) {
    v.push_back(more);
    return v;
  };
  EXPECT_EQ(unread(with(pipeline, "allreduce.hash_every=2")),
            Lines{"allreduce.hash_every: topology = \"pipeline\" with grid.data = 1 has no "
                  "replicas to check"});
  EXPECT_TRUE(unread(with(pipeline, "allreduce.fault_flip_rank=1")).empty());
  EXPECT_EQ(unread({"regime=model", "async.staleness_lr=true"}),
            Lines{"async.staleness_lr: regime = \"model\" (only the async regime reads [async])"});
  EXPECT_TRUE(unread({"regime=async", "async.staleness_lr=true"}).empty());
  // the regime's and the network's own tables
  EXPECT_EQ(unread({"regime=gradient", "local.epochs=2"}),
            Lines{"local.epochs: the gradient regime does not read [local]"});
  EXPECT_EQ(unread({"network.profile=lte"}), Lines{"network.profile: network.mode = \"off\""});
  EXPECT_EQ(unread({"network.mode=simulated", "network.profile=lte",
                    "network.heterogeneous=wifi:0.5,3g:0.5"}),
            Lines{"network.profile: network.heterogeneous draws every client's profile in its "
                  "place"});
  EXPECT_TRUE(unread({"network.mode=simulated", "network.profile=lte"}).empty());
}

// The run warns of each, with the regime's and the network's still one sentence each.
TEST(UnreadSettings, TheRunWarnsOfEachAndItsReadmeMarksIt) {
  Config c = make_run_config();
  c.set_all({"partition.scheme=dirichlet-classes", "partition.alpha=0.1", "local.epochs=2",
             "regime=gradient", "robust.trim=0.2"});
  const RunSpec s = resolve_run_spec(c);
  const auto w = run_warnings(c, s);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[1],
            "the run does not read partition.alpha = 0.1: partition.scheme = \"dirichlet-classes\" "
            "reads partition.beta, partition.min_size (its Dirichlet concentration is "
            "partition.beta)");
  EXPECT_EQ(w[2],
            "the run does not read robust.trim = 0.2: robust.rule = \"mean\" does not use it");
  {  // a network setting with the network on is said on its own
    Config net = make_run_config();
    net.set_all({"network.mode=simulated", "network.profile=lte", "network.heterogeneous=wifi:1"});
    const auto n = run_warnings(net, resolve_run_spec(net));
    EXPECT_NE(std::find(n.begin(), n.end(),
                        "the run does not read network.profile = 'lte': network.heterogeneous "
                        "draws every client's profile in its place"),
              n.end());
  }
  std::map<std::string, std::string> marks;
  for (const UnreadSetting& u : unread_settings(c, s)) marks[u.key] = u.why;
  const std::string md = settings_section(c, make_run_config(), marks);
  EXPECT_NE(md.find("| `robust.trim` | `0.2` (not read: robust.rule = \"mean\" does not use it) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `partition.scheme` | `'dirichlet-classes'` |"), std::string::npos) << md;
}

}  // namespace
}  // namespace fedpar
