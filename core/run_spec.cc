// Run configuration; see run_config.h.
#include "core/run_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/codec/powersgd.h"
#include "core/hash.h"
#include "core/model_data_config.h"
#include "core/unread_settings.h"

namespace fedpar {

long clients_per_round(const RunSpec& s) {
  return long(draws_per_round(s, size_t(s.partition.clients)));
}

size_t draws_per_round(const RunSpec& s, size_t num_clients) {
  return std::max<size_t>(1, size_t(std::lround(s.fraction * double(num_clients))));
}

double sampling_rate(const RunSpec& s, size_t num_clients) {
  return double(draws_per_round(s, num_clients)) / double(num_clients);
}

double updates_noise_multiplier(const PrivacySpec& p, size_t k) {
  return p.adaptive.on()
             ? update_noise_multiplier(p.noise_multiplier, count_noise_std(p.adaptive, k))
             : p.noise_multiplier;
}

long updates_per_round(const RunSpec& s) { return clients_per_round(s) - s.backup_clients; }

namespace {

constexpr const char* kRunTop =
    R"(# fedpar server: one federated (model) or data-parallel (gradient) run
name = ""                # results/<name>/; empty: <regime>-<model>-<dataset>-s<seed>
results_dir = "results"
seed = 1                 # model init, partition (unless partition.seed), client sampling, local shuffles
rounds = 10
regime = "model"         # gradient (one gradient per client per round) | model (local steps, deltas)
                         # | async (each gradient applied as it arrives; see [async])
topology = "parameter-server"  # parameter-server (both regimes) | gradient regime: master | allreduce (docs/topologies.md) | pipeline | tensor (docs/pipeline.md)
bind = "tcp://127.0.0.1:5555"  # also ipc://PATH; tcp port * picks a free one
processes = 1            # client processes to wait for
max_slots = 1            # the most slots a process may ask for (fedpar client --slots): a weight, clients are dealt in proportion
wait_seconds = 60.0      # for each round's updates (async: for a task's, then it is sent again;
                         # network.drop_late: the simulated deadline, the real wait at least 60 s)
start_wait_seconds = 0.0 # for the processes to say HELLO and load their data; 0: the larger of
                         # wait_seconds and 60 (a round deadline of 0.5 s is no data load's)
eval_every = 1           # rounds between test-set evaluations
log_every = 1            # rounds between the server's round lines (evaluated rounds, the first and
                         # the last always print; metrics.jsonl has every round)
eval_train = false       # evaluated rounds also score the server's model on the whole training set
                         # (global_train_loss; train_loss is what the clients' steps saw)
eval_clients = false     # evaluated rounds also score it on each client's own samples (its shard, or
                         # its partition.holdout share): client_accuracy, its spread over the
                         # clients (mean, worst 10%, min) in the log and README
checkpoint_every = 0     # > 0: checkpoint.bin in the results folder every r rounds (fedpar run --resume)
stop_at_accuracy = 0.0   # end the run once test accuracy (0..1) reaches this; 0 = all rounds
weighting = "samples"    # samples (n_k / n) | uniform (1 / K)
fraction = 1.0           # C: share of clients sampled per round: max(1, round(C x clients))
client_sampling = "uniform"  # the round's K draws, p_k by weighting (docs/definitions.md#client-sampling):
                         # uniform: K clients alike, weights renormalised over the updates aggregated |
                         # proportional: K draws with replacement, P(k) = p_k, each 1/K (Li et al.'s I) |
                         # scaled: uniform's K clients, each p_k N / K, not renormalised (Li et al.'s II) |
                         # poisson: each client with probability K / N, each p_k N / K ([privacy]'s)
continue_without_missing = false  # gradient regime: go on when a client misses a round
drop_after_missed_rounds = 3  # a client process that misses this many rounds in a row gets no more tasks
backup_clients = 0       # synchronous parameter server: aggregate the first updates in and leave
                         # the last this many of a round's clients out, not waited for (backup
                         # workers; FL's over-selection)
threads = 1              # CPU threads per process for products; another count, other bits
device = "cpu"           # where clients compute: cpu | cuda (fedpar client --device overrides)

)";

constexpr const char* kRunSections = R"(
[partition]
scheme = "iid"           # see fedpar partition --help
clients = 4
seed = 0                 # 0: the run's seed; another holds the split (its holdout, and a synthetic
                         # dataset's draw) fixed while the run's seed varies the init, sampling
                         # and shuffles (suite.seeds)
shards_per_client = 2
labels_per_client = 2
alpha = 0.5              # dirichlet-clients: q ~ Dir(alpha p), p the label shares (MNIST: alpha 1 is Dir(0.1) per class)
beta = 0.5               # dirichlet-classes: each class over clients ~ Dir(beta); iid-quantity: sizes ~ Dir(beta)
min_size = 10
sizes = "dirichlet"      # iid-quantity: dirichlet (beta) | lognormal (sigma)
sigma = 1.0              # iid-quantity lognormal: std of log sizes; feature-noise: the last client's noise std
holdout = 0.0            # every scheme: share of each client's samples kept out of its training, which
                         # eval_clients scores (each client's accuracy on data it never trained on)

[local]                  # model regime
steps = 1                # local SGD steps per round (when epochs = 0)
epochs = 0               # local epochs per round (overrides steps)
batch = 0                # samples per local step; 0 or "full" = the whole shard
                         # (the clients step with [optimizer]; its schedule counts rounds)
prox_mu = 0.0            # FedProx: local gradients get + mu (w - w_sent); 0 = FedAvg
algorithm = "fedavg"     # fedavg | scaffold (control variates, option II) | fednova (normalised
                         # averaging); docs/definitions.md
scaffold_correction = "gradient"  # scaffold: gradient (c - c_i joins every gradient) | after-step
                         # (NIID-Bench's code: w -= lr (c - c_i) after each optimizer step)
sampling = "passes"      # passes: each pass reshuffles the shard, steps take consecutive slices |
                         # independent: each step draws a fresh batch as the gradient regime does
                         # (so K = 1 is its step with mini-batches too); docs/definitions.md
steps_max = 0            # > steps: each client's steps per round drawn uniformly from steps..steps_max
epochs_max = 0           # > epochs: each client's epochs per round drawn from epochs..epochs_max
server_lr = 1.0          # params += server_lr * average delta (1.0 = FedAvg); [server_optimizer]'s eta

[server_optimizer]       # model regime: how the server applies the mean delta (FedOpt, docs/definitions.md)
name = "sgd"             # sgd (FedAvg) | avgm (server momentum) | adagrad | adam | yogi
beta1 = 0.9              # avgm: momentum; adagrad, adam, yogi: first-moment decay
beta2 = 0.99             # adam, yogi: second-moment decay
tau = 0.001              # adagrad, adam, yogi: added to sqrt(v); v starts at tau^2

[sgd]                    # gradient regime (the server, or the workers, step with [optimizer])
batch = 0                # samples per client gradient; 0 or "full" = the whole shard

[allreduce]              # topology = "allreduce": the workers' ring (and tensor's, and [grid]'s)
backend = "zmq-ring"     # what sums the gradients: zmq-ring (fedpar's ring) | mpi (MPI_Allreduce
                         # under `mpirun -n P+1 fedpar launch`) | nccl (the clients' GPUs); docs/cluster.md
bind = "tcp://127.0.0.1:*"  # where each worker listens for its previous neighbour; across hosts
                         # "tcp://0.0.0.0:*" (the server names each by the address it sees)
bucket_floats = 1048576  # the gradient is reduced in buckets of this many floats
deadline_seconds = 10.0  # a silent neighbour stops the ring with an error after this long
hash_every = 10          # rounds between checks that every replica holds the same bytes (and the last)
fault_flip_rank = -1     # testing the check: this rank (a [grid]'s process index) flips one bit after round 1
elastic = false          # a worker that dies: the others re-form the ring without it and redo the round

[pipeline]               # topology = "pipeline": one stage (a contiguous slice of the layers) per process
micro_batches = 1        # sgd.batch is split into this many micro-batches per step
schedule = "1f1b"        # gpipe (all forwards, then all backwards) | 1f1b (one forward, one backward)
split = []               # layers where stages 2.. start, e.g. ["fc2", "fc3"]; [] = balance parameter counts
bind = "tcp://127.0.0.1:*"  # where each stage listens for its neighbours
deadline_seconds = 10.0  # a silent neighbour stops the pipeline with an error after this long

[grid]                   # topology = "pipeline" or "tensor" as a hybrid with data parallelism
data = 1                 # replicas of the model-parallel group: processes = data x (stages or ways);
                         # replica r trains on client r's shard (partition.clients = data), and each
                         # part's gradients are all-reduced across the replicas ([allreduce]'s ring)

[robust]                 # parameter server, gradient or model regime: how the server reduces the updates
rule = "mean"            # mean (weighted) | median | trimmed-mean | krum | multi-krum (docs/definitions.md)
trim = 0.1               # trimmed-mean: the share cut from each end, per coordinate
byzantine = 1            # krum, multi-krum: f, the attackers tolerated (needs more than 2 f + 2 updates)
select = 0               # multi-krum: the updates averaged (0: n - f)
clip_norm = 0.0          # > 0: every update scaled to at most this L2 norm first

[privacy]                # DP-FedAvg: client-level differential privacy, trusted server (docs/privacy.md)
clip_norm = 0.0          # S > 0: each client's update clipped to this L2 norm and their average noised
                         # (needs client_sampling = "poisson" and weighting = "uniform")
noise_multiplier = 0.0   # z: N(0, (z S / K)^2) added to every coordinate of the average (K = fraction
                         # x clients, the fixed denominator); 0: clipping alone, no guarantee
delta = 1e-5             # the delta of the (epsilon, delta) the accountant reports (keep it below 1 / clients)
adaptive_quantile = 0.0  # gamma in (0, 1): the clip starts at clip_norm and follows this quantile of the
                         # update norms (Andrew et al. 2021); 0: the clip stays at clip_norm
adaptive_lr = 0.2        # eta_C: each round C <- C exp(-eta_C (share of updates within C - gamma))
count_noise = 0.0        # sigma_b, with noise: the std of the noise on the count of updates within C
                         # (0: K / 20); above noise_multiplier / 2, the updates' own noise growing to keep z

[attack]                 # simulated faulty clients (docs/definitions.md#simulated-attacks)
kind = "none"            # none | sign-flip | scale | noise | label-flip
clients = 0              # f: client ids 0 .. f-1 attack, every round they take part in
scale = -10.0            # scale: the factor their updates are multiplied by
sigma = 1.0              # noise: the std of the Gaussian noise added to their updates

[async]                  # regime = "async" (parameter server, no barrier)
staleness_bound = 0      # reject an update computed on a model more than this many versions old; 0 = none
staleness_lr = false     # scale the learning rate by 1 / max(1, staleness)

[stragglers]             # heterogeneous workers, in any regime: "client:value" items
slowdown = []            # e.g. ["0:4"]: client 0's compute takes 4x as long (it sleeps the difference)
delay_seconds = []       # e.g. ["1:0.5"]: client 1 waits 0.5 s before sending each update

[compression]            # what crosses the wire (docs/definitions.md#compression)
uplink = "none"          # client -> server updates: none | fp16 | bf16 | topk | randk | qsgd
                         # | scaled_sign | sign | powersgd; topology allreduce: fp16 | bf16 (the
                         # ring's chunks) | randk | powersgd (all-reduced in compressed form)
downlink = "none"        # server -> client model: none | fp16 | bf16, or with downlink_delta any codec
downlink_delta = false   # send the encoded change since what the clients hold (what the codec drops
                         # goes out with the next round); every process then gets every TASK
ratio = 0.01             # topk, randk: the fraction of values sent
randk_unbiased = false   # randk, uplink and downlink: decode the values times d / k, so E[D(C(v))]
                         # = v (at ratio <= 0.5 not contractive: no error feedback or delta downlink)
levels = 4               # qsgd: s, the number of positive levels
rank = 2                 # powersgd: r, the columns of each matrix's factors P (n x r), Q (m x r)
bucket = 512             # qsgd: values per norm
topk_bucket = 0          # topk: values per selection, the ratio kept in each (0: the whole vector)
error_feedback = false   # clients keep what the uplink codec dropped and add it to the next update
aggregate = "mean"       # mean: the weighted average of the decoded updates | majority: the sign
                         # of the sum of the clients' signs (signSGD with majority vote; uplink = "sign")

[security]               # CURVE on the links to the server and between workers (docs/distributed.md)
key = ""                 # the server's key pair file (fedpar keygen server); empty: plaintext
clients = ""             # the folder of client public keys (*.pub) it lets in

[network]                # the links between server and clients (docs/network.md)
mode = "off"             # off | emulated (messages are held until their arrival time: runs slow
                         # down) | simulated (no waiting: each round's time is computed and recorded)
profile = "wifi"         # every client's link: datacenter | wifi | lte | 3g | custom
profiles = []            # per-client overrides, "client:profile" items, e.g. ["0:lte", "3:3g"]
heterogeneous = ""       # e.g. "wifi:0.5,lte:0.3,3g:0.2": each client's profile drawn from
                         # (seed, client) with these weights (replaces profile)
jitter = "uniform"       # extra delay per message: uniform U[0, j) | normal |N(0, 1)| * j
server = ""              # simulated: the server's own link, shared by every client's messages (a
                         # profile: its up_bps carries the TASKs, down_bps the replies); "": unlimited
drop_late = false        # simulated, synchronous parameter server: an update the clock brings in
                         # after wait_seconds is left out of its round, as a real deadline leaves it
availability_by_profile = []  # "profile:share" items: the availability of named profiles the
                         # clients have, e.g. ["3g:0.3", "lte:0.7"] (custom's: [network.custom])
availability_rounds = 1  # rounds one availability draw holds for a client: 1 draws each round
                         # anew; L > 1: on or off in stretches of L rounds (offset per client)
sample_from = "all"      # all: a round draws from every client and leaves out the unavailable ones
                         # drawn (fewer asked) | available: it draws among the clients available
                         # in it (a deployment's checked-in devices; fewer only when fewer are)

[network.custom]         # the profile named "custom"
down_bps = 10000000.0    # server -> client, bit/s
up_bps = 10000000.0      # client -> server, bit/s
latency_seconds = 0.0    # one way, every message
jitter_seconds = 0.0     # j above
loss = 0.0               # probability a TASK or UPDATE is lost
availability = 1.0       # probability the client takes part in a round

[diagnostics]            # measurements that cost extra
drift = false            # model regime: clients also send K x their first step; logs update_drift
save_params_every = 0    # > 0: write params/round-NNNN.safetensors every r rounds (weight divergence)
)";

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}

