// What emulated lossy links will drop, predicted from the draws the links make (core/network.h):
// 4 clients on 2 processes (clients p and p + 2 on the process whose link is p), a TASK keyed by
// its process's link and the round, an UPDATE by its client and the round.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "core/network.h"

namespace fedpar::testing {

// Each round's missing clients in a run of `rounds` (a process that misses a round's deadline gets
// no more tasks); empty when a round would lose every client (the run stops then).
// `tasks_lost` counts the TASKs dropped.
inline std::vector<std::set<uint32_t>> predicted_missing(uint64_t seed, double loss, int rounds,
                                                         int& tasks_lost) {
  std::vector<std::set<uint32_t>> out;
  std::set<uint32_t> dropped;
  tasks_lost = 0;
  for (int r = 0; r < rounds; ++r) {
    std::set<uint32_t> missing, newly;
    for (uint32_t p = 0; p < 2; ++p) {
      if (dropped.count(p)) {
        missing.insert({p, p + 2});
      } else if (message_lost(loss, seed, "down", p, uint32_t(r))) {
        missing.insert({p, p + 2});
        newly.insert(p);
        ++tasks_lost;
      } else {
        for (uint32_t c : {p, p + 2})
          if (message_lost(loss, seed, "up", c, uint32_t(r))) missing.insert(c), newly.insert(p);
      }
    }
    if (missing.size() == 4) return {};
    dropped.insert(newly.begin(), newly.end());
    out.push_back(missing);
  }
  return out;
}

}  // namespace fedpar::testing
