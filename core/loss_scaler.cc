// LossScaler; see loss_scaler.h.
#include "core/loss_scaler.h"

#include <cmath>

namespace fedpar {

bool LossScaler::unscale(Backend& be, float* grads, size_t n) {
  // The sum of squares (in double) is finite exactly when every gradient is.
  if (!std::isfinite(be.dot(grads, grads, n))) {
    scale_ *= o_.backoff;
    good_ = 0;
    ++skipped_;
    return false;
  }
  be.scale(grads, 1.0f / scale_, n);
  if (++good_ >= o_.growth_interval) {
    scale_ *= o_.growth;
    good_ = 0;
  }
  return true;
}

}  // namespace fedpar
