// What a run asks of the partitioner (partitioners/partition.h): the scheme and its parameters.
// In the core because the run spec carries it to every process; the schemes live in partitioners/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fedpar {

struct PartitionParams {
  std::string scheme = "iid";  // one of partition_schemes()
  int clients = 10;            // natural: 0 = one per user (the only accepted value besides #users)
  uint64_t seed = 1;
  int shards_per_client = 2;  // shards
  int labels_per_client = 2;  // labels-k
  double alpha = 0.5;         // dirichlet-clients: concentration times the global distribution
  double beta = 0.5;          // dirichlet-classes, iid-quantity (dirichlet sizes)
  std::string sizes = "dirichlet";  // iid-quantity: dirichlet | lognormal
  double sigma = 1.0;  // iid-quantity lognormal: std of log sizes; feature-noise: max std
  int min_size = 10;   // dirichlet-classes, iid-quantity: samples per client at least
  // Every scheme: the share of each client's samples held out of its training, for scoring the
  // model on data the client has but never trained on (eval_clients; LEAF's per-user split).
  double holdout = 0.0;
};

// The schemes partitioners/ implements (partition.h).
std::vector<std::string> partition_schemes();
// The [partition] keys p's scheme reads beside scheme and clients ("alpha" for dirichlet-clients,
// none for iid).
std::vector<std::string> partition_scheme_keys(const PartitionParams& p);
// Whether p's scheme reads the parameter `key`; an unknown scheme reads them all, so that it
// is refused with its own error (partition()) rather than warned of first.
bool scheme_reads(const PartitionParams& p, std::string_view key);
// What to change when p's split leaves a client without samples: "raise partition.min_size, lower
// partition.clients or choose another scheme", min_size named only where the scheme reads it;
// with `flags`, fedpar partition's --min-size and --clients.
std::string empty_client_advice(const PartitionParams& p, bool flags);
// Every scheme's parameters: the [partition] keys but scheme and clients.
const std::vector<std::string>& partition_parameter_keys();
// Throws Error unless 0 <= holdout < 1 (the run's config and fedpar partition check it alike).
void check_holdout(double holdout);
// Whether `key` (without "partition.") is a parameter of some scheme.
bool is_partition_scheme_key(std::string_view key);

}  // namespace fedpar
