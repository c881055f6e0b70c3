// eval_clients: the server's model scored on each client's own shard (its training samples), the
// per-client accuracy whose spread fairness and personalization papers report: a model can do
// well on the pooled test set while the clients with rare labels or noisy features fare badly.
#pragma once

#include <vector>

#include "core/dataset.h"
#include "core/model.h"
#include "core/partition_params.h"
#include "partitioners/manifest.h"

namespace fedpar {

// One entry per client of `m`, in its order (client ids ascending). Each client's samples are
// scored as its process holds them: the feature-noise scheme adds that client's noise (the same
// draws). An [attack]'s flipped labels are the attacker's behaviour, not its data: the true
// labels score it.
std::vector<BatchStats> evaluate_clients(Model& model, const Dataset& train, const Manifest& m,
                                         const PartitionParams& p);

}  // namespace fedpar
