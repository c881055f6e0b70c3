#include "experiments/epsilon_column.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/check.h"

namespace fedpar {

EpsilonColumn epsilon_column(const std::vector<std::optional<double>>& epsilon,
                             const std::vector<double>& delta) {
  FEDPAR_CHECK(epsilon.size() == delta.size());
  std::set<double> deltas;  // of the runs with a guarantee: the others' delta means nothing
  for (size_t i = 0; i < epsilon.size(); ++i)
    if (epsilon[i]) deltas.insert(delta[i]);
  if (deltas.empty()) return {};
  const bool shared = deltas.size() == 1;
  EpsilonColumn out{.header = shared ? fmt::format("epsilon at delta = {:g}", *deltas.begin())
                                     : std::string("epsilon (delta)")};
  for (size_t i = 0; i < epsilon.size(); ++i)
    out.cells.push_back(!epsilon[i] ? std::string("none (no noise)")
                        : shared    ? fmt::format("{:.3g}", *epsilon[i])
                                    : fmt::format("{:.3g} ({:g})", *epsilon[i], delta[i]));
  return out;
}

}  // namespace fedpar
