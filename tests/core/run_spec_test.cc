// The run spec's [compression] section and allreduce.backend: defaults, resolution, and every
// refusal says what to do.
#include "core/run_spec.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "core/count_users.h"
#include "tests/util/run_spec_util.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::error_of;

RunSpec spec(const std::vector<std::string>& sets) { return testing::spec_with(sets); }
using testing::refusal;

TEST(RunSpecCompression, DefaultsSendRawFloatsAndTheSeedReachesTheCodecs) {
  const RunSpec s = spec({"seed=42"});
  EXPECT_EQ(s.compression.uplink, "none");
  EXPECT_EQ(s.compression.downlink, "none");
  EXPECT_FALSE(s.compression.error_feedback);
  EXPECT_FALSE(s.compression.majority);
  EXPECT_EQ(s.compression.params.seed, 42u);
  const RunSpec t =
      spec({"regime=gradient", "compression.uplink=fp16", "compression.ratio=0.1",
            "compression.levels=8", "compression.bucket=256", "compression.error_feedback=true"});
  EXPECT_EQ(t.compression.uplink, "fp16");
  EXPECT_EQ(t.compression.params.ratio, 0.1);
  EXPECT_EQ(t.compression.params.levels, 8u);
  EXPECT_EQ(t.compression.params.bucket, 256u);
  EXPECT_TRUE(t.compression.error_feedback);
  EXPECT_EQ(spec({}).compression.params.rank, 2u);
  EXPECT_EQ(spec({"compression.uplink=powersgd", "compression.rank=4"}).compression.params.rank,
            4u);
}

// sign's +-1 is a direction the gradient regime's server scales by its rate; as a model delta
// (or a delta downlink's change) it would move every weight by 1 a round (9.60% after 10 rounds).
TEST(RunSpecCompression, SignIsRefusedWhereItWouldBeAModelChange) {
  EXPECT_EQ(spec({"regime=gradient", "compression.uplink=sign"}).compression.uplink, "sign");
  EXPECT_NE(refusal({"regime=model", "compression.uplink=sign"})
                .find("use scaled_sign (the mean magnitude times the signs) in the model regime"),
            std::string::npos);
  EXPECT_NE(
      refusal({"regime=gradient", "compression.downlink=sign", "compression.downlink_delta=true"})
          .find("compression.downlink = \"sign\" would send the model's change as +-1"),
      std::string::npos);
  EXPECT_EQ(spec({"regime=model", "compression.uplink=scaled_sign"}).compression.uplink,
            "scaled_sign");
}

TEST(RunSpecCompression, RefusesWhatCannotRunAndSaysWhy) {
  EXPECT_NE(refusal({"compression.uplink=zip"})
                .find("compression.uplink: unknown codec 'zip' (valid: none, fp16, bf16"),
            std::string::npos);
  EXPECT_NE(refusal({"compression.downlink=zip"}).find("compression.downlink: unknown codec 'zip'"),
            std::string::npos);
  EXPECT_NE(
      refusal({"compression.downlink_delta=true"}).find("downlink_delta needs a downlink codec"),
      std::string::npos);
  EXPECT_NE(
      refusal({"regime=async", "compression.downlink=fp16", "compression.downlink_delta=true"})
          .find("regime async sends each client its own version"),
      std::string::npos);
  EXPECT_NE(
      refusal({"compression.error_feedback=true"}).find("error_feedback needs an uplink codec"),
      std::string::npos);
  EXPECT_NE(refusal({"compression.uplink=qsgd", "compression.error_feedback=true"})
                .find("QSGD is unbiased but not contractive"),
            std::string::npos);
  EXPECT_NE(refusal({"compression.downlink=qsgd", "compression.downlink_delta=true"})
                .find("QSGD is not, and the clients' copy drifts from the model without bound"),
            std::string::npos);
  EXPECT_NE(refusal({"compression.uplink=randk", "compression.randk_unbiased=true",
                     "compression.error_feedback=true"})
                .find("E||x - D(C(x))||^2 = (d/k - 1) ||x||^2, not below ||x||^2 at ratio = 0.01"),
            std::string::npos);
  EXPECT_NE(refusal({"compression.downlink=randk", "compression.downlink_delta=true",
                     "compression.randk_unbiased=true"})
                .find("randk_unbiased applies to the uplink and the downlink alike"),
            std::string::npos);
  // where the variance is below the norm the codecs are contractive, and allowed
  for (const auto& fine : std::vector<std::vector<std::string>>{
           {"compression.uplink=randk", "compression.randk_unbiased=true", "compression.ratio=0.6",
            "compression.error_feedback=true"},
           {"compression.uplink=qsgd", "compression.levels=127", "compression.error_feedback=true"},
           {"compression.downlink=qsgd", "compression.levels=127",
            "compression.downlink_delta=true"}})
    EXPECT_EQ(refusal(fine), "") << fine[0] << " " << fine[1];
  EXPECT_NE(refusal({"compression.uplink=qsgd", "compression.error_feedback=true"})
                .find("its variance bound min(bucket / s^2, sqrt(bucket) / s) is 5.66 at levels = "
                      "4, bucket = 512"),
            std::string::npos);
  EXPECT_NE(refusal({"compression.aggregate=vote"})
                .find("compression.aggregate must be mean or majority, got 'vote'"),
            std::string::npos);
  EXPECT_NE(
      refusal({"regime=gradient", "compression.uplink=fp16", "compression.aggregate=majority"})
          .find("it needs uplink = \"sign\""),
      std::string::npos);
  EXPECT_NE(refusal({"compression.levels=0"}).find("compression.levels must be in 1..127"),
            std::string::npos);
  EXPECT_NE(refusal({"regime=gradient", "topology=master", "compression.uplink=fp16"})
                .find("topology 'master' sends activations and their gradients uncompressed"),
            std::string::npos);
  EXPECT_NE(refusal({"regime=gradient", "topology=allreduce", "compression.uplink=qsgd"})
                .find("it carries fp16, bf16, randk or powersgd, not qsgd (top-k picks other"),
            std::string::npos);
  EXPECT_NE(refusal({"regime=gradient", "topology=allreduce", "compression.uplink=topk"})
                .find("gathering them grows with the workers"),
            std::string::npos);
  EXPECT_NE(refusal({"compression.uplink=powersgd", "compression.rank=0"})
                .find("compression.rank must be in 1..1024"),
            std::string::npos);
  EXPECT_NE(refusal({"compression.downlink=powersgd"}).find("it needs compression.downlink_delta"),
            std::string::npos);
  // compressed at the sender: the ring takes them, with error feedback too; so does async
  for (const char* codec : {"compression.uplink=randk", "compression.uplink=powersgd"})
    EXPECT_TRUE(
        spec({"regime=gradient", "topology=allreduce", codec, "compression.error_feedback=true"})
            .compression.error_feedback);
  EXPECT_EQ(spec({"regime=async", "compression.uplink=powersgd"}).compression.uplink, "powersgd");
  EXPECT_EQ(spec({"compression.downlink=powersgd", "compression.downlink_delta=true"})
                .compression.downlink,
            "powersgd");
  EXPECT_NE(refusal({"regime=gradient", "topology=allreduce", "compression.uplink=fp16",
                     "compression.error_feedback=true"})
                .find("error feedback cannot see that error"),
            std::string::npos);
  EXPECT_EQ(
      spec({"regime=gradient", "topology=allreduce", "compression.uplink=bf16"}).compression.uplink,
      "bf16");
  EXPECT_NE(refusal({"diagnostics.drift=true", "compression.uplink=fp16"})
                .find("diagnostics.drift compares raw updates"),
            std::string::npos);
}