// A key that names one of two ways: the first word's value, or the second's, or an Error.
template <typename E>
E either_word(const Config& c, const std::string& key, std::pair<const char*, E> first,
              std::pair<const char*, E> second) {
  const std::string name = c.get_string(key);
  if (name == first.first) return first.second;
  require(name == second.first,
          fmt::format("{} must be {} or {}, got '{}'", key, first.first, second.first, name));
  return second.second;
}

// network.availability_by_profile: "profile:share" items setting the availability of named
// profiles (3g devices taking part less often than wifi ones), for the clients that have them; the
// custom profile's is network.custom.availability.
void set_profile_availability(const Config& c, NetworkSpec& n) {
  std::set<std::string> seen;
  for (const std::string& item : c.get_string_list("network.availability_by_profile")) {
    const size_t colon = item.find(':');
    const std::string name = item.substr(0, colon);
    double share = -1;
    if (colon != std::string::npos) {
      const std::string value = item.substr(colon + 1);
      char* end = nullptr;
      share = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0') share = -1;
    }
    require(share >= 0 && share <= 1,
            fmt::format("network.availability_by_profile: '{}' is not \"profile:share\" with a "
                        "share in [0, 1] (e.g. \"3g:0.3\")",
                        item));
    require(name != "custom",
            "network.availability_by_profile: the custom profile's availability is "
            "network.custom.availability");
    require(seen.insert(name).second,
            fmt::format("network.availability_by_profile names '{}' twice", name));
    (void)link_profile(name, {}, "network.availability_by_profile");  // a name it knows
    // a profile that this seed's heterogeneous draw gave no client has nothing to set: the same
    // config holds for every seed of a sweep
    for (LinkProfile& l : n.profiles)
      if (l.name == name) l.availability = share;
  }
}

// "client:rest" with a client id (digits before the colon) and something after it.
std::optional<std::pair<uint32_t, std::string>> client_item(const std::string& item) {
  const size_t colon = item.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) return std::nullopt;
  char* end = nullptr;
  const long client = std::strtol(item.c_str(), &end, 10);
  if (end != item.c_str() + colon || client < 0 || client > long(UINT32_MAX)) return std::nullopt;
  return std::pair{uint32_t(client), item.substr(colon + 1)};
}

// A list of "client:value" items as a map; every value must be >= minimum.
std::map<uint32_t, double> client_values(const Config& c, const char* key, double minimum,
                                         int clients) {
  std::map<uint32_t, double> out;
  for (const std::string& item : c.get_string_list(key)) {
    const auto parsed = client_item(item);
    char* end = nullptr;
    const double v = parsed ? std::strtod(parsed->second.c_str(), &end) : 0;
    if (!parsed || *end != '\0' || !(v >= minimum))
      throw Error(fmt::format("{}: '{}' is not \"client:value\" with a client id and a value >= {}",
                              key, item, minimum));
    if (parsed->first >= uint32_t(clients))  // a typo would otherwise slow nobody, silently
      throw Error(fmt::format("{}: client {} does not exist (partition.clients = {}: ids 0..{})",
                              key, parsed->first, clients, clients - 1));
    if (!out.emplace(parsed->first, v).second)  // which would apply is anyone's guess
      throw Error(fmt::format("{}: client {} is given twice", key, parsed->first));
  }
  return out;
}

// A codec's name and parameters, checked once here; the error names the key.
void check_codec(const char* key, const std::string& name, const CodecParams& p) {
  try {
    check_codec_params(name, p);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", key, e.what()));
  }
}

