// Partitioners: (dataset labels and user ids, scheme, parameters, seed) -> Manifest.
// Definitions and citations: docs/partitioning.md. Every scheme is deterministic in the seed
// (stream (seed, "partition", ...)), assigns each sample at most once, and fails with an Error
// that names the violated constraint on impossible requests.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/partition_params.h"
#include "partitioners/manifest.h"

namespace fedpar {

struct PartitionInput {
  std::string dataset_name, dataset_hash;
  const std::vector<int32_t>& labels;
  const std::vector<int32_t>& users;  // empty when the dataset has no user ids
  int num_classes;
};

Manifest partition(const PartitionInput& in, const PartitionParams& p);

}  // namespace fedpar