// local.sampling names one of its two ways.
TEST(RunSpecLocalSampling, RefusesAnUnknownWord) {
  EXPECT_NE(refusal({"regime=model", "local.sampling=random"})
                .find("local.sampling must be passes or independent, got 'random'"),
            std::string::npos);
}

// client_sampling's fixed weights are summed by the parameter server's mean: what decides the
// aggregate another way is refused, by name.
TEST(RunSpecClientSampling, RefusesWhatWeighsTheUpdatesItsOwnWay) {
  EXPECT_EQ(spec({}).client_sampling, ClientSampling::kUniform);
  EXPECT_EQ(spec({"client_sampling=proportional"}).client_sampling, ClientSampling::kProportional);
  EXPECT_EQ(spec({"regime=gradient", "client_sampling=scaled"}).client_sampling,
            ClientSampling::kScaled);
  EXPECT_EQ(spec({"client_sampling=poisson"}).client_sampling, ClientSampling::kPoisson);
  EXPECT_NE(
      refusal({"client_sampling=weighted"})
          .find("client_sampling must be uniform, proportional, scaled or poisson, got 'weighted'"),
      std::string::npos);
  for (const auto& [sets, why] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"regime=async"}, "it needs a synchronous round on the parameter server"},
           {{"regime=gradient", "topology=allreduce"}, "topology = \"parameter-server\""},
           {{"robust.rule=median"}, "robust.rule = \"median\" decides the aggregate its own way"},
           {{"processes=4", "backup_clients=1"}, "backup_clients leaves out the slowest updates"},
           {{"regime=gradient", "compression.uplink=sign", "compression.aggregate=majority"},
            "gives every client one vote"},
           {{"local.algorithm=fednova"}, "weighs the normalised updates its own way"}}) {
    std::vector<std::string> all = sets;
    all.push_back("client_sampling=scaled");
    const std::string error = refusal(all);
    EXPECT_NE(error.find("client_sampling = \"scaled\" weighs each update as the scheme says"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find(why), std::string::npos) << error;
  }
  // clipping composes with a scheme: each update is clipped, then weighed
  EXPECT_EQ(spec({"client_sampling=scaled", "robust.clip_norm=1"}).robust.clip_norm, 1);
}

