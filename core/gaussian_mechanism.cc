// The Gaussian mechanism's noise; see gaussian_mechanism.h.
#include "core/gaussian_mechanism.h"

#include "core/rng.h"

namespace fedpar {

void add_gaussian_noise(std::span<float> v, double stddev, uint64_t seed, uint64_t round) {
  Rng rng(seed, "dp-noise", 0, uint32_t(round));
  for (float& x : v) x = float(double(x) + stddev * rng.normal());
}

}  // namespace fedpar
