// fp16 and bf16: each value rounded to the nearest 16-bit float (ties to even), two bytes each.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/codec/codec.h"

namespace fedpar {

std::unique_ptr<Codec> make_f16_codec();
std::unique_ptr<Codec> make_bf16_codec();

// The conversions themselves (exposed for tests; vectorized where the CPU has F16C).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t b);
void floats_to_halves(std::span<const float> in, uint16_t* out);
void halves_to_floats(const uint16_t* in, std::span<float> out);

}  // namespace fedpar
