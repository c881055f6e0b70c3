// Learning-rate schedules; see lr_schedule.h.
#include "core/lr_schedule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"
#include "core/spelling.h"

namespace fedpar {

std::vector<std::string> lr_schedule_names() { return {"constant", "step", "cosine"}; }

void LrSchedule::validate() const {
  const auto names = lr_schedule_names();
  if (std::find(names.begin(), names.end(), kind) == names.end())
    throw Error(fmt::format("unknown lr schedule '{}'{} (valid: {})", kind,
                            did_you_mean(kind, names), fmt::join(names, ", ")));
  if (!(base_lr > 0.0f) || !std::isfinite(base_lr))
    throw Error(fmt::format("lr must be a positive number, got {}", base_lr));
  if (warmup_steps < 0) throw Error("warmup steps must be >= 0");
  if (kind == "step" && step_size < 1) throw Error("lr step size must be >= 1");
  if (kind == "cosine" && total_steps < 1) throw Error("cosine schedule needs total steps >= 1");
}

float LrSchedule::at(int64_t step) const {
  if (step < warmup_steps) return base_lr * float(step + 1) / float(warmup_steps);
  const int64_t t = step - warmup_steps;
  if (kind == "step") {
    const int64_t decays = t / step_size;  // whole periods completed
    return base_lr * std::pow(gamma, float(decays));
  }
  if (kind == "cosine") {
    const int64_t span = std::max<int64_t>(1, total_steps - warmup_steps);
    const double frac = std::min(1.0, double(t) / double(span));
    return min_lr + 0.5f * (base_lr - min_lr) * float(1.0 + std::cos(std::numbers::pi * frac));
  }
  return base_lr;
}

}  // namespace fedpar