CompressionSpec resolve_compression(const Config& c, const RunSpec& s) {
  CompressionSpec k;
  k.uplink = c.get_string("compression.uplink");
  k.downlink = c.get_string("compression.downlink");
  k.params.ratio = c.get_float("compression.ratio");
  const int64_t levels = c.get_int("compression.levels"), bucket = c.get_int("compression.bucket");
  require(levels >= 1 && levels <= 127, "compression.levels must be in 1..127");
  require(bucket >= 1 && bucket <= (1 << 24), "compression.bucket must be in 1..16777216");
  k.params.levels = uint32_t(levels);
  k.params.bucket = uint32_t(bucket);
  const int64_t topk_bucket = c.get_int("compression.topk_bucket");
  require(topk_bucket >= 0 && topk_bucket <= (int64_t(1) << 31),
          "compression.topk_bucket must be >= 0 (0 = the whole vector)");
  k.params.topk_bucket = uint32_t(topk_bucket);
  const int64_t rank = c.get_int("compression.rank");
  require(rank >= 1 && rank <= kPowerSgdMaxRank,
          fmt::format("compression.rank must be in 1..{}", kPowerSgdMaxRank));
  k.params.rank = uint32_t(rank);
  k.params.seed = s.seed;
  k.params.randk_unbiased = c.get_bool("compression.randk_unbiased");
  k.error_feedback = c.get_bool("compression.error_feedback");
  const std::string aggregate = c.get_string("compression.aggregate");
  require(aggregate == "mean" || aggregate == "majority",
          fmt::format("compression.aggregate must be mean or majority, got '{}'", aggregate));
  k.majority = aggregate == "majority";
  check_codec("compression.uplink", k.uplink, k.params);
  k.downlink_delta = c.get_bool("compression.downlink_delta");
  check_codec("compression.downlink", k.downlink, k.params);
  require(k.downlink_delta || k.downlink == "none" || k.downlink == "fp16" || k.downlink == "bf16",
          fmt::format("compression.downlink = \"{}\" encodes a change, not a model: it needs "
                      "compression.downlink_delta = true (or fp16 / bf16)",
                      k.downlink));
  require(!k.downlink_delta || k.downlink != "none",
          "compression.downlink_delta needs a downlink codec (compression.downlink)");
  require(!k.downlink_delta || s.regime != Regime::kAsync,
          "compression.downlink_delta keeps one replica for every client: regime async sends "
          "each client its own version (use downlink fp16 / bf16 there)");
  require(!k.error_feedback || k.uplink != "none",
          "compression.error_feedback needs an uplink codec (compression.uplink)");
  // Error feedback needs a contractive codec, E||x - D(C(x))||^2 < ||x||^2, and a delta downlink
  // is error feedback on the server's side (x - x^ keeps what the codec dropped). QSGD's variance
  // is at most min(B / s^2, sqrt(B) / s) ||x||^2 (Alistarh et al. 2017), unbiased random-k's
  // exactly (d/k - 1) ||x||^2: refused where that is not below 1.
  const double qsgd_variance =
      std::min(double(k.params.bucket) / double(k.params.levels * k.params.levels),
               std::sqrt(double(k.params.bucket)) / double(k.params.levels));
  const std::string qsgd_why = fmt::format(
      "its variance bound min(bucket / s^2, sqrt(bucket) / s) is {:.3g} at levels = {}, bucket = "
      "{}",
      qsgd_variance, k.params.levels, k.params.bucket);
  const bool randk_expands = k.params.randk_unbiased && k.params.ratio <= 0.5;
  const std::string randk_why = fmt::format(
      "randk_unbiased scales the values by d / k, so E||x - D(C(x))||^2 = (d/k - 1) ||x||^2, "
      "not below ||x||^2 at ratio = {:g} (<= 0.5)",
      k.params.ratio);
  require(!k.error_feedback || k.uplink != "qsgd" || qsgd_variance < 1,
          fmt::format("compression.error_feedback needs a contractive codec (||x - D(C(x))|| < "
                      "||x||); QSGD is unbiased but not contractive here ({}), and its residual "
                      "grows without bound: use it without error feedback, or more levels",
                      qsgd_why));
  require(!k.error_feedback || k.uplink != "randk" || !randk_expands,
          fmt::format("compression.error_feedback needs a contractive codec, and {}: use unbiased "
                      "random-k without error feedback, or random-k as it is (randk_unbiased = "
                      "false) with it",
                      randk_why));
  require(!k.downlink_delta || k.downlink != "qsgd" || qsgd_variance < 1,
          fmt::format("compression.downlink = \"qsgd\" with downlink_delta: what the codec drops "
                      "stays in x - x^ and goes out again, as with error feedback, which needs a "
                      "contractive codec; QSGD is not, and the clients' copy drifts from the model "
                      "without bound ({}; at the defaults the 2NN fell to chance in 15 rounds): "
                      "use topk, randk, scaled_sign or powersgd, or fp16 / bf16",
                      qsgd_why));
  require(!k.downlink_delta || k.downlink != "randk" || !randk_expands,
          fmt::format("compression.downlink = \"randk\" with downlink_delta: what the codec drops "
                      "goes out again, as with error feedback, and {}; randk_unbiased applies to "
                      "the uplink and the downlink alike, so a random-k delta downlink needs it "
                      "false",
                      randk_why));
  // sign decodes to +-1: a step's direction for the gradient regime's server, which scales it by
  // its rate; a model delta, or a delta downlink's change, of +-1 moves every weight by 1
  require(k.uplink != "sign" || s.regime != Regime::kModel,
          "compression.uplink = \"sign\" sends only signs, which decode to +-1: as a model "
          "delta that moves every weight by 1 a round; use scaled_sign (the mean magnitude "
          "times the signs) in the model regime");
  require(k.downlink != "sign",
          "compression.downlink = \"sign\" would send the model's change as +-1 per weight, "
          "moving every client's copy by 1 a round; use scaled_sign");
  require(!k.majority || k.uplink == "sign",
          "compression.aggregate = \"majority\" votes with signs: it needs uplink = \"sign\"");
  require(!k.majority || s.regime == Regime::kGradient,
          "compression.aggregate = \"majority\" steps along voted gradient signs: it needs "
          "regime = \"gradient\"");
  require(s.topology != Topology::kMaster || (k.uplink == "none" && k.downlink == "none"),
          "topology 'master' sends activations and their gradients uncompressed: it needs "
          "compression.uplink and downlink = \"none\"");
  if (s.topology == Topology::kAllReduce) {
    // The ring adds what it carries: a codec must give sums that are encodings too.
    const bool cast = k.uplink == "fp16" || k.uplink == "bf16";
    require(k.uplink == "none" || cast || k.uplink == "randk" || k.uplink == "powersgd",
            fmt::format("topology 'allreduce' sums on the way: it carries fp16, bf16, randk or "
                        "powersgd, not {} (top-k picks other indices on every worker, so a "
                        "partial sum is no top-k encoding, and gathering them grows with the "
                        "workers; QSGD and sign codes do not add up either; use the "
                        "parameter-server topology for them)",
                        k.uplink));
    require(k.downlink == "none", "topology 'allreduce' has no downlink: the replicas stay put");
    require(!k.error_feedback || !cast,
            "topology 'allreduce' rounds fp16 / bf16 at every hop, not at the sender: error "
            "feedback cannot see that error (compression.error_feedback = false, or randk / "
            "powersgd, which compress at the sender)");
  }
  return k;
}

// backup_clients: a round aggregates the first updates to come in, in real arrival order, and the
// rest are not waited for; what that needs of the run.
int resolve_backup_clients(const Config& c, const RunSpec& s) {
  const int b = c.get_int32("backup_clients");
  require(b >= 0, "backup_clients must be >= 0 (0: every asked client is waited for)");
  if (b == 0) return 0;
  require(s.topology == Topology::kParameterServer && s.regime != Regime::kAsync,
          s.regime == Regime::kAsync
              ? "backup_clients leaves a synchronous round's slowest updates out: regime = "
                "\"async\" already applies each update as it comes"
              : "backup_clients leaves a synchronous round's slowest updates out: it needs "
                "topology = \"parameter-server\" (the master, the ring and model parallelism "
                "need every worker's part of each step)");
  const long asked = clients_per_round(s);
  require(b < asked,
          fmt::format("backup_clients = {} leaves no update of the {} clients a round asks "
                      "(fraction x partition.clients): it must be less than {}",
                      b, asked, asked));
  require(s.processes >= s.partition.clients,
          fmt::format("backup_clients leaves out the updates that come last, and a process "
                      "computes its clients one after another: with {} clients on {} processes "
                      "the last of each process's would be left out every round, not the slow "
                      "ones; give each client its own process (processes = partition.clients)",
                      s.partition.clients, s.processes));
  require(!s.compression.downlink_delta,
          "backup_clients with compression.downlink_delta: a slow process must apply every "
          "round's change, so it works through every TASK and falls further behind each round; "
          "use a downlink that sends the model (none, fp16, bf16)");
  require(c.get_string("local.algorithm") != "scaffold",
          "backup_clients leaves updates out, and local.algorithm = \"scaffold\" keeps the "
          "server's copy of each client's control variate in step with the client's own: a "
          "left-out update would part them");
  require(s.network.mode != NetworkMode::kSimulated,
          "backup_clients takes the updates in the order they really arrive, which network.mode "
          "= \"simulated\" does not follow: use network.mode = \"emulated\" (or network.drop_late "
          "to leave out what the simulated clock brings in after wait_seconds)");
  return b;
}

// allreduce.backend; MPI and NCCL sum float32 over a fixed set of ranks, so they leave out what
// needs the ring's own hops (16-bit chunks, compressed sums, re-forming without the dead).
RingBackend resolve_ring_backend(const Config& c, const RunSpec& s) {
  const std::string b = c.get_string("allreduce.backend");
  require(b == "zmq-ring" || b == "mpi" || b == "nccl",
          fmt::format("allreduce.backend must be zmq-ring, mpi or nccl, got '{}'", b));
  if (b == "zmq-ring") return RingBackend::kZmqRing;
  const std::string named = fmt::format("allreduce.backend = \"{}\"", b);
  require(s.topology == Topology::kAllReduce,
          named +
              " sums the allreduce topology's gradients: it needs topology = \"allreduce\" "
              "(pipeline and tensor replicas sum over the zmq-ring)");
  require(s.compression.uplink == "none",
          fmt::format("{} sums float32: compression.uplink = \"{}\" runs on backend = "
                      "\"zmq-ring\"",
                      named, s.compression.uplink));
  require(!s.ring_elastic, named +
                               " cannot re-form without a dead rank: allreduce.elastic re-forms "
                               "backend = \"zmq-ring\"");
  return b == "mpi" ? RingBackend::kMpi : RingBackend::kNccl;
}

// Why a profile is lossy and how to get its links without loss, for the errors refusing it.
// `per_client`: the profile came from network.profiles or network.heterogeneous, not
// network.profile.
std::string lossless_hint(const LinkProfile& l, bool per_client) {
  const std::string what = l.loss > 0 && l.availability < 1
                               ? fmt::format("loses {:g}% of messages and has availability {:g}",
                                             100 * l.loss, l.availability)
                           : l.loss > 0 ? fmt::format("loses {:g}% of messages", 100 * l.loss)
                                        : fmt::format("has availability {:g}", l.availability);
  if (per_client)
    return fmt::format(
        "{}, which network.profiles or network.heterogeneous gives some clients, {}: give them a "
        "profile without loss",
        l.name, what);
  if (l.name == "custom")
    return fmt::format(
        "network.profile \"custom\" {}: set network.custom.loss = 0 and "
        "network.custom.availability = 1",
        what);
  return fmt::format(
      "{} {}; for its links without loss set network.profile = \"custom\" and "
      "network.custom.down_bps = {:g}, up_bps = {:g}, latency_seconds = {:g}, "
      "jitter_seconds = {:g}",
      l.name, what, l.down_bps, l.up_bps, l.latency_s, l.jitter_s);
}

