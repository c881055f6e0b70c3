// Sign codecs: one bit per value (set when the value is < 0), LSB first. scaled_sign (EF-signSGD)
// sends ||v||_1 / d first and decodes to +-that scale; sign decodes to +-1 (the server takes a
// majority vote). Definition: docs/definitions.md#compression.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/codec/codec.h"

namespace fedpar {

std::unique_ptr<Codec> make_scaled_sign_codec();
std::unique_ptr<Codec> make_sign_codec();

// ||v||_1 / d: eight double partial sums of |v_i| (value i into sum i % 8, in index order), added
// as ((S0+S1)+(S2+S3))+((S4+S5)+(S6+S7)), divided by d in double, rounded to float; 0 for d = 0.
float sign_scale(std::span<const float> v);
// Bit i of out (byte i / 8, bit i % 8) set when v[i] < 0; ceil(d / 8) bytes, padding bits zero.
void pack_signs(std::span<const float> v, uint8_t* out);
// Both in one pass over v (what scaled_sign's encoder runs): the bits into out, the scale returned.
float pack_signs_and_scale(std::span<const float> v, uint8_t* out);
// out[i] = bit i ? -m : m for the ceil(d / 8) bytes at `bits`.
void unpack_signs(const uint8_t* bits, float m, std::span<float> out);

}  // namespace fedpar
