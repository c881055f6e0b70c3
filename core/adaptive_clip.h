// DP-FedAvg's clip that follows a quantile of the update norms (Andrew, Thakkar, McMahan and
// Ramaswamy 2021, "Differentially Private Learning with Adaptive Clipping"): each round the server
// counts the updates no longer than the clip, noises the count, and moves the clip geometrically
// towards the norm below which a share `quantile` of the updates lie.
#pragma once

namespace fedpar {

struct AdaptiveClip {
  double quantile = 0;     // gamma in (0, 1); 0: the clip stays where privacy.clip_norm sets it
  double lr = 0.2;         // eta_C: C <- C exp(-eta_C (share - gamma))
  double count_noise = 0;  // sigma_b: the count's noise std (before dividing by K)
  bool on() const { return quantile > 0; }
};

// The noise multiplier the updates' average gets so that it and the noised count together cost
// what one Gaussian mechanism of multiplier z does: (z^-2 - (2 sigma_b)^-2)^(-1/2) (the paper's
// theorem 1; a count moves by at most 1, half an update's S in the same units). Needs
// 2 sigma_b > z; z = 0 (no noise) gives 0.
double update_noise_multiplier(double z, double count_noise);

// The next round's clip: C exp(-lr (share - quantile)), share being the noised share of the
// round's updates no longer than C (the noised count over K).
double next_clip(double clip, double share, const AdaptiveClip& a);

}  // namespace fedpar
