// What the topologies whose workers step their own copy of the model (allreduce, pipeline,
// tensor) keep on the server for checkpoints: the whole model's optimizer velocity as of the last
// checkpoint round, and the first TASK's vectors, which give the workers the model and, resuming,
// that velocity.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/checkpoint.h"

namespace fedpar {

class WorkerVelocity {
 public:
  explicit WorkerVelocity(std::string entry) : entry_(std::move(entry)) {}
  std::vector<float> whole;  // empty before a checkpoint round, or without momentum

  // As the checkpoint entry `entry`; load checks it against the model's size (Error).
  void save(Checkpoint& c) const;
  void load(const Checkpoint& c, size_t num_params);
  // The first call's vectors: the model (and the velocity, when there is one); null afterwards.
  std::shared_ptr<const std::vector<std::vector<float>>> first_task(
      const std::vector<float>& params);

 private:
  std::string entry_;
  bool started_ = false;
};

}  // namespace fedpar
