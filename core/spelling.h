// Near spellings, for errors that name what the user likely meant ("did you mean 'x'?").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fedpar {

// Edits from a to b: insertions, deletions, substitutions and swaps of neighbours, one each
// (optimal string alignment).
size_t edit_distance(std::string_view a, std::string_view b);

// "; did you mean 'x'?" for the choices closest to `given` within a few edits (1, or a quarter of
// its length when longer) or that begin with it, closest first, at most two; "" when none is
// near.
std::string did_you_mean(std::string_view given, const std::vector<std::string>& choices);

}  // namespace fedpar
