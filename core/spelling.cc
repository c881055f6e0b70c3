#include "core/spelling.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace fedpar {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(std::string_view given, const std::vector<std::string>& choices) {
  std::vector<std::pair<size_t, std::string>> near;
  for (const std::string& c : choices) {
    const size_t d = edit_distance(c, given);
    if (d <= std::max<size_t>(2, given.size() / 4))
      near.emplace_back(d, c);
    else if (given.size() >= 3 && c.starts_with(given))  // "dirichlet": dirichlet-clients, ...
      near.emplace_back(2, c);
  }
  std::sort(near.begin(), near.end());
  if (near.empty()) return "";
  return near.size() == 1
             ? fmt::format("; did you mean '{}'?", near[0].second)
             : fmt::format("; did you mean '{}' or '{}'?", near[0].second, near[1].second);
}

}  // namespace fedpar
