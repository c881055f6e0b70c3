// Aggregation strategies: no sockets, plain vectors in, new parameters out, so the arithmetic that
// decides what FL and DP compute is tested on its own. Updates arrive sorted by client id and are
// reduced in that order (never arrival order), accumulating in double.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.h"
#include "core/optimizer.h"

namespace fedpar {

struct ClientUpdate {
  uint32_t client = 0;
  uint64_t round = 0;
  uint64_t num_samples = 0;        // n_k: samples behind this update
  std::span<const float> values;   // a gradient or a model delta, same layout as the params
};

// n_k / sum n_k, 1 / K, or 1 (kSum: the updates are already parts of one mean, as the `master`
// topology's per-worker gradients are).
enum class Weighting { kBySamples, kUniform, kSum };

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  // Reduces `updates` (sorted by client id, at least one) into `params`. Deterministic.
  virtual void apply(std::span<const ClientUpdate> updates, std::span<float> params) = 0;
};

// The weighted average sum_k w_k v_k, accumulated in double in the order given, rounded once.
// Throws Error when sizes differ, weights sum to zero, or updates are not sorted by client id.
std::vector<float> weighted_average(std::span<const ClientUpdate> updates, Weighting w);

// Gradient averaging (synchronous SGD / parameter server): params <- SGD step with the averaged
// gradient, learning rate from `lr` at the round number (the server optimizer keeps momentum).
std::unique_ptr<Strategy> make_gradient_averaging(Weighting w, LrSchedule lr, SgdOptions sgd);
// Model averaging (FedAvg): params <- params + server_lr * average of the model deltas.
std::unique_ptr<Strategy> make_model_averaging(Weighting w, float server_lr);

}  // namespace fedpar
