// Statistics of a manifest: per client and overall sizes, label histograms, label entropy, and the
// distance of each client's label distribution to the global one (EMD as the L1 distance of
// Zhao et al. 2018; KL(client || global) in nats). Definitions: docs/partitioning.md.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "partitioners/manifest.h"

namespace fedpar {

struct ClientStats {
  uint32_t id = 0;
  size_t size = 0;
  int labels_present = 0;
  double entropy_bits = 0, emd = 0, kl = 0;
};

struct Summary {
  double min = 0, median = 0, max = 0, mean = 0;
};

struct PartitionStats {
  std::vector<ClientStats> clients;
  std::vector<double> global_distribution;  // over labels of the assigned samples
  // size over every client; the label statistics over those that hold samples (an empty client
  // has no label distribution)
  Summary size, labels_present, entropy_bits, emd, kl;
  size_t assigned = 0;  // the samples the clients train on
  size_t held_out = 0;  // the samples partition.holdout keeps out of their training
  // the clients holding no sample (a run refuses such a split; their label rows are left out)
  std::vector<uint32_t> empty_clients;
};

PartitionStats partition_stats(const Manifest& m);
// The statistics of a manifest.json as a run writes it (its clients' indices bound the dataset).
PartitionStats manifest_stats(const std::filesystem::path& file);
Summary summarize(std::vector<double> values);
// The training samples of a set of `dataset_size` that no client holds (to train on or held out):
// "" when every one is held, else "30596 of 60000 training samples go to no client (no client holds
// label 5, 6, 7, 8, 9)" (labels-k with fewer clients than labels: accuracy is bounded by the labels
// held).
std::string unassigned_note(const PartitionStats& s, size_t dataset_size);
// A readable table: the summary rows, then (up to `max_rows`) per-client rows.
std::string format_stats(const Manifest& m, const PartitionStats& s, size_t max_rows = 10);

}  // namespace fedpar
