// Learning-rate schedules: constant, step, cosine, each optionally after a linear warmup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fedpar {

struct LrSchedule {
  std::string kind = "constant";  // constant | step | cosine
  float base_lr = 0.1f;
  int64_t total_steps = 0;   // cosine: steps over which lr decays to min_lr
  int64_t step_size = 1;     // step: decay every step_size steps
  float gamma = 0.1f;        // step: multiply by gamma at each decay
  float min_lr = 0.0f;       // cosine: final learning rate
  int64_t warmup_steps = 0;  // linear warmup from base_lr/warmup to base_lr before the schedule

  // Learning rate for 0-based optimizer step `step`.
  float at(int64_t step) const;
  // Throws Error when kind is unknown or a parameter is out of range.
  void validate() const;
};

std::vector<std::string> lr_schedule_names();

}  // namespace fedpar
