// FedOpt (Reddi et al. 2021, "Adaptive Federated Optimization"): in the model regime the server
// treats the clients' weighted mean model delta as a pseudo-gradient step and applies it with its
// own optimizer. Per coordinate, with Delta the mean delta, eta the server learning rate:
//   sgd      x += eta * Delta                                   (FedAvg; eta = 1 is plain FedAvg)
//   avgm     m = beta1 m + Delta;               x += eta * m     (FedAvgM, Hsu et al. 2019)
//   adagrad  m = beta1 m + (1 - beta1) Delta;   v = v + Delta^2
//   adam     m likewise;                        v = beta2 v + (1 - beta2) Delta^2
//   yogi     m likewise;                        v = v - (1 - beta2) Delta^2 sign(v - Delta^2)
//   adaptive ones: x += eta * m / (sqrt(v) + tau), v starting at tau^2, no bias correction.
// Defined in docs/definitions.md#server-optimizers; state is double, one entry per coordinate.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/checkpoint.h"

namespace fedpar {

enum class FedOptKind { kSgd, kAvgM, kAdagrad, kAdam, kYogi };

// "sgd" | "avgm" | "adagrad" | "adam" | "yogi"; throws Error naming them otherwise.
FedOptKind parse_fedopt(const std::string& name);
const char* fedopt_name(FedOptKind k);

struct FedOptOptions {
  FedOptKind kind = FedOptKind::kSgd;
  double lr = 1.0;      // eta, the server learning rate
  double beta1 = 0.9;   // avgm: momentum; adaptive: first-moment decay
  double beta2 = 0.99;  // adam, yogi
  double tau = 1e-3;    // adaptive: the degree of adaptivity
};

class FedOpt {
 public:
  explicit FedOpt(FedOptOptions o);
  // params <- the server step with the mean delta `delta`.
  void step(std::span<float> params, std::span<const float> delta);
  const FedOptOptions& options() const { return o_; }
  // The moments as `prefix`.m and .v in float64, once there are some; load restores them.
  void save_state(Checkpoint& c, const std::string& prefix) const;
  void load_state(const Checkpoint& c, const std::string& prefix);

 private:
  FedOptOptions o_;
  std::vector<double> m_, v_;
};

}  // namespace fedpar
