// Dynamic loss scaling for fp16 training: the loss gradient is multiplied by a scale S so small
// gradients survive fp16; before the update the gradients are divided by S again. A step whose
// gradients overflowed (inf or NaN) is skipped and S halves; after `growth_interval` good steps in
// a row S doubles (the scheme of PyTorch's GradScaler).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/backend.h"

namespace fedpar {

struct LossScaleOptions {
  float init = 65536.0f;
  float growth = 2.0f;
  float backoff = 0.5f;
  int growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(LossScaleOptions o = {}) : o_(o), scale_(o.init) {}
  float scale() const { return scale_; }
  // Divides grads (device, n floats) by the scale. Returns false when any was not finite: then
  // the caller skips the step and the scale backs off.
  bool unscale(Backend& be, float* grads, size_t n);
  int64_t skipped() const { return skipped_; }

 private:
  LossScaleOptions o_;
  float scale_;
  int good_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace fedpar
