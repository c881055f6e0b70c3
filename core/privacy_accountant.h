// What DP-FedAvg's rounds cost in privacy: the Renyi DP (RDP) of the sampled Gaussian mechanism,
// composed over rounds and turned into an (epsilon, delta) guarantee. A round includes each client
// independently with probability q (Poisson sampling), clips every update to an L2 norm S and adds
// N(0, (z S)^2) per coordinate to their sum: that is the sampled Gaussian mechanism with noise
// multiplier z, at the level of a client (all of its data), under add/remove-one-client neighbours.
#pragma once

#include <cstdint>

namespace fedpar {

// RDP of order `alpha` (an integer >= 2) of one round: Mironov, Talwar and Zhang (2019, "Renyi
// Differential Privacy of the Sampled Gaussian Mechanism", section 3.3):
//   log( sum_{k=0..alpha} C(alpha, k) (1 - q)^(alpha - k) q^k exp((k^2 - k) / (2 z^2)) ) / (alpha -
//   1)
// summed in log space. q in [0, 1], z > 0. q = 1 is the Gaussian mechanism's alpha / (2 z^2).
double sampled_gaussian_rdp(double q, double z, int alpha);

struct PrivacySpent {
  double epsilon = 0;  // the least over the orders tried
  int order = 0;       // the RDP order that gave it
};

// (epsilon, delta) after `rounds` rounds at (q, z): the RDP of each order times `rounds`,
// converted by Balle et al. (2020, "Hypothesis Testing Interpretations and Renyi Differential
// Privacy", theorem 21): eps = rdp + log((a - 1) / a) - (log delta + log a) / (a - 1), the least
// over the integer orders 2..256. rounds = 0: epsilon 0.
PrivacySpent privacy_spent(double q, double z, uint64_t rounds, double delta);

// The least noise multiplier z, to 1e-4 relative, whose epsilon after `rounds` at q is at most
// `epsilon` (epsilon falls as z grows). Throws Error where even z = 1e4 spends more.
double noise_for_epsilon(double q, uint64_t rounds, double delta, double epsilon);

}  // namespace fedpar
