// The adaptive clip's two rules: the updates' noise multiplier that, with the count's noise, costs
// what one mechanism of multiplier z does, and the geometric step towards the quantile.
#include "core/adaptive_clip.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// One client added or removed moves the centred count by 1/2, which is what the split of the
// noise above assumes: within the clip it adds 1 - 1/2, beyond it - 1/2.
TEST(AdaptiveClip, OneClientMovesTheShareByHalfACountOverK) {
  const size_t k = 10;
  for (size_t updates : {0, 4, 10, 13})
    for (size_t within = 0; within <= updates; ++within) {
      const double base = noised_share(within, updates, 0.3, k);
      const double in = noised_share(within + 1, updates + 1, 0.3, k);
      const double out = noised_share(within, updates + 1, 0.3, k);
      if (std::min({base, in, out}) <= 0 || std::max({base, in, out}) >= 1) continue;  // clamped
      EXPECT_NEAR(in - base, 0.5 / k, 1e-12);
      EXPECT_NEAR(out - base, -0.5 / k, 1e-12);
    }
  EXPECT_DOUBLE_EQ(noised_share(7, 10, 0, k), 0.7) << "without noise and with K updates: the share";
  EXPECT_EQ(noised_share(10, 10, 50, k), 1.0) << "clamped";
  EXPECT_EQ(noised_share(0, 10, -50, k), 0.0);
  EXPECT_EQ(count_noise_std({}, 100), 5.0) << "K / 20 when not set";
  EXPECT_EQ(count_noise_std({.count_noise = 2}, 100), 2.0);
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
