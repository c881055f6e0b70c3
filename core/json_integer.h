// Integers read from JSON that a peer or a file supplies.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <vector>

#include "core/check.h"

namespace fedpar {

// nlohmann turns a JSON float into an integer with a cast, undefined out of range (4.6e20 as an
// int64 is undefined behaviour, not an error): an integer a file holds must be a JSON integer
// within T's range. `what` names it in the error.
template <typename T>
T json_integer(const nlohmann::json& v, const std::string& what) {
  static_assert(std::is_integral_v<T>);
  bool fits;
  if constexpr (std::is_unsigned_v<T>)
    fits = v.is_number_unsigned() && v.get<uint64_t>() <= std::numeric_limits<T>::max();
  else if (v.is_number_unsigned())
    fits = v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max());
  else
    fits = v.is_number_integer() && v.get<int64_t>() >= std::numeric_limits<T>::min() &&
           v.get<int64_t>() <= std::numeric_limits<T>::max();
  if (!fits) throw Error(fmt::format("{} must be an integer in range, got {}", what, v.dump()));
  return v.get<T>();
}

template <typename T>
std::vector<T> json_integers(const nlohmann::json& v, const std::string& what) {
  if (!v.is_array()) throw Error(fmt::format("{} must be a list of integers", what));
  std::vector<T> out;
  out.reserve(v.size());
  for (const auto& e : v) out.push_back(json_integer<T>(e, what));
  return out;
}

}  // namespace fedpar
