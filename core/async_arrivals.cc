// The asynchronous regime's simulated clock; see async_arrivals.h.
#include "core/async_arrivals.h"

#include "core/check.h"

namespace fedpar {

void AsyncArrivals::dispatch(uint32_t client, uint64_t task, double now, uint64_t down_bytes) {
  out_[client] = {.index = task,
                  .ready = now + message_seconds(n_, seed_, task, client, "down", down_bytes)};
}

void AsyncArrivals::computed(uint32_t client, double compute_seconds, uint64_t up_bytes) {
  auto it = out_.find(client);
  FEDPAR_CHECK(it != out_.end()) << "client " << client << " holds no simulated task";
  Task& t = it->second;
  t.arrival =
      t.ready + compute_seconds + message_seconds(n_, seed_, t.index, client, "up", up_bytes);
}

std::optional<AsyncArrivals::Next> AsyncArrivals::next() const {
  std::optional<Next> first;  // the earliest update in (clients in id order: ties to the lower)
  for (const auto& [c, t] : out_)
    if (t.arrival && (!first || *t.arrival < first->arrival)) first = Next{c, *t.arrival};
  if (!first) return std::nullopt;
  for (const auto& [c, t] : out_) {
    if (t.arrival) continue;
    const double earliest = t.ready + message_seconds(n_, seed_, t.index, c, "up", 0);
    if (earliest < first->arrival || (earliest == first->arrival && c < first->client))
      return std::nullopt;  // it could still come first
  }
  return first;
}

}  // namespace fedpar
