// spread_of; see client_spread.h.
#include "core/client_spread.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/median.h"

namespace fedpar {

Spread spread_of(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  const double n = double(v.size());
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(sq / n);
  s.min_at = size_t(std::min_element(v.begin(), v.end()) - v.begin());
  s.min = v[s.min_at];
  s.max = *std::max_element(v.begin(), v.end());
  s.median = median(v);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const size_t worst = (v.size() + 9) / 10;
  s.worst10 =
      std::accumulate(sorted.begin(), sorted.begin() + ptrdiff_t(worst), 0.0) / double(worst);
  return s;
}

}  // namespace fedpar
