// top-k: per bucket, the k values of largest magnitude (NaN largest, ties to the lower index), sent
// as a varint count, varint index gaps and float32 values. Definition and wire layout:
// docs/definitions.md#compression.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/codec/codec.h"

namespace fedpar {

// Throws Error unless 0 < ratio <= 1.
std::unique_ptr<Codec> make_topk_codec(const CodecParams& p);

// k for a bucket of `len` values: max(1, llround(ratio * len)), at most len (0 for len 0).
size_t topk_bucket_k(size_t len, double ratio);
// The total count for d values: the sum of topk_bucket_k over the buckets of `bucket` values
// (0: one bucket of d; the last bucket holds what is left).
size_t topk_total(size_t d, double ratio, uint32_t bucket);

// The selection itself (exposed for tests): appends to `idx` the indices of the k values of v with
// the largest magnitude, increasing. Magnitude order is the order of the float's bits with the sign
// cleared (so NaN is above Inf); equal magnitudes go to the lower index. kRadix: a histogram select
// on the magnitude bits (11 + 10 + 10 bits); kSort: nth_element on a copy; kAuto picks by length.
enum class TopkMethod { kAuto, kRadix, kSort };
void topk_select(std::span<const float> v, size_t k, std::vector<uint32_t>& idx,
                 TopkMethod method = TopkMethod::kAuto);

}  // namespace fedpar
