// The fluid max-min fair link (shared_link.h): an event loop over flows entering and finishing.
#include "core/shared_link.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"

namespace fedpar {
namespace {

// Each active flow's rate: equal shares of `capacity`, a flow capped below its share keeps only
// its cap and the rest is shared again (smallest caps first).
std::vector<double> water_fill(const std::vector<Flow>& flows, const std::vector<size_t>& active,
                               double capacity) {
  std::vector<size_t> by_cap(active.size());
  std::iota(by_cap.begin(), by_cap.end(), size_t{0});
  std::ranges::sort(by_cap, {}, [&](size_t k) { return flows[active[k]].cap_bps; });
  std::vector<double> rate(active.size());
  double left = capacity;
  for (size_t i = 0; i < by_cap.size(); ++i) {
    const double share = left / double(by_cap.size() - i);
    const size_t k = by_cap[i];
    rate[k] = std::min(flows[active[k]].cap_bps, share);
    left -= rate[k];
  }
  return rate;
}

}  // namespace

std::vector<double> shared_link_finish(const std::vector<Flow>& flows, double capacity_bps) {
  FEDPAR_CHECK(capacity_bps > 0 && std::isfinite(capacity_bps))
      << "a link of " << capacity_bps << " bit/s";
  for (const Flow& f : flows)
    FEDPAR_CHECK(f.cap_bps > 0 && std::isfinite(f.start_seconds) && f.start_seconds >= 0)
        << "a flow capped at " << f.cap_bps << " bit/s starting at " << f.start_seconds << " s";
  const size_t n = flows.size();
  std::vector<double> finish(n, 0), bits(n);
  std::vector<size_t> by_start(n);
  std::iota(by_start.begin(), by_start.end(), size_t{0});
  std::ranges::stable_sort(by_start, {}, [&](size_t i) { return flows[i].start_seconds; });
  for (size_t i = 0; i < n; ++i) bits[i] = double(flows[i].bytes) * 8.0;

  constexpr double kNever = std::numeric_limits<double>::infinity();
  std::vector<size_t> active;
  size_t next = 0;  // into by_start
  double now = 0;
  while (next < n || !active.empty()) {
    if (active.empty()) now = std::max(now, flows[by_start[next]].start_seconds);
    while (next < n && flows[by_start[next]].start_seconds <= now) {
      const size_t i = by_start[next++];
      if (bits[i] > 0)
        active.push_back(i);
      else
        finish[i] = flows[i].start_seconds;  // nothing to send
    }
    if (active.empty()) continue;
    const std::vector<double> rate = water_fill(flows, active, capacity_bps);
    double step = kNever;  // to the first flow's end
    for (size_t k = 0; k < active.size(); ++k) step = std::min(step, bits[active[k]] / rate[k]);
    const double entry = next < n ? flows[by_start[next]].start_seconds - now : kNever;
    if (entry < step) {  // a flow enters first: the shares change
      for (size_t k = 0; k < active.size(); ++k) bits[active[k]] -= rate[k] * entry;
      now += entry;
      continue;
    }
    now += step;
    std::vector<size_t> still;
    for (size_t k = 0; k < active.size(); ++k) {
      const size_t i = active[k];
      // a flow whose own end is within rounding of the step's has ended with it
      if (bits[i] / rate[k] <= step * (1 + 1e-12)) {
        finish[i] = now;
      } else {
        bits[i] -= rate[k] * step;
        still.push_back(i);
      }
    }
    active = std::move(still);
  }
  return finish;
}

}  // namespace fedpar
