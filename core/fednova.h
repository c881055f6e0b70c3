// FedNova (Wang et al. 2020, "Tackling the Objective Inconsistency Problem in Heterogeneous
// Federated Optimization"): clients that take different numbers of local steps tau_i pull FedAvg
// towards the minimiser of sum p_i tau_i F_i instead of sum p_i F_i. FedNova divides each delta by
// its client's amount of work a_i = ||a_i||_1, the sum over its steps of how much each gradient
// moved the model (in units of lr), and rescales the mean by tau_eff = sum p_i a_i:
//   x += tau_eff sum_i p_i delta_i / a_i
// For heavy-ball momentum rho (v = rho v + g, w -= lr v) a gradient taken j steps before the end
// moves the model by lr (1 - rho^(j+1)) / (1 - rho), so a_i = sum_{j=1..tau} (1 - rho^j) / (1 -
// rho) (tau without momentum). Defined in docs/definitions.md#fednova.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/run_spec.h"
#include "core/weighted_average.h"

namespace fedpar {

// tau_i: the optimizer steps client `client` takes in `round` on a shard of `shard_size` samples
// under the run's [local] settings (local_steps_taken of its local-train task), as the client
// computes them.
int64_t fednova_steps(const RunSpec& s, size_t shard_size, uint32_t client, uint64_t round);

// The steps every client takes every round when they are all the same (no drawn work, and with
// local.epochs shards that give the same batches a pass): FedNova's update is then FedAvg's, bit
// for bit. nullopt where the work differs.
std::optional<int64_t> fednova_equal_steps(const RunSpec& s, std::span<const size_t> shard_sizes);

// ||a||_1 for `steps` local steps of SGD with heavy-ball `momentum` (0 <= momentum < 1).
double fednova_work(int64_t steps, double momentum);

// Each update's values times tau_eff / a_k (tau_eff = sum_k p_k a_k, p_k the weighting's
// normalised weights), so that their weighted average is FedNova's update. `work[k]` is update
// k's a_k (> 0). Returns the rescaled vectors, in the updates' order.
std::vector<std::vector<float>> fednova_normalize(std::span<const ClientUpdate> updates,
                                                  std::span<const double> work, Weighting w);

}  // namespace fedpar
