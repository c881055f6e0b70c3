// The adaptive clip's noise split and update; see adaptive_clip.h.
#include "core/adaptive_clip.h"

#include <cmath>

#include "core/check.h"

namespace fedpar {

double update_noise_multiplier(double z, double count_noise) {
  if (z == 0) return 0;
  const double rest = 1 / (z * z) - 1 / (4 * count_noise * count_noise);
  FEDPAR_CHECK(count_noise > 0 && rest > 0)
      << "the count's noise " << count_noise << " must exceed z / 2 = " << z / 2;
  return 1 / std::sqrt(rest);
}

double next_clip(double clip, double share, const AdaptiveClip& a) {
  return clip * std::exp(-a.lr * (share - a.quantile));
}

}  // namespace fedpar