NetworkSpec resolve_network_section(const Config& c, const RunSpec& s) {
  const std::string mode = c.get_string("network.mode"), jitter = c.get_string("network.jitter");
  require(mode == "off" || mode == "emulated" || mode == "simulated",
          fmt::format("network.mode must be off, emulated or simulated, got '{}'", mode));
  require(jitter == "uniform" || jitter == "normal",
          fmt::format("network.jitter must be uniform or normal, got '{}'", jitter));
  std::vector<std::pair<uint32_t, std::string>> overrides;
  for (const std::string& item : c.get_string_list("network.profiles")) {
    const auto parsed = client_item(item);
    require(parsed.has_value(),
            fmt::format("network.profiles: '{}' is not \"client:profile\" (e.g. \"0:lte\"; "
                        "profiles: {})",
                        item, valid_profile_names()));
    overrides.push_back(*parsed);
  }
  const LinkProfile custom{.name = "custom",
                           .down_bps = c.get_float("network.custom.down_bps"),
                           .up_bps = c.get_float("network.custom.up_bps"),
                           .latency_s = c.get_float("network.custom.latency_seconds"),
                           .jitter_s = c.get_float("network.custom.jitter_seconds"),
                           .loss = c.get_float("network.custom.loss"),
                           .availability = c.get_float("network.custom.availability")};
  check_link_profile(custom);  // checked even when no client uses it
  NetworkSpec n =
      resolve_network(mode == "off"        ? NetworkMode::kOff
                      : mode == "emulated" ? NetworkMode::kEmulated
                                           : NetworkMode::kSimulated,
                      jitter == "uniform" ? JitterKind::kUniform : JitterKind::kNormal,
                      c.get_string("network.profile"), c.get_string("network.heterogeneous"),
                      overrides, custom, s.seed, size_t(std::max(0, s.partition.clients)));
  set_profile_availability(c, n);
  const bool sync_ps = s.topology == Topology::kParameterServer && s.regime != Regime::kAsync;
  const bool ring = s.topology == Topology::kAllReduce;
  const bool master = s.topology == Topology::kMaster && s.regime != Regime::kAsync;
  const bool async = s.topology == Topology::kParameterServer && s.regime == Regime::kAsync;
  const bool parts = s.model_parallel();
  // simulated mode times every topology (the master and the ring need regime = "gradient")
  if (n.mode == NetworkMode::kSimulated && ring) {
    // the ring's time is computed from the bytes fedpar's own ring sends, in a fixed ring
    require(s.ring_backend == RingBackend::kZmqRing,
            "network.mode = \"simulated\" times the bytes fedpar's own ring sends: it needs "
            "allreduce.backend = \"zmq-ring\"");
    require(!s.ring_elastic,
            "network.mode = \"simulated\" does not model a ring re-formed mid-round: it needs "
            "allreduce.elastic = false");
  }
  // A master or model-parallel step, a ring, a simulated async run cannot go on without a
  // message (emulated async sends a lost task again; emulated rings and splits are refused).
  const auto lossy_profile = std::ranges::find_if(
      n.profiles, [](const LinkProfile& l) { return l.loss > 0 || l.availability < 1; });
  const bool needs_every_message = n.mode == NetworkMode::kSimulated
                                       ? ring || master || async || parts
                                       : n.mode == NetworkMode::kEmulated && master;
  if (needs_every_message && lossy_profile != n.profiles.end())
    throw Error(fmt::format(
        "{} {}: it {}, so its links need loss = 0 and availability = 1 ({})",
        n.mode == NetworkMode::kSimulated ? "a simulated" : "an emulated",
        fmt::format(
            "{} {}",
            ring     ? "ring"
            : master ? "master"
            : parts  ? "model-parallel step"
                     : "asynchronous run",
            n.mode == NetworkMode::kSimulated ? "carries time, not loss" : "loses messages"),
        async ? "would wait for a lost update forever" : "cannot go on without a worker's message",
        lossless_hint(*lossy_profile, lossy_profile->name != c.get_string("network.profile"))));
  if (const std::string server = c.get_string("network.server"); !server.empty()) {
    require(n.mode != NetworkMode::kEmulated,
            "network.server is the simulated server's shared link: emulated mode shapes each "
            "process's link on its own (use network.mode = \"simulated\")");
    require(!async || n.mode == NetworkMode::kOff,
            "network.server shares the server's link among a synchronous round's messages: it "
            "does not apply to regime = \"async\" (each update crosses its client's link alone)");
    n.server = link_profile(server, custom, "network.server");
    require(n.server->loss == 0 && n.server->availability >= 1,
            fmt::format("network.server = '{}': the server's link carries time only, so its "
                        "profile needs loss = 0 and availability = 1 (for such a link's numbers "
                        "use \"custom\" with network.custom.loss = 0)",
                        server));
  }
  // a stage reports each op's time and bytes in its UPDATE (64 KiB of JSON at most: about 60
  // bytes a micro-batch)
  require(n.mode != NetworkMode::kSimulated || s.topology != Topology::kPipeline ||
              c.get_int("pipeline.micro_batches") <= kMaxSimulatedMicroBatches,
          fmt::format("a simulated pipeline times each micro-batch from its stages' reports: it "
                      "takes pipeline.micro_batches <= {}, got {}",
                      kMaxSimulatedMicroBatches, c.get_int("pipeline.micro_batches")));
  n.drop_late = c.get_bool("network.drop_late");
  const int64_t stretch = c.get_int("network.availability_rounds");
  require(stretch >= 1 && stretch <= 1000000,
          "network.availability_rounds must be between 1 (each round drawn anew) and 1000000");
  n.availability_rounds = uint32_t(stretch);
  n.sample_available =
      either_word<bool>(c, "network.sample_from", {"all", false}, {"available", true});
  require(!n.sample_available || (n.on() && sync_ps),
          "network.sample_from = \"available\" draws a synchronous round's clients among those "
          "[network]'s availability makes available: it needs network.mode = \"simulated\" or "
          "\"emulated\" and the parameter-server topology (regime = \"gradient\" or \"model\")");
  if (n.drop_late) {
    require(n.mode == NetworkMode::kSimulated,
            "network.drop_late leaves out the updates the simulated clock brings in after "
            "wait_seconds: it needs network.mode = \"simulated\" (emulated and real links meet "
            "the real deadline, which leaves late updates out already)");
    require(sync_ps,
            "network.drop_late applies to the synchronous rounds of the parameter-server "
            "topology (regime = \"gradient\" or \"model\")");
    require(c.get_string("local.algorithm") != "scaffold",  // (s.algorithm is resolved later)
            "network.drop_late with SCAFFOLD: a client whose update is left out has moved its "
            "control variate c_i, and the server's c would no longer be their mean");
  }
  require(n.mode != NetworkMode::kEmulated || s.topology != Topology::kAllReduce,
          "network.mode = \"emulated\" shapes the server's links, not the ring's between workers: "
          "it does not apply to topology = \"allreduce\" (use network.mode = \"simulated\": it "
          "times the ring's own links)");
  const bool lossy =
      n.mode == NetworkMode::kEmulated &&
      std::ranges::any_of(n.profiles, [](const LinkProfile& l) { return l.loss > 0; });
  require(!lossy || !s.compression.downlink_delta,
          "compression.downlink_delta sends each process the model's change, and a TASK the "
          "emulated network loses would leave that process's model behind for good: use profiles "
          "without loss, network.mode = \"simulated\", or downlink_delta = false");
  require(!n.on() || n.all_available() || sync_ps,
          "network: a profile with availability < 1 needs the parameter-server topology with "
          "regime = \"gradient\" or \"model\" (clients are left out of synchronous rounds)");
  require(
      !n.on() || n.profiles.empty() ||
          std::ranges::any_of(n.profiles, [](const LinkProfile& l) { return l.availability > 0; }),
      "network: every client's profile has availability = 0, so no client would ever take "
      "part and the model would stay as it starts (availability is the chance a client takes "
      "part in a round)");
  return n;
}

// [pipeline]; with another topology only the keys' own ranges are checked.
PipelineSpec resolve_pipeline(const Config& c, const RunSpec& s) {
  PipelineSpec p;
  p.micro_batches = c.get_int32("pipeline.micro_batches");
  require(p.micro_batches >= 1, "pipeline.micro_batches must be >= 1");
  p.schedule = parse_pipe_schedule(c.get_string("pipeline.schedule"));
  p.split = c.get_string_list("pipeline.split");
  p.bind = c.get_string("pipeline.bind");
  p.deadline_seconds = c.get_float("pipeline.deadline_seconds");
  require(p.deadline_seconds > 0, "pipeline.deadline_seconds must be > 0");
  if (s.topology != Topology::kPipeline) return p;
  require(s.sgd_batch == 0 || s.sgd_batch >= p.micro_batches,
          fmt::format("pipeline.micro_batches = {} needs sgd.batch >= {}", p.micro_batches,
                      p.micro_batches));
  require(p.split.empty() || p.split.size() + 1 == size_t(s.model_parts()),
          fmt::format("pipeline.split names where stages 2.. start: {} name(s) for {} stages, "
                      "expected {} (`fedpar models` lists where a stage may start)",
                      p.split.size(), s.model_parts(), s.model_parts() - 1));
  return p;
}

