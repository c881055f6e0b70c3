// A config word that names one value of an enum, looked up both ways in one table: the parse
// throws Error listing every valid word, so each choice's names and message live in one place.
#pragma once

#include <fmt/format.h>

#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "core/check.h"

namespace fedpar {

template <typename E>
using NamedChoice = std::pair<E, const char*>;

// The value `name` names; Error "unknown WHAT 'name' (valid: a, b, c)" otherwise.
template <typename E>
E parse_choice(std::span<const NamedChoice<E>> table, std::string_view name,
               std::string_view what) {
  std::string valid;
  for (const auto& [value, word] : table) {
    if (name == word) return value;
    valid += (valid.empty() ? "" : ", ") + std::string(word);
  }
  throw Error(fmt::format("unknown {} '{}' (valid: {})", what, name, valid));
}

template <typename E>
const char* choice_name(std::span<const NamedChoice<E>> table, E value) {
  for (const auto& [v, word] : table)
    if (v == value) return word;
  return "?";
}

}  // namespace fedpar
