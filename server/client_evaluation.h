// eval_clients: the server's model scored on each client's own samples, the per-client accuracy
// whose spread fairness and personalization papers report: a model can do well on the pooled test
// set while the clients with rare labels or noisy features fare badly. The samples are the
// client's held-out ones under partition.holdout (data it never trained on, LEAF's per-user
// split), else its training shard.
#pragma once

#include <optional>
#include <vector>

#include "core/dataset.h"
#include "core/model.h"
#include "core/partition_params.h"
#include "partitioners/manifest.h"

namespace fedpar {

// Each client's samples are scored as its process holds them: the feature-noise scheme adds that
// client's noise (on its training shard the draws its process makes, core/feature_noise.h; on its
// held-out samples a stream of their own). An [attack]'s flipped labels are the attacker's
// behaviour, not its data: the true labels score it.
class ClientScorer {
 public:
  // The noisy clients' copies are made here, once (about one more copy of the training
  // features under feature-noise; none otherwise); `train` and `m` must outlive the scorer.
  ClientScorer(const Dataset& train, const Manifest& m, const PartitionParams& p);

  // One entry per client of the manifest, in its order (client ids ascending).
  std::vector<BatchStats> score(Model& model) const;

  // The samples of `c` that score it: its held-out ones, else its training shard.
  static const std::vector<uint32_t>& scored(const ClientShard& c);

 private:
  const Dataset& train_;
  const Manifest& m_;
  std::vector<std::optional<Dataset>> noisy_;  // per client: its noisy rows, renumbered 0..
};

}  // namespace fedpar
