#include "core/partition_params.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"

namespace fedpar {

void check_holdout(double holdout) {
  if (!(holdout >= 0 && holdout < 1))
    throw Error(
        fmt::format("partition.holdout is the share of each client's samples kept out of "
                    "its training, 0 <= holdout < 1, got {}",
                    holdout));
}

std::vector<std::string> partition_schemes() {
  return {"iid",
          "iid-quantity",
          "shards",
          "labels-k",
          "dirichlet-clients",
          "dirichlet-classes",
          "feature-noise",
          "natural"};
}

std::vector<std::string> partition_scheme_keys(const PartitionParams& p) {
  const std::string& s = p.scheme;
  if (s == "shards") return {"shards_per_client"};
  if (s == "labels-k") return {"labels_per_client"};
  if (s == "dirichlet-clients") return {"alpha"};
  if (s == "dirichlet-classes") return {"beta", "min_size"};
  if (s == "iid-quantity") return {"sizes", "min_size", p.sizes == "dirichlet" ? "beta" : "sigma"};
  if (s == "feature-noise") return {"sigma"};
  return {};  // iid, natural
}

bool scheme_reads(const PartitionParams& p, std::string_view key) {
  const auto keys = partition_scheme_keys(p), schemes = partition_schemes();
  return std::find(keys.begin(), keys.end(), key) != keys.end() ||
         std::find(schemes.begin(), schemes.end(), p.scheme) == schemes.end();
}

std::string empty_client_advice(const PartitionParams& p, bool flags) {
  return fmt::format("{}lower {}, train on more samples or choose another scheme",
                     !scheme_reads(p, "min_size") ? ""
                     : flags                      ? "raise --min-size, "
                                                  : "raise partition.min_size, ",
                     flags ? "--clients" : "partition.clients");
}

const std::vector<std::string>& partition_parameter_keys() {
  static const std::vector<std::string> keys = {
      "shards_per_client", "labels_per_client", "alpha", "beta", "min_size", "sizes", "sigma"};
  return keys;
}

bool is_partition_scheme_key(std::string_view key) {
  const auto& keys = partition_parameter_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace fedpar
