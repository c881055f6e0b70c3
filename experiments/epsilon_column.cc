#include "experiments/epsilon_column.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/check.h"

namespace fedpar {

EpsilonColumn epsilon_column(const std::vector<std::optional<double>>& epsilon,
                             const std::vector<double>& delta) {
  FEDPAR_CHECK(epsilon.size() == delta.size());
  std::set<double> deltas;  // of the runs with a guarantee: the others' delta means nothing
  bool unknown = false;     // a NaN delta: its run's config could not be read
  for (size_t i = 0; i < epsilon.size(); ++i)
    if (epsilon[i]) std::isnan(delta[i]) ? void(unknown = true) : void(deltas.insert(delta[i]));
  if (deltas.empty() && !unknown) return {};
  const bool shared = deltas.size() == 1 && !unknown;
  EpsilonColumn out{.header = shared ? fmt::format("epsilon at delta = {:g}", *deltas.begin())
                                     : std::string("epsilon (delta)")};
  for (size_t i = 0; i < epsilon.size(); ++i)
    out.cells.push_back(!epsilon[i] ? std::string("none (no noise)")
                        : shared    ? fmt::format("{:.3g}", *epsilon[i])
                        : std::isnan(delta[i])
                            ? fmt::format("{:.3g} (delta unknown)", *epsilon[i])
                            : fmt::format("{:.3g} ({:g})", *epsilon[i], delta[i]));
  return out;
}

}  // namespace fedpar
