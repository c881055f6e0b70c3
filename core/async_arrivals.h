// [network] simulated for the asynchronous regime: the order in which updates reach the server on
// the simulated clock, and when. Each client holds one task at a time. A task handed to client c at
// simulated time t comes back at
//   t + its TASK down (bytes / down_bps + latency + jitter) + compute + its UPDATE up (the same)
// and the server applies updates in that order (ties: the lower client id first). The compute
// time is known only when the real update is in, so the server waits for real updates until no
// task still out could come back first: one whose update is not in yet arrives no earlier than
// t + TASK down + the uplink's latency and jitter (compute >= 0, bytes >= 0). A client's jitter is
// drawn per task, keyed by (seed, direction, client, its task count), so a run's clock does not
// depend on when the real messages happened to come.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "core/network.h"

namespace fedpar {

class AsyncArrivals {
 public:
  AsyncArrivals(const NetworkSpec& n, uint64_t seed) : n_(n), seed_(seed) {}

  // Client c's `task`-th task (0, 1, ...), of `down_bytes`, handed over at simulated time `now`.
  void dispatch(uint32_t client, uint64_t task, double now, uint64_t down_bytes);
  // Its update is in: its measured compute and its bytes.
  void computed(uint32_t client, double compute_seconds, uint64_t up_bytes);

  struct Next {
    uint32_t client = 0;
    double arrival = 0;  // simulated seconds
  };
  // The update that reaches the server next, once no task still out could come back first;
  // nullopt: wait for another real update.
  std::optional<Next> next() const;
  // The update of `client` was applied: its task is done.
  void applied(uint32_t client) { out_.erase(client); }
  bool holding(uint32_t client) const { return out_.count(client) > 0; }

 private:
  struct Task {
    uint64_t index = 0;
    double ready = 0;  // the TASK in at the client
    std::optional<double> arrival;
  };
  const NetworkSpec& n_;
  uint64_t seed_;
  std::map<uint32_t, Task> out_;  // tasks handed out, by client
};

}  // namespace fedpar