// [privacy]'s accountant counts on Poisson sampling and one weight for every update; its clip is
// the only one, and no other algorithm carries an update past it.
TEST(RunSpecPrivacy, DpFedAvgNeedsPoissonSamplingAndEqualWeights) {
  const std::vector<std::string> dp = {"client_sampling=poisson", "weighting=uniform",
                                       "privacy.clip_norm=0.5", "privacy.noise_multiplier=1.2"};
  const PrivacySpec p = spec(dp).privacy;
  EXPECT_TRUE(p.on() && p.noised());
  EXPECT_EQ(p.clip_norm, 0.5);
  EXPECT_EQ(p.noise_multiplier, 1.2);
  EXPECT_EQ(p.delta, 1e-5);
  EXPECT_FALSE(spec({}).privacy.on());
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), dp.begin(), dp.end());
    return more;
  };
  EXPECT_TRUE(spec(with({"regime=gradient"})).privacy.noised());
  for (const auto& [sets, why] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"client_sampling=scaled"}, "set client_sampling = \"poisson\""},
           {{"weighting=samples"}, "set weighting = \"uniform\""},
           {{"local.algorithm=scaffold"}, "SCAFFOLD's control variates would reach the model"},
           {{"robust.clip_norm=1"},
            "privacy.clip_norm is its clip, which replaces robust.clip_norm"},
           {{"network.mode=simulated", "network.sample_from=available"},
            "makes q the share of the available"},
           {{"network.mode=simulated", "network.drop_late=true"},
            "one client could move the sum by more than S / K"}}) {
    const std::string error = refusal(with(sets));
    EXPECT_NE(error.find("[privacy] clips every client's update and noises their average"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find(why), std::string::npos) << error;
  }
  EXPECT_NE(refusal(with({"regime=async"})).find("a synchronous round on the parameter server"),
            std::string::npos);
  EXPECT_NE(refusal({"privacy.noise_multiplier=1"}).find("set privacy.clip_norm > 0"),
            std::string::npos);
  EXPECT_NE(refusal(with({"privacy.delta=0"})).find("privacy.delta must be in (0, 1)"),
            std::string::npos);
  EXPECT_NE(refusal(with({"privacy.adaptive_quantile=0.5", "privacy.count_noise=0.5"}))
                .find("sigma_b = 0.5 (privacy.count_noise; K / 20 when 0) must be above "
                      "noise_multiplier / 2 = 0.6"),
            std::string::npos);
  EXPECT_NE(refusal(with({"privacy.adaptive_quantile=0.5"})).find("sigma_b = 0.2 "),
            std::string::npos)
      << "K / 20 = 4 / 20 by default";
  // clipping alone, the noise-free baseline
  EXPECT_FALSE(spec(with({"privacy.noise_multiplier=0"})).privacy.noised());
}

// network.sample_from draws among the clients [network]'s availability makes available.
TEST(RunSpecClientSampling, AmongTheAvailableNeedsTheNetworkAndTheParameterServer) {
  EXPECT_FALSE(spec({}).network.sample_available);
  EXPECT_TRUE(
      spec({"network.mode=simulated", "network.sample_from=available"}).network.sample_available);
  EXPECT_NE(refusal({"network.sample_from=available"}).find("it needs network.mode = "),
            std::string::npos);
  EXPECT_NE(refusal({"network.mode=simulated", "regime=async", "network.sample_from=available"})
                .find("and the parameter-server topology"),
            std::string::npos);
  EXPECT_NE(refusal({"network.mode=simulated", "network.sample_from=checked-in"})
                .find("network.sample_from must be all or available, got 'checked-in'"),
            std::string::npos);
}

TEST(RunSpecAllReduceBackend, TheZmqRingByDefaultMpiWhereItCanSum) {
  EXPECT_EQ(spec({}).ring_backend, RingBackend::kZmqRing);
  const std::vector<std::string> ring = {"regime=gradient", "topology=allreduce"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), ring.begin(), ring.end());
    return more;
  };
  EXPECT_EQ(spec(with({"allreduce.backend=mpi"})).ring_backend, RingBackend::kMpi);
  EXPECT_EQ(spec(with({"allreduce.backend=nccl"})).ring_backend, RingBackend::kNccl);
  EXPECT_NE(refusal(with({"allreduce.backend=gloo"}))
                .find("allreduce.backend must be zmq-ring, mpi or nccl, got 'gloo'"),
            std::string::npos);
  EXPECT_NE(refusal({"allreduce.backend=mpi"}).find("it needs topology = \"allreduce\""),
            std::string::npos);
  EXPECT_NE(
      refusal({"regime=gradient", "topology=pipeline", "processes=2", "allreduce.backend=mpi"})
          .find("it needs topology = \"allreduce\""),
      std::string::npos);
  EXPECT_NE(refusal(with({"allreduce.backend=mpi", "compression.uplink=fp16"}))
                .find("compression.uplink = \"fp16\" runs on backend = \"zmq-ring\""),
            std::string::npos);
  EXPECT_NE(refusal(with({"allreduce.backend=nccl", "compression.uplink=randk"}))
                .find("allreduce.backend = \"nccl\" sums float32: compression.uplink = \"randk\""),
            std::string::npos);
  EXPECT_NE(refusal(with({"allreduce.backend=nccl", "security.key=k", "security.clients=c"}))
                .find("MPI's and NCCL's traffic it cannot"),
            std::string::npos);
  // a run's name is a folder name, not a path
  for (const char* name : {"name=../escaped", "name=a/b", "name=.."})
    EXPECT_NE(refusal({name}).find("a name without '/'"), std::string::npos) << name;
  // each half of [security] needs the other: an allow-list alone once ran plaintext, open to all
  EXPECT_NE(refusal({"security.key=k"}).find("security.key needs security.clients"),
            std::string::npos);
  EXPECT_NE(refusal({"security.clients=c"}).find("security.clients needs security.key"),
            std::string::npos);
  EXPECT_NE(refusal(with({"allreduce.backend=mpi", "allreduce.elastic=true"}))
                .find("cannot re-form without a dead rank"),
            std::string::npos);
}

