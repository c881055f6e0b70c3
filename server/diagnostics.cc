// diagnose_updates; see diagnostics.h.
#include "server/diagnostics.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace fedpar {

UpdateDiagnostics diagnose_updates(std::span<const ClientUpdate> updates) {
  UpdateDiagnostics d;
  if (updates.empty()) return d;
  const size_t m = updates[0].values.size();
  std::vector<double> sum(m, 0.0), unit_sum(m, 0.0);
  double sum_sq_norms = 0.0;
  size_t nonzero = 0;
  for (const auto& u : updates) {
    FEDPAR_CHECK(u.values.size() == m) << "updates differ in size";
    double sq = 0.0;
    for (float v : u.values) sq += double(v) * double(v);
    const double norm = std::sqrt(sq);
    d.norms.push_back(norm);
    sum_sq_norms += sq;
    for (size_t i = 0; i < m; ++i) sum[i] += double(u.values[i]);
    if (norm > 0) {
      ++nonzero;
      for (size_t i = 0; i < m; ++i) unit_sum[i] += double(u.values[i]) / norm;
    }
  }
  double sum_sq = 0.0, unit_sq = 0.0;
  for (size_t i = 0; i < m; ++i) sum_sq += sum[i] * sum[i], unit_sq += unit_sum[i] * unit_sum[i];
  // ||sum of unit vectors||^2 = K + 2 sum_{k<l} cos(u_k, u_l)
  if (nonzero >= 2)
    d.mean_pairwise_cosine = (unit_sq - double(nonzero)) / (double(nonzero) * double(nonzero - 1));
  if (sum_sq > 0) d.gradient_diversity = sum_sq_norms / sum_sq;
  return d;
}

Distance distance(std::span<const float> w, std::span<const float> a) {
  FEDPAR_CHECK(w.size() == a.size())
      << "distance between vectors of " << w.size() << " and " << a.size();
  Distance d;
  double num = 0, den = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double diff = double(w[i]) - double(a[i]);
    d.max_abs = std::max(d.max_abs, std::abs(diff));
    num += diff * diff;
    den += double(a[i]) * double(a[i]);
  }
  d.relative = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return d;
}

double update_drift(std::span<const ClientUpdate> deltas, std::span<const ClientUpdate> linear,
                    Weighting w) {
  return distance(weighted_average(deltas, w), weighted_average(linear, w)).relative;
}

}  // namespace fedpar