// [robust]: the rule, its parameters' ranges, and where it applies.
RobustOptions resolve_robust(const Config& c, const RunSpec& s) {
  RobustOptions r{.rule = parse_aggregate_rule(c.get_string("robust.rule")),
                  .trim = c.get_float("robust.trim"),
                  .byzantine = c.get_int32("robust.byzantine"),
                  .select = c.get_int32("robust.select"),
                  .clip_norm = c.get_float("robust.clip_norm")};
  require(r.trim >= 0 && r.trim < 0.5, "robust.trim must be in [0, 0.5)");
  require(r.byzantine >= 0 && r.select >= 0 && r.clip_norm >= 0,
          "robust.byzantine, robust.select and robust.clip_norm must be >= 0");
  if (r.rule == AggregateRule::kMean && r.clip_norm == 0) return r;
  require(s.topology == Topology::kParameterServer && s.regime != Regime::kAsync,
          "robust aggregation replaces the synchronous parameter server's mean: it needs "
          "topology = \"parameter-server\" and regime = \"gradient\" or \"model\"");
  const long asked = updates_per_round(s);
  if (r.rule == AggregateRule::kTrimmedMean && r.trim > 0) {  // as robust_aggregate cuts
    // the least trim that cuts one, rounded up to 3 decimals (0.334 for 3: 0.333 cuts none)
    const double least = std::ceil(1000.0 / double(asked)) / 1000.0;
    require(trimmed_cut(r.trim, size_t(asked)) > 0,
            fmt::format("robust.rule = \"trimmed-mean\" with trim = {:g} cuts floor({:g} x {}) = 0 "
                        "of the {} updates a round from each end: it would be the plain mean; {}",
                        r.trim, r.trim, asked, asked,
                        asked >= 3 ? fmt::format("raise robust.trim to {:g} (1 / {}) or more, or "
                                                 "ask more clients a round",
                                                 least, asked)
                                   : "ask at least 3 clients a round"));
  }
  if (r.rule == AggregateRule::kKrum || r.rule == AggregateRule::kMultiKrum) {
    require(asked > 2 * r.byzantine + 2,
            fmt::format(
                "robust.rule = \"{}\" with byzantine = {} needs more than {} clients per "
                "round, this run asks {}{}",
                aggregate_rule_name(r.rule), r.byzantine, 2 * r.byzantine + 2, clients_per_round(s),
                s.backup_clients > 0 ? fmt::format(" and aggregates {} (backup_clients = {})",
                                                   asked, s.backup_clients)
                                     : ""));
    require(r.select <= asked - r.byzantine,
            fmt::format("robust.select = {} is more than the {} updates multi-krum keeps of {}",
                        r.select, asked - r.byzantine, asked));
    require(s.network.all_available(),
            "robust.rule = krum or multi-krum counts on every asked client answering: it needs "
            "every network profile's availability = 1");
  }
  require(s.compression.uplink == "none" || s.compression.uplink == "fp16" ||
              s.compression.uplink == "bf16",
          "robust aggregation compares the clients' updates coordinate by coordinate: a "
          "sparsifying or quantizing uplink (topk, randk, qsgd, sign, scaled_sign, powersgd) would "
          "leave mostly zeros; use compression.uplink = none, fp16 or bf16");
  require(!s.compression.majority,
          "robust.rule and compression.aggregate = \"majority\" both decide the aggregate: "
          "choose one");
  return r;
}

// [optimizer] for a run: global steps are rounds (async: applied updates, num_clients a round);
// the global batch of a gradient-regime step is sgd.batch times the clients that send one.
OptimizerSpec resolve_run_optimizer(const Config& c, const RunSpec& s) {
  const bool async = s.regime == Regime::kAsync;
  const int64_t steps = int64_t(s.rounds) * (async ? s.partition.clients : 1);
  const bool model = s.regime == Regime::kModel;
  require(!model || c.get_string("optimizer.scaling") == "none",
          "optimizer.scaling sets a data-parallel step's rate from its global batch: it needs "
          "regime = \"gradient\" or \"async\" (the model regime's clients step alone)");
  const int64_t senders = async ? 1 : updates_per_round(s);
  const OptimizerSpec o = resolve_optimizer(c, model ? 0 : s.sgd_batch * senders, steps);
  const bool fp16 = o.precision == Precision::kF16;
  require((o.accumulate == 1 && !fp16) || s.topology == Topology::kParameterServer ||
              s.topology == Topology::kAllReduce,
          "optimizer.accumulate and fp16 loss scaling act inside a client's gradient: they need "
          "topology = \"parameter-server\" or \"allreduce\" (a pipeline splits its batch with "
          "pipeline.micro_batches)");
  require(!async || !fp16,
          "optimizer.precision = \"fp16\" keeps a loss scale per client, which fedpar "
          "replay cannot follow: use bf16 with regime = \"async\"");
  return o;
}

// client_sampling, and what its fixed weights need of the run: one synchronous round of the
// parameter server (or model averaging) whose aggregate is the updates' weighted sum.
ClientSampling resolve_client_sampling(const Config& c, const RunSpec& s) {
  const std::string name = c.get_string("client_sampling");
  if (name == "uniform") return ClientSampling::kUniform;
  require(name == "proportional" || name == "scaled" || name == "poisson",
          fmt::format("client_sampling must be uniform, proportional, scaled or poisson, got '{}'",
                      name));
  const std::string what = fmt::format(
      "client_sampling = \"{}\" weighs each update as the scheme says and sums them", name);
  require(s.regime != Regime::kAsync && s.topology == Topology::kParameterServer,
          what +
              ": it needs a synchronous round on the parameter server (regime = \"gradient\" "
              "or \"model\", topology = \"parameter-server\")");
  // robust.clip_norm composes: each update is clipped, then weighed
  require(s.robust.rule == AggregateRule::kMean,
          what + fmt::format(": robust.rule = \"{}\" decides the aggregate its own way "
                             "(robust.rule = \"mean\")",
                             aggregate_rule_name(s.robust.rule)));
  require(s.backup_clients == 0,
          what +
              ": backup_clients leaves out the slowest updates, which are the largest "
              "clients' when local work grows with the shard, so the scheme's expectation "
              "would not hold (backup_clients = 0)");
  require(!s.compression.majority,
          what + ": compression.aggregate = \"majority\" gives every client one vote");
  require(s.algorithm != FlAlgorithm::kFedNova,
          what + ": local.algorithm = \"fednova\" weighs the normalised updates its own way");
  return name == "proportional" ? ClientSampling::kProportional
         : name == "scaled"     ? ClientSampling::kScaled
                                : ClientSampling::kPoisson;
}

// [privacy]: DP-FedAvg's clip, noise and delta, and what its accounting needs of the run: each
// client in a round with probability q, independently of the others and of the data (Poisson),
// and every update of the same weight 1 / K, so that one client moves the sum by at most S / K.
// (Poisson sampling already keeps [robust] to the mean.)
PrivacySpec resolve_privacy(const Config& c, const RunSpec& s) {
  PrivacySpec p{.clip_norm = c.get_float("privacy.clip_norm"),
                .noise_multiplier = c.get_float("privacy.noise_multiplier"),
                .delta = c.get_float("privacy.delta"),
                .adaptive = {.quantile = c.get_float("privacy.adaptive_quantile"),
                             .lr = c.get_float("privacy.adaptive_lr"),
                             .count_noise = c.get_float("privacy.count_noise")}};
  AdaptiveClip& a = p.adaptive;
  require(a.quantile >= 0 && a.quantile < 1, "privacy.adaptive_quantile must be in [0, 1)");
  require(a.lr > 0 && a.count_noise >= 0,
          "privacy.adaptive_lr must be > 0 and privacy.count_noise >= 0");
  require(!a.on() || p.clip_norm > 0,
          "privacy.adaptive_quantile moves the clip from where privacy.clip_norm starts it: set "
          "privacy.clip_norm > 0");
  require(p.clip_norm >= 0 && p.noise_multiplier >= 0,
          "privacy.clip_norm and privacy.noise_multiplier must be >= 0");
  require(p.delta > 0 && p.delta < 1, "privacy.delta must be in (0, 1)");
  require(p.noise_multiplier == 0 || p.clip_norm > 0,
          "privacy.noise_multiplier scales the noise to privacy.clip_norm, the most one client's "
          "update may move the average: set privacy.clip_norm > 0");
  // sigma_b against z where K is known (a partition that counts its clients from the data is
  // checked when the run starts)
  if (a.on() && p.noise_multiplier > 0 && s.partition.clients > 0)
    updates_noise_multiplier(p, size_t(clients_per_round(s)));
  if (!p.on()) return p;
  const std::string what = "[privacy] clips every client's update and noises their average";
  require(s.client_sampling == ClientSampling::kPoisson,
          what +
              ": its accountant counts on each client joining a round alone with probability "
              "q = K / N (Poisson sampling): set client_sampling = \"poisson\"" +
              (p.noised() ? std::string()
                          : " (to clip without noise or accounting, robust.clip_norm clips any "
                            "synchronous run)"));
  require(s.weighting == Weighting::kUniform,
          what +
              ": one client may move the average by S / K only where every update weighs the "
              "same 1 / K: set weighting = \"uniform\" (n_k weights would scale the noise to the "
              "largest client's)");
  require(s.robust.clip_norm == 0,
          what + ": privacy.clip_norm is its clip, which replaces robust.clip_norm (set it to 0)");
  require(s.algorithm == FlAlgorithm::kFedAvg,
          what +
              ": SCAFFOLD's control variates would reach the model unclipped and un-noised, and "
              "FedNova weighs its updates its own way (local.algorithm = \"fedavg\"; FedProx is "
              "fedavg with local.prox_mu)");
  require(!s.network.sample_available,
          what +
              ": network.sample_from = \"available\" makes q the share of the available, "
              "another each round; the accountant's q is K / N");
  require(!s.network.drop_late,
          what +
              ": network.drop_late leaves out updates by their simulated arrival, which one "
              "client's traffic can delay for the others (a shared server link), so one client "
              "could move the sum by more than S / K");
  return p;
}

