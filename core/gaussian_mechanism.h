// DP-FedAvg's noise: what makes a round's clipped aggregate differentially private
// (core/privacy_accountant.h says how private).
#pragma once

#include <cstdint>
#include <span>

namespace fedpar {

// Adds N(0, stddev^2) to every value of `v` (in double, then rounded), drawn from the stream
// (seed, "dp-noise", 0, round): the same noise on any machine, and none shared between rounds.
void add_gaussian_noise(std::span<float> v, double stddev, uint64_t seed, uint64_t round);

}  // namespace fedpar
