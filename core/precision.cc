// Precision names; see precision.h.
#include "core/precision.h"

#include <fmt/format.h>

#include "core/check.h"

namespace fedpar {

Precision parse_precision(std::string_view name) {
  if (name == "fp32") return Precision::kF32;
  if (name == "bf16") return Precision::kBF16;
  if (name == "fp16") return Precision::kF16;
  throw Error(fmt::format("precision must be fp32, bf16 or fp16, got '{}'", name));
}

std::string_view precision_name(Precision p) {
  return p == Precision::kBF16 ? "bf16" : p == Precision::kF16 ? "fp16" : "fp32";
}

}  // namespace fedpar