// Values a config can hold but a run cannot use: refused by key, before anything starts.
// fedpar launch's ranks compare configs by this hash: the same settings in any order give the
// same, whatever says where a run happens or where a node keeps its data; any setting of what is
// computed changes it.
TEST(RunConfigHash, NamesWhatARunComputesNotWhereItRuns) {
  const auto hash = [](const std::vector<std::string>& sets) {
    Config c = make_run_config();
    c.set_all(sets);
    return run_config_hash(c);
  };
  const std::string base = hash({"rounds=7", "partition.clients=4"});
  EXPECT_EQ(hash({"partition.clients=4", "rounds=7"}), base);
  EXPECT_EQ(hash({"rounds=7", "partition.clients=4", "data.dir=/scratch/node3", "device=cuda",
                  "processes=9", "bind=tcp://*:6000", "name=other", "results_dir=/tmp/r"}),
            base);
  EXPECT_NE(hash({"rounds=8", "partition.clients=4"}), base);
  EXPECT_NE(hash({"rounds=7", "partition.clients=4", "threads=2"}), base);  // other bits
  EXPECT_NE(hash({"rounds=7", "partition.clients=4", "local.steps=3"}), base);
  EXPECT_EQ(base.size(), 16u);
}

// partition.seed holds the split while the run's seed varies the rest; 0 leaves it to the run's.
TEST(RunSpecValues, PartitionSeedHoldsTheSplitFixedAcrossRunSeeds) {
  EXPECT_EQ(spec({"seed=3"}).partition.seed, 3u);
  EXPECT_EQ(spec({"seed=3", "partition.seed=7"}).partition.seed, 7u);
  EXPECT_EQ(spec({"seed=4", "partition.seed=7"}).partition.seed, 7u);
  EXPECT_EQ(spec({"seed=4", "partition.seed=7"}).seed, 4u);  // the init, sampling, shuffles
  EXPECT_NE(refusal({"partition.seed=-1"}).find("partition.seed must be >= 0 (0: the run's seed)"),
            std::string::npos);
}

TEST(RunSpecValues, OutOfRangeAndNonFiniteValuesAreRefusedByKey) {
  EXPECT_NE(refusal({"partition.clients=4294967300"})
                .find("config key 'partition.clients' = 4294967300 is out of range"),
            std::string::npos);
  EXPECT_NE(refusal({"rounds=4294967306"}).find("'rounds'"), std::string::npos);
  EXPECT_NE(refusal({"wait_seconds=inf"}).find("'wait_seconds' must be a finite number"),
            std::string::npos);
  EXPECT_NE(refusal({"local.server_lr=nan"}).find("'local.server_lr' must be a finite number"),
            std::string::npos);
  EXPECT_NE(refusal({"optimizer.gamma=0"}).find("optimizer.gamma must be > 0"), std::string::npos);
  EXPECT_NE(refusal({"local.server_lr=0"}).find("local.server_lr must be > 0, got 0"),
            std::string::npos);
  EXPECT_NE(
      refusal({"regime=async", "topology=allreduce"})
          .find("needs regime = \"gradient\" (asynchronous SGD runs on the parameter server)"),
      std::string::npos);
  EXPECT_NE(refusal({"regime=model", "topology=master"})
                .find("needs regime = \"gradient\" (model averaging runs on the parameter server)"),
            std::string::npos);
  // trimmed-mean's least trim that cuts one of 3, rounded up: 0.333 would cut none
  EXPECT_NE(refusal({"robust.rule=trimmed-mean", "partition.clients=3"})
                .find("raise robust.trim to 0.334 (1 / 3) or more"),
            std::string::npos);
  EXPECT_EQ(
      spec({"robust.rule=trimmed-mean", "partition.clients=3", "robust.trim=0.334"}).robust.trim,
      0.334);
  EXPECT_NE(refusal({"server_optimizer.name=adam", "server_optimizer.tau=0"})
                .find("(local.server_lr, server_optimizer.beta1, beta2, tau: got 1, 0.9, 0.99, 0)"),
            std::string::npos);
  EXPECT_NE(refusal({"optimizer.min_lr=-1"}).find("optimizer.min_lr must be >= 0"),
            std::string::npos);
  EXPECT_NE(refusal({"regime=async", "fraction=0.5"}).find("fraction must be 1"),
            std::string::npos);
  EXPECT_EQ(spec({"wait_seconds=1e10"}).wait_seconds, 1e10) << "a long wait is a wait";
  EXPECT_NE(refusal({"processes=3", "partition.clients=2"})
                .find("processes = 3 but partition.clients = 2: 1 process(es) would host no "
                      "client"),
            std::string::npos);
  EXPECT_NO_THROW(spec({"processes=2", "partition.clients=2"}));
  // a straggler id past the clients would slow nobody, silently
  EXPECT_NE(refusal({"partition.clients=10", "stragglers.slowdown=[\"12:4\"]"})
                .find("stragglers.slowdown: client 12 does not exist (partition.clients = 10: "
                      "ids 0..9)"),
            std::string::npos);
  EXPECT_NE(refusal({"partition.clients=10", "stragglers.delay_seconds=[\"10:0.5\"]"})
                .find("stragglers.delay_seconds: client 10 does not exist"),
            std::string::npos);
  EXPECT_NO_THROW(spec({"partition.clients=10", "stragglers.slowdown=[\"9:4\"]"}));
  // a client given twice: which value applies would be anyone's guess
  EXPECT_NE(refusal({"partition.clients=10", "stragglers.slowdown=[\"3:2\", \"3:5\"]"})
                .find("stragglers.slowdown: client 3 is given twice"),
            std::string::npos);
  // a negative count said as such, not as processes that would idle; 0 means one per user only
  // for the natural scheme
  EXPECT_NE(refusal({"partition.clients=-3"})
                .find("partition.clients must be >= 1 (or 0 with scheme = \"natural\": one "
                      "client per user), got -3"),
            std::string::npos);
  EXPECT_NE(refusal({"partition.clients=0"}).find("partition.clients must be >= 1"),
            std::string::npos);
  // a negative seed once ran as 2^64 - 1 in the README and -1 in the resolved config
  EXPECT_NE(refusal({"seed=-1"}).find("seed must be >= 0, got -1"), std::string::npos);
  EXPECT_EQ(spec({"seed=0"}).seed, 0u);
  EXPECT_NE(refusal({"network.mode=emulated", "network.profile=3g", "compression.downlink=fp16",
                     "compression.downlink_delta=true"})
                .find("a TASK the emulated network loses would leave that process's model"),
            std::string::npos);
  EXPECT_NO_THROW(spec({"network.mode=simulated", "network.profile=3g", "compression.downlink=fp16",
                        "compression.downlink_delta=true"}));
}