// local.algorithm, and what each needs of the run.
FlAlgorithm resolve_algorithm(const Config& c, const RunSpec& s) {
  const std::string name = c.get_string("local.algorithm");
  require(name == "scaffold" || s.scaffold_correction == ScaffoldCorrection::kGradient,
          fmt::format("local.scaffold_correction is SCAFFOLD's: it needs local.algorithm = "
                      "\"scaffold\", got '{}'",
                      name));
  if (name == "fedavg") return FlAlgorithm::kFedAvg;
  require(name == "scaffold" || name == "fednova",
          fmt::format("local.algorithm must be fedavg, scaffold or fednova, got '{}'{}", name,
                      name == "fedprox" ? " (FedProx is fedavg with local.prox_mu > 0)" : ""));
  require(s.regime == Regime::kModel,
          fmt::format("local.algorithm = \"{}\" changes local training and its averaging: it "
                      "needs regime = \"model\"",
                      name));
  require(s.robust.rule == AggregateRule::kMean && s.robust.clip_norm == 0,
          fmt::format("local.algorithm = \"{}\" averages the updates its own way: it needs "
                      "robust.rule = \"mean\" and no robust.clip_norm",
                      name));
  if (name == "fednova") {
    require(!s.optimizer.sgd.nesterov && s.optimizer.sgd.weight_decay == 0,
            "local.algorithm = \"fednova\" normalises by the work of SGD with heavy-ball "
            "momentum: set optimizer.nesterov = false and optimizer.weight_decay = 0");
    require(s.prox_mu == 0,
            "local.algorithm = \"fednova\" normalises by the work of SGD with momentum; its "
            "FedProx form is not built: set local.prox_mu = 0");
    return FlAlgorithm::kFedNova;
  }
  require(s.scaffold_correction == ScaffoldCorrection::kAfterStep || !s.optimizer.sgd.nesterov,
          "local.algorithm = \"scaffold\" measures a client's mean gradient by the work of SGD "
          "with heavy-ball momentum: set optimizer.nesterov = false (or "
          "local.scaffold_correction = \"after-step\", which divides by the step count)");
  require(s.compression.uplink == "none" && s.compression.downlink == "none" &&
              !s.compression.downlink_delta,
          "local.algorithm = \"scaffold\" sends the control variates beside the model and the "
          "delta: it needs compression.uplink and compression.downlink = \"none\"");
  return FlAlgorithm::kScaffold;
}

// [attack]: who attacks how, and where the run can take it.
AttackSpec resolve_attack(const Config& c, const RunSpec& s) {
  AttackSpec a{.kind = parse_attack(c.get_string("attack.kind")),
               .clients = c.get_int32("attack.clients"),
               .scale = c.get_float("attack.scale"),
               .sigma = c.get_float("attack.sigma")};
  require(a.sigma >= 0, "attack.sigma must be >= 0");  // (get_float refuses inf and NaN)
  if (a.kind == AttackKind::kNone) return a;
  require(a.clients >= 1 && a.clients <= s.partition.clients,
          fmt::format("attack.clients = {}: the attackers are client ids 0 .. f-1, f between 1 "
                      "and partition.clients = {}",
                      a.clients, s.partition.clients));
  require(s.topology == Topology::kParameterServer && s.regime != Regime::kAsync,
          "attack: simulated faulty clients send their updates to the synchronous parameter "
          "server: it needs topology = \"parameter-server\" and regime = \"gradient\" or "
          "\"model\" (fedpar replay recomputes async runs from honest clients)");
  return a;
}

// [grid] and what every model-parallel topology (pipeline, tensor) needs.
int resolve_grid(const Config& c, const RunSpec& s) {
  const int data = c.get_int32("grid.data");
  require(data >= 1, "grid.data must be >= 1");
  require(data == 1 || s.model_parallel(),
          "grid.data replicates a pipeline or tensor group: it needs topology = \"pipeline\" or "
          "\"tensor\" (data parallelism alone is topology = \"allreduce\")");
  if (!s.model_parallel()) return data;
  const std::string t = s.topology == Topology::kPipeline ? "pipeline" : "tensor";
  require(s.processes % data == 0,
          fmt::format("grid.data = {} replicas cannot divide processes = {}: processes = data x "
                      "parts",
                      data, s.processes));
  require(s.partition.clients == data,
          fmt::format("topology '{}' trains one data stream per replica: it needs "
                      "partition.clients = grid.data = {}",
                      t, data));
  require(s.compression.uplink == "none" && s.compression.downlink == "none",
          fmt::format("topology '{}' sends activations and their gradients uncompressed: it needs "
                      "compression.uplink and compression.downlink = \"none\"",
                      t));
  require(s.network.mode != NetworkMode::kEmulated,
          fmt::format("network.mode = \"emulated\" shapes the server's links, not those between a "
                      "{} topology's processes: use network.mode = \"simulated\" (or \"off\")",
                      t));
  return data;
}

}  // namespace

namespace {

// The regime's unread settings ([local] outside the model regime, [sgd] in it) are said together,
// with what the run reads instead, and so are the network's when it is off; the others (a
// [local] key the model regime does not read among them) one by one.
bool regime_table(std::string_view key, const RunSpec& s) {
  return s.regime == Regime::kModel ? key.starts_with("sgd.") : key.starts_with("local.");
}

}  // namespace

PartitionParams resolve_partition_params(const Config& c, uint64_t seed) {
  PartitionParams p;
  p.scheme = c.get_string("partition.scheme");
  p.clients = c.get_int32("partition.clients");
  require(p.clients >= 1 || (p.clients == 0 && p.scheme == "natural"),
          fmt::format("partition.clients must be >= 1 (or 0 with scheme = \"natural\": one "
                      "client per user), got {}",
                      p.clients));
  const int64_t own = c.get_int("partition.seed");
  require(own >= 0, fmt::format("partition.seed must be >= 0 (0: the run's seed), got {}", own));
  p.seed = own > 0 ? uint64_t(own) : seed;
  p.shards_per_client = c.get_int32("partition.shards_per_client");
  p.labels_per_client = c.get_int32("partition.labels_per_client");
  p.alpha = c.get_float("partition.alpha");
  p.beta = c.get_float("partition.beta");
  p.min_size = c.get_int32("partition.min_size");
  p.sizes = c.get_string("partition.sizes");
  p.sigma = c.get_float("partition.sigma");
  p.holdout = c.get_float("partition.holdout");
  check_holdout(p.holdout);
  return p;
}

std::vector<std::string> unused_by_regime(const Config& c, const RunSpec& s) {
  std::vector<std::string> unused;
  for (const UnreadSetting& u : unread_settings(c, s))
    if (regime_table(u.key, s)) unused.push_back(fmt::format("{} = {}", u.key, u.value));
  return unused;
}

