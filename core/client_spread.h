// How a value spreads over a run's clients: the summary fairness papers give of per-client
// accuracy (q-FFL's average, worst 10% and variance; Ditto's and others' alike), computed in one
// place for the server's log, the run's README, its plot and `fedpar compare`.
#pragma once

#include <cstddef>
#include <vector>

namespace fedpar {

struct Spread {
  double mean = 0;  // unweighted: each client counts once, whatever its size
  double std = 0;   // over the clients (population), the square root of q-FFL's variance
  double min = 0, median = 0, max = 0;
  double worst10 = 0;  // the mean of the ceil(n / 10) lowest values: q-FFL's "worst 10%"
  size_t min_at = 0;   // the index of the lowest (the first, on ties)
};

// All zero for an empty list.
Spread spread_of(const std::vector<double>& values);

}  // namespace fedpar