// Settings the regime never reads are named (the gradient regime once took the whole shard while
// the config asked for local batches of 50); those it reads, and defaults, are not.
TEST(RunSpecValues, SettingsTheRegimeDoesNotReadAreNamed) {
  const auto unused = [](const std::vector<std::string>& sets) {
    Config c = make_run_config();
    c.set_all(sets);
    return unused_by_regime(c, resolve_run_spec(c));
  };
  EXPECT_EQ(unused({"regime=gradient", "local.batch=50", "local.epochs=1", "sgd.batch=16"}),
            (std::vector<std::string>{"local.batch = 50", "local.epochs = 1"}));
  EXPECT_EQ(unused({"regime=model", "local.batch=50", "sgd.batch=16"}),
            (std::vector<std::string>{"sgd.batch = 16"}));
  EXPECT_EQ(unused({"regime=async", "sgd.batch=16", "local.steps=3"}),
            (std::vector<std::string>{"local.steps = 3"}));
  EXPECT_TRUE(unused({"regime=gradient"}).empty());
}

// Settings their own table's choices leave unread are named one by one, with the choice: a run
// once trained local.epochs with local.steps = 5 in its README's settings, without a word.
TEST(RunSpecValues, SettingsAnotherSettingReplacesAreNamed) {
  const auto warnings = testing::warnings_beside_fedsgd;
  const auto all_warnings = [](const std::vector<std::string>& sets) {
    Config c = make_run_config();
    c.set_all(sets);
    return run_warnings(c, resolve_run_spec(c));
  };
  EXPECT_EQ(warnings({"regime=model", "local.epochs=1", "local.steps=5"}),
            (std::vector<std::string>{
                "the run does not read local.steps = 5: local.epochs = 1 replaces it (set "
                "local.epochs = 0 to train local.steps)"}));
  EXPECT_TRUE(all_warnings({"regime=model", "local.steps=5"}).empty());
  EXPECT_TRUE(all_warnings({"local.epochs=1"}).empty());
  EXPECT_TRUE(all_warnings({"local.steps_max=5"}).empty());  // 1 to 5 steps: not FedSGD
  // the model regime's local defaults are FedSGD: said, unless the config chose them
  const auto defaults = all_warnings({"regime=model"});
  ASSERT_EQ(defaults.size(), 1u);
  EXPECT_NE(defaults[0].find("takes one full-batch step a round: FedSGD"), std::string::npos)
      << defaults[0];
  EXPECT_TRUE(all_warnings({"regime=model", "local.steps=1"}).empty());
  EXPECT_TRUE(all_warnings({"regime=model", "local.batch=full"}).empty());
  // the regime's own default too (a config that names no regime ran FedSGD unwarned)
  const auto unnamed = all_warnings({});
  ASSERT_EQ(unnamed.size(), 1u);
  EXPECT_NE(unnamed[0].find("regime = \"model\" (the default) with its local defaults"),
            std::string::npos)
      << unnamed[0];
  EXPECT_TRUE(all_warnings({"regime=gradient"}).empty());
  // SCAFFOLD over lossy emulated links: each lost update drops a process (the run then failed
  // with nothing said beforehand); simulated loss leaves the client out of its round instead
  const auto scaffold = [&](const char* mode) {
    return warnings({"regime=model", "local.steps=2", "local.algorithm=scaffold",
                     std::string("network.mode=") + mode, "network.profile=custom",
                     "network.custom.loss=0.3"});
  };
  ASSERT_EQ(scaffold("emulated").size(), 1u);
  EXPECT_NE(scaffold("emulated")[0].find("local.algorithm = \"scaffold\" drops a process at its "
                                         "first missing update"),
            std::string::npos);
  EXPECT_TRUE(scaffold("simulated").empty());
  // FedProx's term is zero at the sent model: one local step a round never feels it
  EXPECT_EQ(warnings({"regime=model", "local.steps=1", "local.prox_mu=0.1"}),
            (std::vector<std::string>{
                "local.prox_mu = 0.1 has no effect: each client takes one local step a round, "
                "from the sent model, where the proximal term mu (w - w_sent) is zero; train more "
                "local steps (local.epochs with a local.batch, or local.steps)"}));
  EXPECT_EQ(warnings({"regime=model", "local.epochs=1", "local.prox_mu=0.1"}).size(), 1u);
  EXPECT_TRUE(warnings({"regime=model", "local.steps=2", "local.prox_mu=0.1"}).empty());
  EXPECT_TRUE(
      warnings({"regime=model", "local.epochs=1", "local.batch=10", "local.prox_mu=0.1"}).empty());
  EXPECT_EQ(warnings({"optimizer.gamma=0.5", "optimizer.min_lr=0.001"}),
            (std::vector<std::string>{
                "the run does not read optimizer.gamma = 0.5: optimizer.schedule = \"constant\" "
                "does not use it",
                "the run does not read optimizer.min_lr = 0.001: optimizer.schedule = "
                "\"constant\" does not use it"}));
  EXPECT_TRUE(warnings({"optimizer.schedule=step", "optimizer.gamma=0.5"}).empty());
  EXPECT_TRUE(warnings({"optimizer.schedule=cosine", "optimizer.min_lr=0.001"}).empty());
  EXPECT_EQ(warnings({"optimizer.reference_batch=64"}).size(), 1u);
  EXPECT_EQ(
      warnings({"regime=gradient", "diagnostics.drift=true"}),
      (std::vector<std::string>{
          "the run does not read diagnostics.drift = true: regime = \"gradient\" has no local "
          "steps to drift from its gradient (drift needs regime = \"model\")"}));
  EXPECT_TRUE(warnings({"regime=model", "local.epochs=1", "diagnostics.drift=true"}).empty());
}

