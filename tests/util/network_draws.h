// What emulated lossy links will drop, predicted from the draws the links make (core/network.h):
// 4 clients on 2 processes (clients p and p + 2 on the process whose link is p), a TASK keyed by
// its process's link and the round, an UPDATE by its client and the round.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "core/network.h"

namespace fedpar::testing {

struct PredictedLosses {
  // Each round's missing clients; empty when the run would stop (every process dropped).
  std::vector<std::set<uint32_t>> missing;
  int tasks_lost = 0;                     // TASKs dropped
  std::array<int, 2> dropped_in{-1, -1};  // the round (0-based) each process was dropped; -1: never
};

// A run of `rounds` in which a process that misses `limit` rounds in a row (a lost TASK, or the
// lost UPDATEs of both its clients: one of them coming is a sign of life) gets no more tasks
// (drop_after_missed_rounds). With `any_absent` (SCAFFOLD, a delta downlink: state that a lost
// update leaves out of step) one lost UPDATE is a miss.
inline PredictedLosses predict_losses(uint64_t seed, double loss, int rounds, int limit,
                                      bool any_absent = false) {
  PredictedLosses out;
  std::array<int, 2> in_a_row{0, 0};
  for (int r = 0; r < rounds; ++r) {
    std::set<uint32_t> missing;
    for (uint32_t p = 0; p < 2; ++p) {
      bool missed = false;
      if (out.dropped_in[p] >= 0) {
        missing.insert({p, p + 2});
        continue;
      }
      if (message_lost(loss, seed, "down", p, uint32_t(r))) {
        missing.insert({p, p + 2});
        missed = true;
        ++out.tasks_lost;
      } else {
        int lost = 0;
        for (uint32_t c : {p, p + 2})
          if (message_lost(loss, seed, "up", c, uint32_t(r))) missing.insert(c), ++lost;
        missed = any_absent ? lost > 0 : lost == 2;
      }
      in_a_row[p] = missed ? in_a_row[p] + 1 : 0;
      if (in_a_row[p] == limit) out.dropped_in[p] = r;
    }
    out.missing.push_back(missing);
    if (out.dropped_in[0] >= 0 && out.dropped_in[1] >= 0) {
      out.missing.clear();
      return out;
    }
  }
  return out;
}

}  // namespace fedpar::testing
