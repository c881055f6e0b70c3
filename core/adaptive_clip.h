// DP-FedAvg's clip that follows a quantile of the update norms (Andrew, Thakkar, McMahan and
// Ramaswamy 2021, "Differentially Private Learning with Adaptive Clipping"): each round the server
// counts the updates no longer than the clip, noises the count, and moves the clip geometrically
// towards the norm below which a share `quantile` of the updates lie.
#pragma once

#include <cstddef>

namespace fedpar {

struct AdaptiveClip {
  double quantile = 0;     // gamma in (0, 1); 0: the clip stays where privacy.clip_norm sets it
  double lr = 0.2;         // eta_C: C <- C exp(-eta_C (share - gamma))
  double count_noise = 0;  // sigma_b: the count's noise std (before dividing by K); 0: K / 20
  bool on() const { return quantile > 0; }
};

// sigma_b: the configured one, or the paper's K / 20 for K clients a round.
double count_noise_std(const AdaptiveClip& a, size_t k);

// The noise multiplier the updates' average gets so that it and the noised count together cost
// what one Gaussian mechanism of multiplier z does: (z^-2 - (2 sigma_b)^-2)^(-1/2) (the paper's
// theorem 1), for a count that one client moves by at most 1/2 (noised_share centres it). Throws
// Error where 2 sigma_b <= z; z = 0 (no noise) gives 0.
double update_noise_multiplier(double z, double count_noise);

// The round's share of updates within the clip as the clip's step reads it: with `updates`
// aggregated of which `within` were no longer than the clip, (sum_k (b_k - 1/2) + noise) / K + 1/2,
// where `noise` is sigma_b N(0, 1) (0 without privacy noise), clamped to [0, 1]. Centring each
// b_k on 1/2 is what halves one client's effect on the sum (the authors' own code does it).
double noised_share(size_t within, size_t updates, double noise, size_t k);

// The next round's clip: C exp(-lr (share - quantile)).
double next_clip(double clip, double share, const AdaptiveClip& a);

}  // namespace fedpar
