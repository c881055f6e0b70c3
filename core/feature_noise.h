// The feature-noise partition scheme's data side (Hsieh et al.-style feature skew): client c of K
// gets Gaussian noise of std sigma * c / (K - 1) added to every feature of its samples. The
// partitioner records the level in the manifest; each client process applies it to its own copy of
// the data after loading, so the noise never crosses the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/partition_params.h"

namespace fedpar {

// Client `client` of `clients`' noise std under `p` (0 unless p.scheme is "feature-noise").
double feature_noise_level(const PartitionParams& p, uint32_t client, size_t clients);

// Which of a client's samples a noise stream covers: the ones it trains on, or the ones
// partition.holdout keeps out of its training (scored by the server alone).
enum class NoisePart : uint32_t { kTraining = 0, kHeldOut = 1 };

// Adds N(0, noise^2) to every feature of the rows `indices` of `x` (rows of `dim` floats), from
// stream (seed, "feature-noise", client, part).
void add_feature_noise(std::vector<float>& x, size_t dim, uint32_t client, double noise,
                       std::span<const uint32_t> indices, uint64_t seed,
                       NoisePart part = NoisePart::kTraining);

}  // namespace fedpar
