// One link that several transfers cross at once: the server's uplink while a round's TASKs go out,
// its downlink while the UPDATEs come in. The fluid max-min fair model of flow-level network
// simulation: at every moment the unfinished flows share the link's bandwidth equally, except that
// no flow goes faster than its own cap (the far end's access link), and what a capped flow leaves
// unused goes to the others (water filling). A flow enters at its start time; the shares are
// recomputed whenever a flow enters or finishes.
#pragma once

#include <cstdint>
#include <vector>

namespace fedpar {

struct Flow {
  double start_seconds = 0;
  uint64_t bytes = 0;
  double cap_bps = 0;  // the flow's own bottleneck, bit/s (> 0)
};

// When each flow's last byte has crossed a link of `capacity_bps` (> 0), in the flows' order.
std::vector<double> shared_link_finish(const std::vector<Flow>& flows, double capacity_bps);

}  // namespace fedpar
