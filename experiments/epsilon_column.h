// A table's epsilon column for runs under [privacy] (docs/privacy.md): the accountant's epsilon
// after each run's rounds at its own delta, with the delta in the header when the runs share one.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fedpar {

struct EpsilonColumn {
  std::string header;              // "epsilon at delta = 1e-05", or "epsilon (delta)"
  std::vector<std::string> cells;  // "7.97", "7.97 (1e-05)", or "none (no noise)"
};

// One cell for each run: `epsilon` its last round's (none without noise), `delta` its
// privacy.delta (NaN: unknown, its config unread). Empty when no run has an epsilon: the table
// needs no such column.
EpsilonColumn epsilon_column(const std::vector<std::optional<double>>& epsilon,
                             const std::vector<double>& delta);

}  // namespace fedpar
