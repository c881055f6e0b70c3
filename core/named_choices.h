// A config word that names one value of an enum, looked up both ways in one table: the parse
// throws Error listing every valid word, so each choice's names and message live in one place.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/spelling.h"

namespace fedpar {

template <typename E>
using NamedChoice = std::pair<E, const char*>;

// The value `name` names; Error "unknown WHAT 'name'; did you mean 'b'? (valid: a, b, c)"
// otherwise.
template <typename E>
E parse_choice(std::span<const NamedChoice<E>> table, std::string_view name,
               std::string_view what) {
  std::vector<std::string> valid;
  for (const auto& [value, word] : table) {
    if (name == word) return value;
    valid.emplace_back(word);
  }
  throw Error(fmt::format("unknown {} '{}'{} (valid: {})", what, name, did_you_mean(name, valid),
                          fmt::join(valid, ", ")));
}

template <typename E>
const char* choice_name(std::span<const NamedChoice<E>> table, E value) {
  for (const auto& [v, word] : table)
    if (v == value) return word;
  return "?";
}

}  // namespace fedpar
