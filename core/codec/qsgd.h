// QSGD: per bucket a float32 norm, then per value a sign bit and a level in 0..s drawn by
// stochastic rounding, so that the decoded vector is unbiased. Definition, the order of the random
// draws and the wire layout: docs/definitions.md#compression.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/codec/codec.h"

namespace fedpar {

// Throws Error unless 1 <= levels <= 127 and bucket >= 1.
std::unique_ptr<Codec> make_qsgd_codec(const CodecParams& p);

// Bits per value: 1 + ceil(log2(s + 1)) (2 for s = 1, 4 for s = 4..7, 8 for s = 64..127).
uint32_t qsgd_value_bits(uint32_t levels);
// The encoding's length: per bucket 4 + ceil(len * bits / 8).
size_t qsgd_bytes(size_t d, uint32_t bucket, uint32_t levels);
// A bucket's float32 norm: eight double partial sums of squares (value i into sum i % 8, in index
// order), added as ((S0+S1)+(S2+S3))+((S4+S5)+(S6+S7)), square root in double, rounded to float.
float qsgd_norm(std::span<const float> v);

// The 2 * n random bytes values first .. first + n - 1 draw from the message's stream, as the
// codec's own path computes them (exposed for tests: it must be Philox at any block, 2^32
// included).
std::vector<uint8_t> qsgd_draw_bytes(const CodecParams& p, const CodecContext& ctx, uint64_t first,
                                     size_t n);

// The definition written plainly, one value and one bit at a time, drawing with Rng::next_u32
// (exposed for tests: the codec's vectorized path must give the same bytes and floats).
void qsgd_encode_reference(const CodecParams& p, std::span<const float> v, const CodecContext& ctx,
                           std::vector<uint8_t>& out);
std::string qsgd_decode_reference(const CodecParams& p, std::span<const uint8_t> bytes,
                                  std::span<float> out);

}  // namespace fedpar
