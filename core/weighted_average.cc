// weighted_average and weighted_sum; see weighted_average.h.
#include "core/weighted_average.h"

#include <fmt/format.h>

#include "core/check.h"

namespace fedpar {
namespace {

// Checks sizes and order; returns the sum of raw weights.
double check_updates(std::span<const ClientUpdate> updates, Weighting w) {
  FEDPAR_CHECK(!updates.empty()) << "no updates to reduce";
  const size_t n = updates[0].values.size();
  double total = 0;
  for (size_t k = 0; k < updates.size(); ++k) {
    const auto& u = updates[k];
    if (u.values.size() != n)
      throw Error(fmt::format("client {} sent {} values, expected {}", u.client, u.values.size(), n));
    if (k > 0 && updates[k - 1].client >= u.client)
      throw Error("updates must be sorted by client id, each client once");
    total += raw_weight(w, u.num_samples);
  }
  return total;
}

std::vector<float> reduce(std::span<const ClientUpdate> updates, Weighting w, double norm) {
  const size_t n = updates[0].values.size();
  std::vector<double> acc(n, 0.0);
  for (const auto& u : updates) {
    const double wk = raw_weight(w, u.num_samples) / norm;
    for (size_t i = 0; i < n; ++i) acc[i] += wk * double(u.values[i]);
  }
  return std::vector<float>(acc.begin(), acc.end());
}

}  // namespace

std::vector<float> weighted_average(std::span<const ClientUpdate> updates, Weighting w) {
  double total = check_updates(updates, w);
  if (w == Weighting::kSum) total = 1.0;
  if (total <= 0) throw Error("update weights sum to zero (every client reported 0 samples)");
  return reduce(updates, w, total);
}

std::vector<float> weighted_sum(std::span<const ClientUpdate> updates, Weighting w) {
  check_updates(updates, w);
  return reduce(updates, w, 1.0);
}

}  // namespace fedpar
