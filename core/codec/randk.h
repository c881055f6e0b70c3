// random-k: k = max(1, llround(ratio * d)) values at indices every client of a round draws alike
// from (seed, round); only the values travel. Definition: docs/definitions.md#compression.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/codec/codec.h"

namespace fedpar {

// Throws Error unless 0 < ratio <= 1.
std::unique_ptr<Codec> make_randk_codec(const CodecParams& p);

// k for d values (0 for d = 0).
size_t randk_count(size_t d, double ratio);
// What a decoded value is multiplied by: float(d / k) when unbiased (k > 0), else 1.
float randk_scale(size_t d, size_t k, bool unbiased);
// The round's indices, increasing: the first k entries of 0..d-1 after Rng(seed, "randk", 0,
// uint32_t(round)).choose(·, k), sorted. Drawn without materializing 0..d-1 when k is small (the
// same draws in the same order: tested against Rng::choose).
std::vector<uint32_t> randk_indices(uint64_t seed, uint64_t round, size_t d, size_t k);

}  // namespace fedpar
