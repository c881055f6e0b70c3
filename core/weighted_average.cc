// weighted_average and weighted_sum; see weighted_average.h.
#include "core/weighted_average.h"

#include <fmt/format.h>

#include <algorithm>

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
      throw Error(
          fmt::format("client {} sent {} values, expected {}", u.client, u.values.size(), n));
    if (k > 0 && updates[k - 1].client >= u.client)
      throw Error("updates must be sorted by client id, each client once");
    total += raw_weight(w, u.num_samples) * u.scale;
  }
  return total;
}

// Block by block, the updates in the order given within each block: every element's sum is the
// same sequence of double operations as whole passes per update would make (so the same bits),
// while the accumulator stays in L1 instead of a model-sized buffer of doubles.
void reduce(std::span<const ClientUpdate> updates, Weighting w, double norm,
            std::vector<float>& out) {
  constexpr size_t kBlock = 512;
  const size_t n = updates[0].values.size();
  std::vector<double> wk;
  for (const auto& u : updates) wk.push_back(raw_weight(w, u.num_samples) * u.scale / norm);
  out.resize(n);
  double acc[kBlock];
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t m = std::min(kBlock, n - b);
    const float* v0 = updates[0].values.data() + b;
    for (size_t i = 0; i < m; ++i)
      acc[i] = 0.0 + wk[0] * double(v0[i]);  // 0.0 + : as from zero (-0 -> +0)
    for (size_t k = 1; k < updates.size(); ++k) {
      const float* v = updates[k].values.data() + b;
      for (size_t i = 0; i < m; ++i) acc[i] += wk[k] * double(v[i]);
    }
    for (size_t i = 0; i < m; ++i) out[b + i] = float(acc[i]);
  }
}

}  // namespace

void weighted_average(std::span<const ClientUpdate> updates, Weighting w, std::vector<float>& out) {
  double total = check_updates(updates, w);
  if (w == Weighting::kSum) total = 1.0;
  if (total <= 0) throw Error("update weights sum to zero (every client reported 0 samples)");
  reduce(updates, w, total, out);
}

std::vector<float> weighted_average(std::span<const ClientUpdate> updates, Weighting w) {
  std::vector<float> out;
  weighted_average(updates, w, out);
  return out;
}

std::vector<float> weighted_sum(std::span<const ClientUpdate> updates, Weighting w) {
  check_updates(updates, w);
  std::vector<float> out;
  reduce(updates, w, 1.0, out);
  return out;
}

}  // namespace fedpar