// FedAdam and FedYogi at FedAvg's server rate of 1 end at chance accuracy on the 2NN: a run at 1
// or more is warned of; one at a smaller rate, or another server optimizer, is not.
TEST(RunSpecValues, AnAdaptiveServerOptimizerAtFedAvgsRateIsWarnedOf) {
  const auto warnings = testing::warnings_beside_fedsgd;
  for (const char* name : {"adam", "yogi"}) {
    const auto w =
        warnings({"regime=model", "local.epochs=1", fmt::format("server_optimizer.name={}", name)});
    ASSERT_EQ(w.size(), 1u) << name;
    EXPECT_NE(w[0].find(fmt::format("server_optimizer.name = \"{}\"", name)), std::string::npos);
    EXPECT_NE(w[0].find("set local.server_lr to 0.1 or less"), std::string::npos) << w[0];
    EXPECT_EQ(warnings({"regime=model", "local.epochs=1",
                        fmt::format("server_optimizer.name={}", name), "local.server_lr=3"})
                  .size(),
              1u);
    EXPECT_TRUE(warnings({"regime=model", "local.epochs=1",
                          fmt::format("server_optimizer.name={}", name), "local.server_lr=0.1"})
                    .empty());
  }
  EXPECT_TRUE(warnings({"regime=model", "local.epochs=1", "server_optimizer.name=avgm"}).empty());
  EXPECT_TRUE(warnings({"regime=model", "local.epochs=1"}).empty());
  // and the regime's unread settings are one sentence among them
  const auto w = warnings({"regime=gradient", "local.epochs=2"});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "the gradient regime does not read local.epochs = 2: each gradient is sgd.batch "
            "samples (now full, the whole shard)");
  // each says what the regime reads instead, with its value
  EXPECT_EQ(warnings({"regime=model", "sgd.batch=16", "local.batch=50"}).at(0),
            "the model regime does not read sgd.batch = 16: its clients train local.steps (now "
            "1) or local.epochs (now 0) of local.batch (now 50) samples");
}

// Top-k, random-k and PowerSGD without error feedback lose what they leave out for good: warned
// of, with what they keep; not with error feedback, unbiased random-k or an unbiased or cast codec.
TEST(RunSpecValues, ABiasedCodecWithoutErrorFeedbackIsWarnedOf) {
  const auto warnings = testing::warnings_beside_fedsgd;
  const auto one = [&](const std::vector<std::string>& sets) {
    const auto w = warnings(sets);
    return w.size() == 1 ? w[0] : fmt::format("{} warnings", w.size());
  };
  EXPECT_NE(one({"compression.uplink=topk"})
                .find("compression.uplink = \"topk\" without error feedback: it sends the largest "
                      "1% of the values, and loses the rest of each update for good"),
            std::string::npos);
  EXPECT_NE(one({"compression.uplink=randk", "compression.ratio=0.1"})
                .find("it sends 10% of the values, at random indices, and loses the rest of each "
                      "update for good, so the model moves less than the clients' steps say; set "
                      "compression.error_feedback = true (clients send what was dropped with their "
                      "next update), or randk_unbiased = true"),
            std::string::npos);
  EXPECT_NE(one({"compression.uplink=powersgd"}).find("a rank-2 approximation of each matrix"),
            std::string::npos);
  EXPECT_NE(one({"compression.uplink=scaled_sign"})
                .find("it sends each value's sign times their mean magnitude, and loses"),
            std::string::npos);
  // the ring's random-k alike
  EXPECT_NE(
      one({"regime=gradient", "topology=allreduce", "processes=2", "compression.uplink=randk"})
          .find("compression.uplink = \"randk\" without error feedback"),
      std::string::npos);
  for (const auto& quiet : std::vector<std::vector<std::string>>{
           {"compression.uplink=topk", "compression.error_feedback=true"},
           {"compression.uplink=randk", "compression.randk_unbiased=true"},
           {"compression.uplink=qsgd"},
           {"compression.uplink=fp16"},
           {"regime=gradient", "compression.uplink=sign"}})
    EXPECT_TRUE(warnings(quiet).empty()) << quiet[0];
}

