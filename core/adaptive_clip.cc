// The adaptive clip's noise split and update; see adaptive_clip.h.
#include "core/adaptive_clip.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace fedpar {

double count_noise_std(const AdaptiveClip& a, size_t k) {
  return a.count_noise > 0 ? a.count_noise : double(k) / 20;
}

double update_noise_multiplier(double z, double count_noise) {
  if (z == 0) return 0;
  const double rest = 1 / (z * z) - 1 / (4 * count_noise * count_noise);
  if (!(count_noise > 0 && rest > 0))
    throw Error(fmt::format(
        "the adaptive clip's count noise sigma_b = {:g} (privacy.count_noise; K / 20 when 0) must "
        "be above noise_multiplier / 2 = {:g}: the count's noise pays for part of the budget and "
        "the updates' noise grows to (z^-2 - (2 sigma_b)^-2)^-1/2 to keep the rest; raise "
        "privacy.count_noise",
        count_noise, z / 2));
  return 1 / std::sqrt(rest);
}

double noised_share(size_t within, size_t updates, double noise, size_t k) {
  FEDPAR_CHECK(within <= updates && k >= 1) << within << " of " << updates << ", K = " << k;
  const double centred = double(within) - double(updates) / 2 + noise;
  return std::clamp(centred / double(k) + 0.5, 0.0, 1.0);
}

double next_clip(double clip, double share, const AdaptiveClip& a) {
  return clip * std::exp(-a.lr * (share - a.quantile));
}

}  // namespace fedpar
