// Partitioners: (dataset labels and user ids, scheme, parameters, seed) -> Manifest.
// Definitions and citations: docs/partitioning.md. Every scheme is deterministic in the seed
// (stream (seed, "partition", ...)), assigns each sample at most once, and fails with an Error
// that names the violated constraint on impossible requests.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "partitioners/manifest.h"

namespace fedpar {

struct PartitionParams {
  std::string scheme = "iid";  // one of partition_schemes()
  int clients = 10;            // natural: 0 = one per user (the only accepted value besides #users)
  uint64_t seed = 1;
  int shards_per_client = 2;   // shards
  int labels_per_client = 2;   // labels-k
  double alpha = 0.5;          // dirichlet-clients: concentration times the global distribution
  double beta = 0.5;           // dirichlet-classes, iid-quantity (dirichlet sizes)
  std::string sizes = "dirichlet";  // iid-quantity: dirichlet | lognormal
  double sigma = 1.0;          // iid-quantity lognormal: std of log sizes; feature-noise: max std
  int min_size = 10;           // dirichlet-classes, iid-quantity: samples per client at least
};

struct PartitionInput {
  std::string dataset_name, dataset_hash;
  const std::vector<int32_t>& labels;
  const std::vector<int32_t>& users;  // empty when the dataset has no user ids
  int num_classes;
};

std::vector<std::string> partition_schemes();
Manifest partition(const PartitionInput& in, const PartitionParams& p);

// The feature-noise scheme's data side: adds N(0, shard.noise^2) to every feature of the shard's
// samples in `x` (rows of `dim` floats), from stream (seed, "feature-noise", shard.id). Clients
// call it on their own copy after loading; the manifest only records the level.
void add_feature_noise(std::vector<float>& x, size_t dim, const ClientShard& shard, uint64_t seed);

}  // namespace fedpar
