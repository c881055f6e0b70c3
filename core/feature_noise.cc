// Feature noise; see feature_noise.h.
#include "core/feature_noise.h"

#include "core/rng.h"

namespace fedpar {

double feature_noise_level(const PartitionParams& p, uint32_t client, size_t clients) {
  if (p.scheme != "feature-noise" || clients < 2) return 0.0;
  return p.sigma * double(client) / double(clients - 1);
}

void add_feature_noise(std::vector<float>& x, size_t dim, uint32_t client, double noise,
                       std::span<const uint32_t> indices, uint64_t seed, NoisePart part) {
  if (noise == 0.0) return;
  Rng rng(seed, "feature-noise", client, uint32_t(part));
  for (uint32_t i : indices)
    for (size_t j = 0; j < dim; ++j) x[size_t(i) * dim + j] += float(noise * rng.normal());
}

}  // namespace fedpar
