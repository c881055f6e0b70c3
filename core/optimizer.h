// SGD with momentum, weight decay and Nesterov (PyTorch's convention); its learning rate comes
// from a schedule (lr_schedule.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/checkpoint.h"
#include "core/lr_schedule.h"

namespace fedpar {

struct SgdOptions {
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

class Sgd {
 public:
  Sgd(Backend& be, size_t num_params, SgdOptions opts);
  // params -= lr * update(grads); see Backend::sgd_step for the exact formula and `applied`.
  void step(float* params, const float* grads, float lr, float* applied = nullptr);
  const SgdOptions& options() const { return opts_; }
  // The momentum buffer in host memory (empty without momentum), and its restore: checkpoints.
  std::vector<float> velocity_host() const;
  void set_velocity(std::span<const float> v);

 private:
  Backend& be_;
  size_t n_;
  SgdOptions opts_;
  DeviceArray<float> velocity_;  // empty when momentum == 0
};

// SGD on parameters in host memory (the server's model, a ring worker's replica), through a CPU
// backend of its own, so every place that steps host parameters does the same arithmetic: the
// server's gradient averaging and asynchronous SGD, the ring's workers, the async replay.
class HostSgd {
 public:
  explicit HostSgd(SgdOptions opts);
  ~HostSgd();
  // params -= lr * update(gradient); momentum persists across calls.
  void step(std::span<float> params, std::span<const float> gradient, float lr);
  // The momentum buffer as `prefix`.velocity, once there is one; load restores it (or the state
  // before the first step when the checkpoint has none: no step was taken, or no momentum).
  void save_state(Checkpoint& c, const std::string& prefix) const;
  void load_state(const Checkpoint& c, const std::string& prefix);
  // The momentum buffer itself (empty before the first step or without momentum), and back.
  std::vector<float> velocity() const;
  void set_velocity(std::span<const float> v);

 private:
  SgdOptions opts_;
  std::unique_ptr<Backend> be_;
  std::unique_ptr<Sgd> sgd_;  // sized at the first step
};

}  // namespace fedpar