std::vector<std::string> run_warnings(const Config& c, const RunSpec& s) {
  std::vector<std::string> out;
  const auto batch = [](int64_t b) { return b ? std::to_string(b) : "full, the whole shard"; };
  if (const auto unused = unused_by_regime(c, s); !unused.empty())  // and what it reads instead
    out.push_back(fmt::format(
        "the {} regime does not read {}: {}", c.get_string("regime"), fmt::join(unused, ", "),
        s.regime == Regime::kModel
            ? fmt::format("its clients train local.steps (now {}) or local.epochs (now {}) of "
                          "local.batch (now {}) samples",
                          s.local_steps, s.local_epochs, batch(s.local_batch))
            : fmt::format("each gradient is sgd.batch samples (now {})", batch(s.sgd_batch))));
  // The model regime's defaults are one full-batch local step: FedSGD, gradient descent on the
  // clients' data, where a newcomer running model averaging (regime = "model", given or the
  // default, local training not given) expects FedAvg's local epochs.
  if (s.regime == Regime::kModel && s.local_steps == 1 && s.local_steps_max <= 1 &&
      s.local_epochs == 0 && s.local_batch == 0 && !c.given("local.steps") &&
      !c.given("local.steps_max") && !c.given("local.epochs") && !c.given("local.batch"))
    out.push_back(fmt::format(
        "regime = \"model\"{} with its local defaults (local.steps = 1, local.batch = full) "
        "takes one full-batch step a round: FedSGD, gradient descent on the clients' data; FedAvg "
        "trains local epochs of small batches (e.g. local.epochs = 1, local.batch = 10, as "
        "experiments/fedavg-mnist-2nn.toml does)",
        c.given("regime") ? "" : " (the default)"));
  // FedProx's proximal gradient mu (w - w_sent) is zero at the sent model: with one local step a
  // round it never acts (the run is FedAvg's, bit for bit)
  const bool one_local_step =
      s.local_epochs == 0 ? s.local_steps == 1 && s.local_steps_max <= 1
                          : s.local_epochs == 1 && s.local_batch == 0 && s.local_epochs_max <= 1;
  if (s.regime == Regime::kModel && s.prox_mu > 0 && one_local_step)
    out.push_back(fmt::format(
        "local.prox_mu = {} has no effect: each client takes one local step a round, from the "
        "sent model, where the proximal term mu (w - w_sent) is zero; train more local steps "
        "(local.epochs with a local.batch, or local.steps)",
        s.prox_mu));
  // The sparsifying, low-rank and scaled-sign codecs are biased: without error feedback what they
  // leave out of an update is lost for good (the 2NN's FedAvg at random-k 1%: 14.26% plain, 37.68%
  // with it, docs/results/randk-unbiased; data-parallel top-k 1%: 77.10% against 86.50%, scaled
  // sign 70.70% against 87.10%, docs/results/communication). Plain sign is signSGD itself (its
  // server steps along the signs at its own rate), not a compressed gradient: not warned of.
  const std::string& up = s.compression.uplink;
  if (!s.compression.error_feedback && (up == "topk" || up == "powersgd" || up == "scaled_sign" ||
                                        (up == "randk" && !s.compression.params.randk_unbiased)))
    out.push_back(fmt::format(
        "compression.uplink = \"{}\" without error feedback: {}, and loses the rest of each "
        "update for good, so the model moves less than the clients' steps say; set "
        "compression.error_feedback = true (clients send what was dropped with their next "
        "update){}",
        up,
        up == "scaled_sign" ? std::string("it sends each value's sign times their mean magnitude")
        : up == "topk"      ? fmt::format("it sends the largest {:g}% of the values",
                                          100 * s.compression.params.ratio)
        : up == "randk"     ? fmt::format("it sends {:g}% of the values, at random indices",
                                          100 * s.compression.params.ratio)
                            : fmt::format("it sends a rank-{} approximation of each matrix",
                                          s.compression.params.rank),
        up == "randk" ? ", or randk_unbiased = true (the kept values times d / k)" : ""));
  // SCAFFOLD drops a process at its first missing update: over lossy emulated links processes
  // leave one by one (the run fails once none is left)
  if (s.algorithm == FlAlgorithm::kScaffold && s.network.mode == NetworkMode::kEmulated &&
      !s.network.lossless())
    out.push_back(
        "local.algorithm = \"scaffold\" drops a process at its first missing update (the "
        "server's copy of its clients' control variates would part from theirs), and these "
        "emulated links lose messages: processes leave the run one by one, and it fails once none "
        "is left; network.mode = \"simulated\" leaves a client whose message is lost out of that "
        "round instead");
  // a link set up but switched off: said once, before the settings said one by one
  const bool network_off = s.network.mode == NetworkMode::kOff;
  std::vector<std::string> links, each;
  // the server's shared link exists on the clock only (drop_late with the network off is refused)
  bool simulated_only = false;
  for (const UnreadSetting& u : unread_settings(c, s))
    if (network_off && u.key.starts_with("network.")) {
      links.push_back(fmt::format("{} = {}", u.key, u.value));
      simulated_only |= u.key == "network.server";
    } else if (!regime_table(u.key, s)) {
      each.push_back(fmt::format("the run does not read {} = {}: {}", u.key, u.value, u.why));
    }
  if (!links.empty())
    out.push_back(fmt::format(
        "network.mode = \"off\": the run has no network conditions and does not read {} (set "
        "network.mode = {} to use them)",
        fmt::join(links, ", "),
        simulated_only ? "\"simulated\"" : "\"simulated\" or \"emulated\""));
  out.insert(out.end(), each.begin(), each.end());
  if ((!s.slowdown.empty() || !s.delay_seconds.empty()) && s.processes < s.partition.clients &&
      s.regime != Regime::kAsync)
    out.push_back(fmt::format(
        "[stragglers] slows clients that share a process with others ({} clients on {} "
        "processes): a process computes its clients one after another, so those after the "
        "straggler wait for it and miss the deadlines it misses, and a process none of whose "
        "updates comes in time is dropped after drop_after_missed_rounds = {} such rounds in a "
        "row (processes = {} gives each client its own)",
        s.partition.clients, s.processes, s.drop_after_missed_rounds, s.partition.clients));
  if (s.partition.holdout > 0 && !s.eval_clients)
    out.push_back(fmt::format(
        "partition.holdout = {:g} keeps that share of each client's samples out of its training, "
        "and only eval_clients = true scores the model on them: set it to follow each client's "
        "accuracy on data it never trained on",
        s.partition.holdout));
  if (s.data.name == "csv" && s.data.csv_test.empty())
    out.push_back(
        "data.csv_test is not set: the run trains without a test evaluation (no test accuracy in "
        "its log or summary; stop_at_accuracy never stops it; eval_train = true follows the "
        "model's loss on the training set instead, eval_clients = true its accuracy on each "
        "client's own samples)");
  const std::string fedopt = c.get_string("server_optimizer.name");
  if ((fedopt == "adam" || fedopt == "yogi") && s.server_optimizer.lr >= 1)
    out.push_back(fmt::format(
        "server_optimizer.name = \"{}\" moves every weight by about local.server_lr a round at "
        "first (m / (sqrt(v) + tau) starts near +-1), and local.server_lr = {:g} (FedAvg's "
        "default is 1): at 1, experiments/fedavg-mnist-2nn.toml ends at chance accuracy while "
        "0.1 trains it (docs/definitions.md#server-optimizers); set local.server_lr to 0.1 or "
        "less",
        fedopt, s.server_optimizer.lr));
  return out;
}

std::string run_defaults() {
  return std::string(kRunTop) + kModelDataDefaults + kRunSections + kOptimizerDefaults;
}

Config make_run_config(std::string_view extra_sections) {
  Config c(run_defaults() + std::string(extra_sections));
  c.describe_keys_with("fedpar keys run");
  c.refer_elsewhere({"train"},
                    "[train] is `fedpar train`'s table: is this a `fedpar train` "
                    "config? (`fedpar train --config FILE` runs one)");
  c.refer_elsewhere({"suite"},
                    "[suite] is a suite file's table: is this a suite? (`fedpar suite FILE` "
                    "runs one; each of its runs' own config is RESULTS/runs/LABEL/"
                    "config.resolved.toml, which `fedpar run` and `fedpar partition --config` "
                    "take)");
  c.allow_words("local.batch", {"full"});
  c.allow_words("sgd.batch", {"full"});
  c.list_of_strings("stragglers.slowdown");
  c.list_of_strings("stragglers.delay_seconds");
  c.list_of_strings("network.profiles");
  c.list_of_strings("network.availability_by_profile");
  c.list_of_strings("pipeline.split");
  return c;
}

