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
#include "core/checkpoint.h"
#include "core/fedopt.h"
#include "core/optimizer.h"
#include "core/robust_aggregate.h"
#include "core/weighted_average.h"

namespace fedpar {

// DP-FedAvg's Gaussian noise on the aggregate (core/gaussian_mechanism.h); stddev 0: none.
struct AggregateNoise {
  double stddev = 0;  // z S / K: the noise multiplier times the clip over the fixed denominator
  uint64_t seed = 0;  // the run's
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  // Reduces `updates` (sorted by client id, at least one) into `params`. Deterministic.
  virtual void apply(std::span<const ClientUpdate> updates, std::span<float> params) = 0;
  // A round of round number `round` that aggregated no update under AggregateNoise: the noise
  // alone is the aggregate (the mechanism's output does not tell who was sampled). Only
  // gradient and model averaging add noise; the others throw.
  virtual void apply_noise_only(uint64_t round, std::span<float> params);
  // DP-FedAvg's adaptive clip: this round's clip norm and noise std (the clip moves each round).
  // Only gradient and model averaging clip; the others throw.
  virtual void set_clip_and_noise(double clip_norm, double noise_stddev);
  // The server optimizer's state (momentum, moments) into and out of a checkpoint.
  virtual void save_state(Checkpoint& c) const = 0;
  virtual void load_state(const Checkpoint& c) = 0;
};

// Gradient averaging (synchronous SGD / parameter server): params <- SGD step with the averaged
// gradient (or its robust aggregate), learning rate from `lr` at the round number (the server
// optimizer keeps momentum).
std::unique_ptr<Strategy> make_gradient_averaging(Weighting w, LrSchedule lr, SgdOptions sgd,
                                                  RobustOptions robust = {},
                                                  AggregateNoise noise = {});
// signSGD with majority vote (Bernstein et al. 2018): each update is a vector of signs (+-1);
// params <- SGD step along sign(sum_k sign(v_k)) (0 where the vote ties). Every client has one
// vote, whatever its n_k.
std::unique_ptr<Strategy> make_majority_vote(LrSchedule lr, SgdOptions sgd);
// Model averaging: the weighted average of the model deltas (or their robust aggregate), applied
// by the server optimizer (FedAvg: params <- params + server_lr * average; FedAvgM, FedAdagrad,
// FedAdam, FedYogi).
std::unique_ptr<Strategy> make_model_averaging(Weighting w, FedOptOptions opt,
                                               RobustOptions robust = {},
                                               AggregateNoise noise = {});

}  // namespace fedpar
