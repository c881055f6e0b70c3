// Manifest: which sample indices each client holds, with the inputs that produced it and a hash
// that is the same on every machine for the same inputs. The same manifest drives data-parallel
// shards and federated users, so the two regimes can be compared on identical data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/hash.h"

namespace fedpar {

struct ClientShard {
  uint32_t id = 0;
  std::vector<uint32_t> indices;         // into the training set, ascending: what it trains on
  std::vector<int64_t> label_histogram;  // samples per label (of indices)
  std::vector<uint32_t> held_out;        // partition.holdout: its samples kept out of training
  double noise = 0.0;                    // feature-noise scheme: std of the Gaussian noise added
};

struct Manifest {
  std::string scheme;
  nlohmann::json params;  // the scheme's parameters, as resolved
  uint64_t seed = 0;
  std::string dataset_name, dataset_hash;
  std::vector<ClientShard> clients;
  std::string hash;  // 16 hex digits over everything above; set by finalize()
  // What the scheme did beyond its parameters (dirichlet-classes' top-up), for the user to hear:
  // neither hashed nor written (a manifest read back has none).
  std::vector<std::string> notes;

  size_t assigned() const;  // total samples the clients train on
  size_t held_out() const;  // total samples partition.holdout kept out of their training
  // Sorts each client's indices, fills histograms from `labels`, and computes the hash.
  void finalize(const std::vector<int32_t>& labels, int num_classes);
};

nlohmann::json to_json(const Manifest& m);
// Parses and validates (every index < dataset_size, no index held twice, hash matches).
Manifest manifest_from_json(const nlohmann::json& j, size_t dataset_size);
void write_manifest(const std::filesystem::path& path, const Manifest& m);
Manifest read_manifest(const std::filesystem::path& path, size_t dataset_size);

}  // namespace fedpar
