#include "core/unread_settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace fedpar {
namespace {

bool in(std::string_view v, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), v) != set.end();
}

// A partition scheme's parameter: read when the scheme reads it; the two Dirichlet schemes call
// their concentration by different names, which the reason says.
std::string partition_why(const RunSpec& s, std::string_view key) {
  if (scheme_reads(s.partition, key)) return "";
  const auto keys = partition_scheme_keys(s.partition);
  std::string why =
      fmt::format("partition.scheme = \"{}\" reads {}", s.partition.scheme,
                  keys.empty() ? "no parameter of its own"
                               : fmt::format("partition.{}", fmt::join(keys, ", partition.")));
  if (key == "alpha" && s.partition.scheme == "dirichlet-classes")
    why += " (its Dirichlet concentration is partition.beta)";
  if (key == "beta" && s.partition.scheme == "dirichlet-clients")
    why += " (its Dirichlet concentration is partition.alpha)";
  if (s.partition.scheme == "iid") why += ": set partition.scheme for a non-IID split";
  return why;
}

// The parameters each codec reads (compression.*).
bool codec_reads(std::string_view codec, std::string_view key) {
  if (key == "ratio") return in(codec, {"topk", "randk"});
  if (key == "topk_bucket") return codec == "topk";
  if (key == "randk_unbiased") return codec == "randk";
  if (key == "levels" || key == "bucket") return codec == "qsgd";
  if (key == "rank") return codec == "powersgd";
  return true;
}

}  // namespace

std::string why_unread(const Config& c, const RunSpec& s, std::string_view key) {
  const auto dot = key.find('.');
  if (dot == std::string_view::npos) return "";
  const std::string_view table = key.substr(0, dot), name = key.substr(dot + 1);
  const bool model = s.regime == Regime::kModel;
  const auto quoted = [&](std::string_view k) {
    return fmt::format("{} = \"{}\"", k, c.get_string(k));
  };
  if (table == "local" && !model)
    return fmt::format("the {} regime does not read [local]", c.get_string("regime"));
  if (table == "sgd" && model) return "the model regime does not read [sgd]";
  if (key == "diagnostics.drift" && !model)
    return fmt::format(
        "{} has no local steps to drift from its gradient (drift needs regime = "
        "\"model\")",
        quoted("regime"));
  if (key == "local.steps" && s.local_epochs > 0)
    return fmt::format("local.epochs = {} replaces it (set local.epochs = 0 to train local.steps)",
                       s.local_epochs);
  if (table == "optimizer") {  // the schedule's parameters, and the batch scaling's reference
    const std::string schedule = c.get_string("optimizer.schedule");
    const bool reads = in(name, {"step_size", "gamma"}) ? schedule == "step"
                       : name == "min_lr"               ? schedule == "cosine"
                       : name == "reference_batch" ? c.get_string("optimizer.scaling") != "none"
                                                   : true;
    if (!reads)
      return fmt::format(
          "{} does not use it",
          quoted(name == "reference_batch" ? "optimizer.scaling" : "optimizer.schedule"));
  }
  if (table == "network" && name != "mode" && s.network.mode == NetworkMode::kOff)
    return "network.mode = \"off\"";
  if (key == "network.profile" && !c.get_string("network.heterogeneous").empty())
    return "network.heterogeneous draws every client's profile in its place";
  if ((key == "network.availability_rounds" || key == "network.sample_from") &&
      s.network.all_available())
    return "every profile's availability is 1: no client is ever off";
  if (table == "partition" && is_partition_scheme_key(name)) return partition_why(s, name);
  if (table == "server_optimizer" && name != "name") {
    const FedOptKind k = s.server_optimizer.kind;
    const bool reads = name == "beta1"   ? k != FedOptKind::kSgd
                       : name == "beta2" ? (k == FedOptKind::kAdam || k == FedOptKind::kYogi)
                                         : k != FedOptKind::kSgd && k != FedOptKind::kAvgM;
    if (!reads) return fmt::format("{} does not use it", quoted("server_optimizer.name"));
  }
  if (table == "robust" && in(name, {"trim", "byzantine", "select"})) {
    const AggregateRule r = s.robust.rule;
    const bool reads = name == "trim" ? r == AggregateRule::kTrimmedMean
                       : name == "byzantine"
                           ? (r == AggregateRule::kKrum || r == AggregateRule::kMultiKrum)
                           : r == AggregateRule::kMultiKrum;
    if (!reads) return fmt::format("{} does not use it", quoted("robust.rule"));
  }
  if ((key == "privacy.adaptive_lr" || key == "privacy.count_noise") && !s.privacy.adaptive.on())
    return "privacy.adaptive_quantile = 0: the clip stays at privacy.clip_norm";
  if (key == "privacy.count_noise" && !s.privacy.noised())
    return "privacy.noise_multiplier = 0: the count is not noised either";
  if (key == "privacy.delta" && !s.privacy.noised())
    return "privacy.noise_multiplier = 0: without noise there is no (epsilon, delta) to report";
  if (table == "attack" && name != "kind") {
    const AttackKind k = s.attack.kind;
    const bool reads = k != AttackKind::kNone &&
                       (name == "clients" || (name == "scale" && k == AttackKind::kScale) ||
                        (name == "sigma" && k == AttackKind::kNoise));
    if (!reads) return fmt::format("{} does not use it", quoted("attack.kind"));
  }
  if (table == "compression" && !codec_reads(s.compression.uplink, name) &&
      !codec_reads(s.compression.downlink, name))
    return fmt::format("no codec of the run uses it ({}, {})", quoted("compression.uplink"),
                       quoted("compression.downlink"));
  if (table == "async" && s.regime != Regime::kAsync)
    return fmt::format("{} (only the async regime reads [async])", quoted("regime"));
  if (table == "pipeline" && s.topology != Topology::kPipeline)
    return fmt::format("{} has no pipeline", quoted("topology"));
  if (table == "allreduce") {
    // the ring of workers: allreduce's, tensor's, and a [grid]'s replicas'; the fault that tests
    // the replicas' check is injected by any model-parallel process, which checks only replicas
    const bool ring =
        s.topology == Topology::kAllReduce || s.topology == Topology::kTensor || s.grid_data > 1;
    const bool reads =
        name == "fault_flip_rank" ? s.topology == Topology::kAllReduce || s.model_parallel()
        : name == "hash_every"    ? s.topology == Topology::kAllReduce || s.grid_data > 1
                                  : ring;
    if (!reads)
      return fmt::format("{}{} has no {}", quoted("topology"),
                         s.model_parallel() ? " with grid.data = 1" : "",
                         name == "hash_every" ? "replicas to check" : "ring of workers");
  }
  return "";
}

std::vector<UnreadSetting> unread_settings(const Config& c, const RunSpec& s) {
  std::vector<UnreadSetting> out;
  for (auto& [key, value] : c.changed_from(make_run_config()))
    if (std::string why = why_unread(c, s, key); !why.empty())
      out.push_back({key, value, std::move(why)});
  return out;
}

}  // namespace fedpar
