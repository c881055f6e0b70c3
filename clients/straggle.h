// Heterogeneous workers by config ([stragglers]): a straggling client sleeps after computing so
// that its compute takes `slowdown` times as long, plus a fixed delay, in every regime and
// topology alike.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "core/run_spec.h"

namespace fedpar {

// Returns the compute time the client reports: its own plus the sleep.
inline double straggle(const RunSpec& s, uint32_t client, double compute_seconds) {
  const double extra = (s.slowdown_of(client) - 1.0) * compute_seconds + s.delay_of(client);
  if (extra > 0) std::this_thread::sleep_for(std::chrono::duration<double>(extra));
  return compute_seconds + extra;
}

}  // namespace fedpar
