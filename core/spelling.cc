#include "core/spelling.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace fedpar {

size_t edit_distance(std::string_view a, std::string_view b) {
  // three rows: a swap of neighbours ("rnu" for "run") looks two back
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, row);
  }
  return prev[b.size()];
}

std::string did_you_mean(std::string_view given, const std::vector<std::string>& choices) {
  std::vector<std::pair<size_t, std::string>> near;
  for (const std::string& c : choices) {
    const size_t d = edit_distance(c, given);
    if (d <= std::max<size_t>(1, given.size() / 4))
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
