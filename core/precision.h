// Mixed precision: matrix products may take their inputs rounded to bf16 or fp16 (accumulating in
// fp32, as tensor cores do) while the weights, gradients and everything else stay fp32: the
// fp32 master weights of mixed-precision training. round_to() is the CPU reference of the
// rounding (nearest, ties to even; fp16 overflows to infinity).
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/codec/casts.h"

namespace fedpar {

enum class Precision { kF32, kBF16, kF16 };

// "fp32" | "bf16" | "fp16"; throws Error naming the choices otherwise.
Precision parse_precision(std::string_view name);
std::string_view precision_name(Precision p);

inline float round_to_bf16(float x) {
  uint32_t b = std::bit_cast<uint32_t>(x);
  if ((b & 0x7f800000u) == 0x7f800000u) return x;  // inf and NaN stay
  b += 0x7fffu + ((b >> 16) & 1u);
  return std::bit_cast<float>(b & 0xffff0000u);
}

#if defined(__FLT16_MAX__)
inline float round_to_f16(float x) { return float(static_cast<_Float16>(x)); }
#else  // compilers without _Float16 on this target (clang < 15 on x86): the codec's conversion
inline float round_to_f16(float x) { return half_to_float(float_to_half(x)); }
#endif

inline float round_to(Precision p, float x) {
  return p == Precision::kBF16 ? round_to_bf16(x) : p == Precision::kF16 ? round_to_f16(x) : x;
}

}  // namespace fedpar