// A straggler holds up the clients on its process (they compute after it): a synchronous run
// with more clients than processes says so; one client per process, or async, does not.
TEST(RunSpecValues, StragglersSharingAProcessAreWarnedOf) {
  const auto warnings = testing::warnings_beside_fedsgd;
  const auto w = warnings({"partition.clients=10", "processes=2", "stragglers.slowdown=0:30"});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("[stragglers] slows clients that share a process with others (10 clients on "
                      "2 processes)"),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("(processes = 10 gives each client its own)"), std::string::npos) << w[0];
  EXPECT_EQ(
      warnings({"partition.clients=10", "processes=2", "stragglers.delay_seconds=1:0.5"}).size(),
      1u);
  EXPECT_TRUE(warnings({"partition.clients=2", "processes=2", "stragglers.slowdown=0:30"}).empty());
  EXPECT_TRUE(warnings({"partition.clients=10", "processes=2"}).empty());
}

// backup_clients leaves a synchronous parameter-server round's last updates out: what cannot
// leave one out is refused, saying why; the robust rules and a scaled rate count the updates left.
TEST(RunSpecValues, BackupClientsLeaveUpdatesOutOnlyWhereARoundCanGoOnWithout) {
  EXPECT_EQ(spec({"processes=4", "backup_clients=1"}).backup_clients, 1);
  EXPECT_EQ(updates_per_round(spec({"processes=4", "backup_clients=1"})), 3);
  EXPECT_EQ(updates_per_round(
                spec({"partition.clients=10", "fraction=0.5", "processes=10", "backup_clients=2"})),
            3);
  EXPECT_NE(refusal({"processes=4", "backup_clients=-1"}).find("backup_clients must be >= 0"),
            std::string::npos);
  EXPECT_NE(refusal({"processes=4", "backup_clients=4"})
                .find("backup_clients = 4 leaves no update of the 4 clients a round asks"),
            std::string::npos);
  EXPECT_NE(refusal({"partition.clients=10", "fraction=0.2", "processes=10", "backup_clients=2"})
                .find("it must be less than 2"),
            std::string::npos);
  EXPECT_NE(refusal({"regime=async", "processes=4", "backup_clients=1"})
                .find("regime = \"async\" already applies each update as it comes"),
            std::string::npos);
  EXPECT_NE(refusal({"regime=gradient", "topology=allreduce", "processes=4", "backup_clients=1"})
                .find("it needs topology = \"parameter-server\""),
            std::string::npos);
  EXPECT_NE(refusal({"local.algorithm=scaffold", "processes=4", "backup_clients=1"})
                .find("a left-out update would part them"),
            std::string::npos);
  EXPECT_NE(refusal({"network.mode=simulated", "processes=4", "backup_clients=1"})
                .find("use network.mode = \"emulated\""),
            std::string::npos);
  // trimmed-mean cuts from the 3 updates a round aggregates, not from the 4 it asks
  EXPECT_NE(
      refusal({"robust.rule=trimmed-mean", "robust.trim=0.25", "processes=4", "backup_clients=1"})
          .find("cuts floor(0.25 x 3) = 0 of the 3 updates a round"),
      std::string::npos);
  EXPECT_NE(refusal({"partition.clients=5", "robust.rule=krum", "robust.byzantine=1", "processes=5",
                     "backup_clients=1"})
                .find("needs more than 4 clients per round, this run asks 5 and aggregates 4 "
                      "(backup_clients = 1)"),
            std::string::npos);
  // a process computes its clients in turn: the last of each, not the slowest, would come last
  EXPECT_NE(refusal({"processes=2", "backup_clients=1"})
                .find("with 4 clients on 2 processes the last of each process's would be left "
                      "out every round"),
            std::string::npos);
  // a slow process applying every round's change would fall further behind each round
  EXPECT_NE(refusal({"processes=4", "compression.downlink=fp16", "compression.downlink_delta=true",
                     "backup_clients=1"})
                .find("backup_clients with compression.downlink_delta"),
            std::string::npos);
  // optimizer.scaling's global batch is the gradients averaged: 3 of 50
  const RunSpec scaled = spec({"regime=gradient", "sgd.batch=50", "optimizer.scaling=linear",
                               "optimizer.reference_batch=50", "processes=4", "backup_clients=1"});
  EXPECT_FLOAT_EQ(scaled.optimizer.lr.base_lr, 3 * spec({"regime=gradient"}).optimizer.lr.base_lr);
}

// A lossy link in the gradient regime: emulated, the first lost message stopped the run;
// simulated, the run went on without the lost gradients. One rule: continue_without_missing.
TEST(RunSpecValues, ALossyLinkInTheGradientRegimeNeedsContinueWithoutMissing) {
  for (const char* mode : {"network.mode=simulated", "network.mode=emulated"}) {
    const std::vector<std::string> lossy = {"regime=gradient", mode, "network.profile=custom",
                                            "network.custom.loss=0.1"};
    EXPECT_NE(refusal(lossy).find("a network profile with loss > 0 loses TASKs and UPDATEs, and "
                                  "the gradient regime stops at the first gradient missing: set "
                                  "continue_without_missing = true"),
              std::string::npos)
        << mode;
    auto going_on = lossy;
    going_on.push_back("continue_without_missing=true");
    EXPECT_TRUE(spec(going_on).continue_without_missing) << mode;
    EXPECT_EQ(spec({"regime=model", mode, "network.profile=custom", "network.custom.loss=0.1"})
                  .network.lossless(),
              false);
  }
}