RunSpec resolve_run_spec(const Config& c) {
  RunSpec s;
  s.seed = resolve_seed(c);
  s.rounds = c.get_int32("rounds");
  require(s.rounds >= 1, "rounds must be >= 1");
  const std::string regime = c.get_string("regime");
  require(regime == "gradient" || regime == "model" || regime == "async",
          fmt::format("regime must be gradient, model or async, got '{}' (gradient averages the "
                      "clients' gradients each step: FedSGD, data parallelism; model averages "
                      "their models after local training: FedAvg, FedProx, SCAFFOLD; async applies "
                      "each gradient as it comes)",
                      regime));
  s.regime = regime == "gradient" ? Regime::kGradient
             : regime == "model"  ? Regime::kModel
                                  : Regime::kAsync;
  s.bind = c.get_string("bind");
  s.processes = c.get_int32("processes");
  require(s.processes >= 1, "processes must be >= 1");
  s.max_slots = c.get_int("max_slots");
  require(s.max_slots >= 1, "max_slots must be >= 1");
  s.wait_seconds = c.get_float("wait_seconds");
  require(s.wait_seconds > 0, "wait_seconds must be > 0");
  const double start_wait = c.get_float("start_wait_seconds");
  require(start_wait >= 0,
          "start_wait_seconds must be >= 0 (0: the larger of wait_seconds and 60)");
  s.start_wait_seconds = start_wait > 0 ? start_wait : std::max(s.wait_seconds, 60.0);
  s.checkpoint_every = c.get_int32("checkpoint_every");
  require(s.checkpoint_every >= 0, "checkpoint_every must be >= 0 (0 = never)");
  s.eval_every = c.get_int32("eval_every");
  require(s.eval_every >= 1, "eval_every must be >= 1");
  s.log_every = c.get_int32("log_every");
  require(s.log_every >= 1, "log_every must be >= 1 (1: a line every round)");
  s.eval_train = c.get_bool("eval_train");
  s.eval_clients = c.get_bool("eval_clients");
  s.stop_at_accuracy = c.get_float("stop_at_accuracy");
  require(s.stop_at_accuracy >= 0 && s.stop_at_accuracy <= 1,
          "stop_at_accuracy must be in [0, 1] (a fraction: 0.9 stops at 90%)");
  const std::string w = c.get_string("weighting");
  require(w == "samples" || w == "uniform",
          fmt::format("weighting must be samples or uniform, got '{}'", w));
  s.weighting = w == "samples" ? Weighting::kBySamples : Weighting::kUniform;
  s.fraction = c.get_float("fraction");
  require(s.fraction > 0 && s.fraction <= 1, "fraction must be in (0, 1]");
  require(s.fraction == 1 || s.regime != Regime::kAsync,
          "regime = \"async\" keeps every client busy (each gets its next task as it answers): "
          "fraction must be 1");
  s.continue_without_missing = c.get_bool("continue_without_missing");
  s.drop_after_missed_rounds = c.get_int32("drop_after_missed_rounds");
  require(s.drop_after_missed_rounds >= 1,
          "drop_after_missed_rounds must be >= 1 (1: a process is dropped at its first missed "
          "deadline)");
  s.device = c.get_string("device");
  require(s.device == "cpu" || s.device == "cuda",
          fmt::format("device must be cpu or cuda, got '{}'", s.device));
  s.threads = c.get_int32("threads");
  require(s.threads >= 1 && s.threads <= 256, "threads must be between 1 and 256");
  s.results_dir = c.get_string("results_dir");
  s.model = resolve_model_spec(c);
  s.partition = resolve_partition_params(c, s.seed);
  // a generated dataset (synthetic) is drawn from the split's seed: partition.seed holds both
  s.data = resolve_data_options(c, s.partition.seed);

  s.local_steps = c.get_int32("local.steps");
  s.local_epochs = c.get_int32("local.epochs");
  require(s.local_steps >= 1 && s.local_epochs >= 0,
          "local.steps must be >= 1 and local.epochs >= 0");
  s.local_batch = c.is_word("local.batch", "full") ? 0 : c.get_int("local.batch");
  require(s.local_batch >= 0, "local.batch must be >= 0 (0 = full) or \"full\"");
  s.server_lr = float(c.get_float("local.server_lr"));
  require(s.server_lr > 0, fmt::format("local.server_lr must be > 0, got {}", s.server_lr));
  s.prox_mu = float(c.get_float("local.prox_mu"));
  require(s.prox_mu >= 0, "local.prox_mu must be >= 0 (0 = FedAvg)");
  require(s.prox_mu == 0 || s.regime == Regime::kModel,
          "local.prox_mu pulls local steps towards the sent model: it needs regime = \"model\"");
  require(s.partition.scheme != "feature-noise" || s.regime != Regime::kAsync,
          "partition.scheme = \"feature-noise\" is applied by the client processes, which "
          "fedpar replay does not start: it needs regime = \"gradient\" or \"model\"");
  s.local_steps_max = c.get_int32("local.steps_max");
  s.local_epochs_max = c.get_int32("local.epochs_max");
  require(s.local_steps_max == 0 || s.local_steps_max >= s.local_steps,
          "local.steps_max must be 0 (every client takes local.steps) or >= local.steps");
  require(s.local_steps_max == 0 || s.local_epochs == 0,
          "local.steps_max varies local.steps, which local.epochs > 0 replaces: use "
          "local.epochs_max");
  require(s.local_epochs_max == 0 || (s.local_epochs > 0 && s.local_epochs_max >= s.local_epochs),
          "local.epochs_max must be 0, or >= local.epochs with local.epochs >= 1");
  require((s.local_steps_max == 0 && s.local_epochs_max == 0) || s.regime == Regime::kModel,
          "local.steps_max and local.epochs_max vary the local training: they need regime = "
          "\"model\"");
  s.server_optimizer = {.kind = parse_fedopt(c.get_string("server_optimizer.name")),
                        .lr = c.get_float("local.server_lr"),
                        .beta1 = c.get_float("server_optimizer.beta1"),
                        .beta2 = c.get_float("server_optimizer.beta2"),
                        .tau = c.get_float("server_optimizer.tau")};
  (void)FedOpt(s.server_optimizer);  // checks the ranges now, not at the first round
  require(s.server_optimizer.kind == FedOptKind::kSgd || s.regime == Regime::kModel,
          "server_optimizer applies the clients' mean model delta: it needs regime = \"model\" "
          "(the gradient regime's server steps with [optimizer] on the averaged gradient)");
  s.sgd_batch = c.is_word("sgd.batch", "full") ? 0 : c.get_int("sgd.batch");
  require(s.sgd_batch >= 0, "sgd.batch must be >= 0 (0 = full) or \"full\"");

  const std::string topology = c.get_string("topology");
  if (topology == "parameter-server")
    s.topology = Topology::kParameterServer;
  else if (topology == "master")
    s.topology = Topology::kMaster;
  else if (topology == "allreduce")
    s.topology = Topology::kAllReduce;
  else if (topology == "pipeline")
    s.topology = Topology::kPipeline;
  else if (topology == "tensor")
    s.topology = Topology::kTensor;
  else
    throw Error(fmt::format(
        "topology must be parameter-server, master, allreduce, pipeline or tensor, got '{}'{}",
        topology,
        topology == "ring" || topology == "all-reduce" || topology == "ddp"
            ? " (the ring all-reduce among the workers is 'allreduce')"
            : ""));
  require(
      s.topology == Topology::kParameterServer || s.regime == Regime::kGradient,
      fmt::format("topology '{}' takes one synchronous gradient step a round: it needs regime "
                  "= \"gradient\" ({} runs on the parameter server)",
                  topology, s.regime == Regime::kAsync ? "asynchronous SGD" : "model averaging"));
  require(s.topology == Topology::kParameterServer || s.fraction == 1.0,
          fmt::format("topology '{}' uses every worker every step: fraction must be 1", topology));
  require(s.topology != Topology::kMaster || s.weighting == Weighting::kBySamples,
          "topology 'master' takes the loss over the whole batch: weighting must be samples");
  s.ring_bind = c.get_string("allreduce.bind");
  s.ring_bucket_floats = c.get_int("allreduce.bucket_floats");
  require(s.ring_bucket_floats >= 1, "allreduce.bucket_floats must be >= 1");
  s.ring_deadline_seconds = c.get_float("allreduce.deadline_seconds");
  require(s.ring_deadline_seconds > 0, "allreduce.deadline_seconds must be > 0");
  s.hash_every = c.get_int32("allreduce.hash_every");
  require(s.hash_every >= 1, "allreduce.hash_every must be >= 1");
  s.fault_flip_rank = c.get_int32("allreduce.fault_flip_rank");
  s.staleness_bound = c.get_int32("async.staleness_bound");
  require(s.staleness_bound >= 0, "async.staleness_bound must be >= 0 (0 = no bound)");
  s.staleness_lr = c.get_bool("async.staleness_lr");
  s.slowdown = client_values(c, "stragglers.slowdown", 1.0, s.partition.clients);
  s.delay_seconds = client_values(c, "stragglers.delay_seconds", 0.0, s.partition.clients);

  s.compression = resolve_compression(c, s);
  s.ring_elastic = c.get_bool("allreduce.elastic");
  require(!s.ring_elastic || s.topology == Topology::kAllReduce,
          "allreduce.elastic re-forms the all-reduce ring: it needs topology = \"allreduce\"");
  require(
      !s.ring_elastic || (s.compression.uplink != "randk" && s.compression.uplink != "powersgd"),
      "allreduce.elastic cannot redo a round of randk or powersgd (their workers' state is not "
      "kept): use compression.uplink = \"none\", \"fp16\" or \"bf16\"");
  s.ring_backend = resolve_ring_backend(c, s);
  s.network = resolve_network_section(c, s);
  // emulated loss stopped such a run at its first lost message while simulated loss went on
  // without a word: one rule for both
  require(!s.network.on() || s.network.lossless() || s.regime != Regime::kGradient ||
              s.topology != Topology::kParameterServer || s.continue_without_missing,
          "a network profile with loss > 0 loses TASKs and UPDATEs, and the gradient regime stops "
          "at the first gradient missing: set continue_without_missing = true to go on without "
          "the lost ones (each round's are in metrics.jsonl's `missing`, or `simulated_lost`)");
  s.backup_clients = resolve_backup_clients(c, s);
  s.robust = resolve_robust(c, s);
  s.security = {c.get_string("security.key"), c.get_string("security.clients")};
  // an allow-list without the server's key would let anyone in over plaintext while the config
  // reads as secured
  require(s.security.on() || s.security.clients.empty(),
          "security.clients needs security.key: without the server's secret key the links are "
          "plaintext and the allow-list is not checked (make one with fedpar keygen)");
  if (s.security.on()) {
    require(!s.security.clients.empty(),
            "security.key needs security.clients: the folder of the client .pub files to let in");
    require(s.ring_backend == RingBackend::kZmqRing,
            "[security] encrypts fedpar's own links; MPI's and NCCL's traffic it cannot: "
            "allreduce.backend = \"zmq-ring\" with security.key");
  }
  s.attack = resolve_attack(c, s);
  s.optimizer = resolve_run_optimizer(c, s);
  s.scaffold_correction = either_word<ScaffoldCorrection>(
      c, "local.scaffold_correction", {"gradient", ScaffoldCorrection::kGradient},
      {"after-step", ScaffoldCorrection::kAfterStep});
  s.local_sampling =
      either_word<LocalSampling>(c, "local.sampling", {"passes", LocalSampling::kPasses},
                                 {"independent", LocalSampling::kIndependent});
  s.algorithm = resolve_algorithm(c, s);
  s.client_sampling = resolve_client_sampling(c, s);
  s.privacy = resolve_privacy(c, s);
  s.grid_data = resolve_grid(c, s);
  require(s.model_parallel() || s.partition.clients == 0 || s.processes <= s.partition.clients,
          fmt::format("processes = {} but partition.clients = {}: {} process(es) would host no "
                      "client and idle; lower processes or raise partition.clients",
                      s.processes, s.partition.clients, s.processes - s.partition.clients));
  s.pipeline = resolve_pipeline(c, s);

  s.drift = c.get_bool("diagnostics.drift");
  require(!s.drift || s.attack.kind == AttackKind::kNone,
          "diagnostics.drift compares honest updates: it needs attack.kind = \"none\"");
  require(!s.drift || s.compression.uplink == "none",
          "diagnostics.drift compares raw updates: it needs compression.uplink = \"none\"");
  s.save_params_every = c.get_int32("diagnostics.save_params_every");
  require(s.save_params_every >= 0, "diagnostics.save_params_every must be >= 0 (0 = never)");

  s.name = c.get_string("name");
  // the results folder's name, under results_dir: a path would write elsewhere, or nowhere
  require(s.name.find('/') == std::string::npos && s.name != "." && s.name != "..",
          fmt::format("name = \"{}\" names the run's folder under results_dir: a name without "
                      "'/' (set results_dir for where it goes)",
                      s.name));
  if (s.name.empty())
    s.name = fmt::format("{}-{}-{}-s{}", regime, s.model.name, s.data.name, s.seed);
  return s;
}

bool operational_key(const std::string& key) {
  return key == "name" || key == "results_dir" || key == "bind" || key == "processes" ||
         key == "max_slots" || key == "wait_seconds" || key == "start_wait_seconds" ||
         key == "checkpoint_every" || key == "log_every" || key.starts_with("security.");
}

bool observation_key(const std::string& key, const RunSpec& s) {
  if (key == "eval_every" || key == "data.test_limit") return s.stop_at_accuracy <= 0;
  // on emulated links the drift's extra vector takes link time, and can make an update late
  if (key == "diagnostics.drift") return s.network.mode != NetworkMode::kEmulated;
  return key == "eval_train" || key == "eval_clients" || key.starts_with("diagnostics.");
}

std::string run_config_hash(const Config& c) {
  std::string text;
  for (const auto& key : c.keys())  // in the config's own order: the same for every process
    if (!operational_key(key) && key != "data.dir" && key != "device")
      text += key + "=" + c.value_text(key) + "\n";
  return hash_hex(hash_bytes(text.data(), text.size()));
}

RunSpec run_spec_from_toml(std::string_view toml, std::string_view source) {
  Config cfg = make_run_config();
  cfg.merge_toml(toml, source);
  return resolve_run_spec(cfg);
}

bool whole_shard_batch(const Config& c, const std::string& key) {
  return (key == "sgd.batch" || key == "local.batch") &&
         (c.is_word(key, "full") || c.value_text(key) == "0");
}

}  // namespace fedpar
