// The adaptive clip's two rules: the updates' noise multiplier that, with the count's noise, costs
// what one mechanism of multiplier z does, and the geometric step towards the quantile.
#include "core/adaptive_clip.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"

namespace fedpar {
namespace {

TEST(AdaptiveClip, TheTwoNoisesTogetherCostWhatZDoes) {
  for (double z : {0.5, 1.0, 3.0})
    for (double sigma_b : {z, 2 * z, 10.0 * z}) {
      const double z_updates = update_noise_multiplier(z, sigma_b);
      EXPECT_GT(z_updates, z) << "the updates pay for the count's share";
      // the paper's composition: z^-2 = z_updates^-2 + (2 sigma_b)^-2
      EXPECT_NEAR(1 / (z * z), 1 / (z_updates * z_updates) + 1 / (4 * sigma_b * sigma_b),
                  1e-12 / (z * z));
    }
  EXPECT_EQ(update_noise_multiplier(0, 0), 0);
  EXPECT_THROW(update_noise_multiplier(1, 0.5), Error) << "2 sigma_b = z leaves nothing";
}

TEST(AdaptiveClip, TheClipStepsTowardsTheQuantile) {
  const AdaptiveClip a{.quantile = 0.5, .lr = 0.2};
  EXPECT_EQ(next_clip(2.0, 0.5, a), 2.0) << "at the quantile it stays";
  EXPECT_LT(next_clip(2.0, 0.9, a), 2.0) << "most updates within: the clip shrinks";
  EXPECT_GT(next_clip(2.0, 0.1, a), 2.0) << "most beyond: it grows";
  EXPECT_DOUBLE_EQ(next_clip(2.0, 1.0, a), 2.0 * std::exp(-0.1));
}

}  // namespace
}  // namespace fedpar