// Network settings with network.mode = "off" do nothing: the run says which it does not read.
TEST(RunSpecValues, NetworkSettingsWithTheNetworkOffAreWarnedOf) {
  const auto warnings = testing::warnings_beside_fedsgd;
  const auto w = warnings({"network.server=custom", "network.profile=lte"});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "network.mode = \"off\": the run has no network conditions and does not read "
            "network.profile = 'lte', network.server = 'custom' (set network.mode = \"simulated\" "
            "to use them)");
  // Keys both modes read get both; the server's shared link is the clock's only.
  const auto links = warnings({"network.profile=lte"});
  ASSERT_EQ(links.size(), 1u);
  EXPECT_TRUE(links[0].ends_with("(set network.mode = \"simulated\" or \"emulated\" to use them)"))
      << links[0];
  EXPECT_TRUE(warnings({"network.mode=simulated", "network.server=custom"}).empty());
  EXPECT_TRUE(warnings({"network.mode=off"}).empty());
}

// network.availability_rounds: at least 1, and warned of where no client is ever off.
TEST(RunSpecValues, AvailabilityRoundsIsAStretchOfAtLeastOneRound) {
  EXPECT_EQ(spec({"network.mode=simulated", "network.availability_rounds=10"})
                .network.availability_rounds,
            10u);
  EXPECT_NE(refusal({"network.mode=simulated", "network.availability_rounds=0"})
                .find("network.availability_rounds must be between 1"),
            std::string::npos);
  const auto w =
      testing::warnings_beside_fedsgd({"network.mode=simulated", "network.availability_rounds=10"});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("every profile's availability is 1: no client is ever off"),
            std::string::npos)
      << w[0];
  EXPECT_TRUE(
      testing::warnings_beside_fedsgd({"network.mode=simulated", "network.availability_rounds=10",
                                       "network.profile=custom", "network.custom.availability=0.5"})
          .empty());
}

// network.availability_by_profile sets the availability of the named profiles the clients have;
// what it cannot set is refused by name.
TEST(RunSpecValues, AvailabilityByProfileSetsTheNamedProfilesShare) {
  const std::vector<std::string> mixed = {"network.mode=simulated", "partition.clients=40",
                                          "processes=1", "network.heterogeneous=wifi:0.5,3g:0.5"};
  std::vector<std::string> sets = mixed;
  sets.push_back("network.availability_by_profile=3g:0.3");
  const RunSpec s = spec(sets);
  int on_3g = 0, rounds_3g = 0;
  for (uint32_t c = 0; c < 40; ++c) {
    const LinkProfile& l = s.network.of(c);
    EXPECT_EQ(l.availability, l.name == "3g" ? 0.3 : 1.0) << c;
    for (uint64_t r = 0; r < 200 && l.name == "3g"; ++r)
      on_3g += client_available(s.network, s.seed, c, r), ++rounds_3g;
  }
  ASSERT_GT(rounds_3g, 0);
  EXPECT_NEAR(double(on_3g) / rounds_3g, 0.3, 0.05);
  for (const auto& [item, why] : std::vector<std::pair<std::string, std::string>>{
           {"3g", "'3g' is not \"profile:share\" with a share in [0, 1]"},
           {"3g:1.5", "'3g:1.5' is not \"profile:share\""},
           {"3g:x", "'3g:x' is not"},
           {"custom:0.5", "the custom profile's availability is network.custom.availability"},
           {"5g:0.5", "unknown profile '5g' (valid: datacenter, wifi, lte, 3g, custom)"},
           {"3g:0.5,3g:0.2", "names '3g' twice"}}) {
    std::vector<std::string> bad = mixed;
    bad.push_back("network.availability_by_profile=" + item);
    EXPECT_NE(refusal(bad).find(why), std::string::npos) << item << ": " << refusal(bad);
  }
  // a profile no client drew at this seed has nothing to set, and the config stays valid
  sets.back() = "network.availability_by_profile=3g:0.3,lte:0.5";
  EXPECT_EQ(spec(sets).network.of(0).availability, s.network.of(0).availability);
}

// The natural scheme's clients = 0 (one per user) becomes the data's count of users before
// anything reads it: a network mixture deals all 12 devices, an attack may name 2 of them, and the
// config the clients get says 12. Left at 0, the mixture dealt no client (all had the first
// profile) and the attack was refused. An explicit count, or another scheme, stays as it is.
TEST(RunSpecValues, NaturalClientsZeroBecomesTheDatasCountOfUsers) {
  Config c = make_run_config();
  c.set_all({"partition.scheme=natural", "partition.clients=0", "data.name=synthetic",
             "data.devices=12", "network.mode=simulated", "network.heterogeneous=wifi:0.5,3g:0.5",
             "attack.kind=sign-flip", "attack.clients=2"});
  EXPECT_NE(refusal({"partition.scheme=natural", "partition.clients=0", "data.name=synthetic",
                     "attack.kind=sign-flip", "attack.clients=2"})
                .find("attack.clients = 2"),
            std::string::npos);
  const RunSpec s = resolve_run_spec_counting_users(c);
  EXPECT_EQ(s.partition.clients, 12);
  EXPECT_EQ(c.get_int("partition.clients"), 12);
  ASSERT_EQ(s.network.client_profile.size(), 12u);
  const std::set<uint32_t> dealt(s.network.client_profile.begin(), s.network.client_profile.end());
  EXPECT_EQ(dealt.size(), 2u);
  for (const char* other : {"partition.clients=7", "partition.scheme=iid"}) {
    Config d = make_run_config();
    d.set_all({"data.name=synthetic", "partition.clients=7", other});
    EXPECT_EQ(resolve_run_spec_counting_users(d).partition.clients, 7) << other;
  }
}

}  // namespace
}  // namespace fedpar
