// The asynchronous regime's simulated clock; see async_arrivals.h.
#include "core/async_arrivals.h"

#include "core/check.h"

namespace fedpar {

double AsyncArrivals::up_seconds(uint32_t client, uint64_t task, uint64_t bytes) const {
  const LinkProfile& p = n_.of(client);
  return transfer_seconds(bytes, p.up_bps) + p.latency_s +
         jitter_seconds(n_.jitter, p.jitter_s, seed_, "up", client, uint32_t(task));
}

void AsyncArrivals::dispatch(uint32_t client, uint64_t task, double now, uint64_t down_bytes) {
  const LinkProfile& p = n_.of(client);
  out_[client] = {
      .index = task,
      .ready = now + transfer_seconds(down_bytes, p.down_bps) + p.latency_s +
               jitter_seconds(n_.jitter, p.jitter_s, seed_, "down", client, uint32_t(task))};
}

void AsyncArrivals::computed(uint32_t client, double compute_seconds, uint64_t up_bytes) {
  auto it = out_.find(client);
  FEDPAR_CHECK(it != out_.end()) << "client " << client << " holds no simulated task";
  Task& t = it->second;
  t.arrival = t.ready + compute_seconds + up_seconds(client, t.index, up_bytes);
}

std::optional<AsyncArrivals::Next> AsyncArrivals::next() const {
  std::optional<Next> first;  // the earliest update in (clients in id order: ties to the lower)
  for (const auto& [c, t] : out_)
    if (t.arrival && (!first || *t.arrival < first->arrival)) first = Next{c, *t.arrival};
  if (!first) return std::nullopt;
  for (const auto& [c, t] : out_) {
    if (t.arrival) continue;
    const double earliest = t.ready + up_seconds(c, t.index, 0);
    if (earliest < first->arrival || (earliest == first->arrival && c < first->client))
      return std::nullopt;  // it could still come first
  }
  return first;
}

}  // namespace fedpar
