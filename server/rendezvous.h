// The workers' rendezvous of the allreduce and pipeline topologies: every process sends RING with
// the endpoint it listens on, and hears back where its neighbours listen.
#pragma once

#include <string>
#include <vector>

#include "server/engine.h"

namespace fedpar {

struct WorkerEndpoints {
  std::string link;     // the topology's own link (ring, pipeline neighbours)
  std::string replica;  // a [grid]'s ring across data replicas ("" without)
  std::string key;      // the worker's link key ([security]; "" in plaintext)
};

// Every worker's link key (empty in plaintext): who may connect to a worker's links.
std::vector<std::string> link_keys(const std::vector<WorkerEndpoints>& at);

// Every process's endpoints, in HELLO order (engine.order); a worker listening on every interface
// ("tcp://0.0.0.0:*") is named by the address its RING came from. Messages from strangers, or
// without an endpoint (or, with `replicas`, without the replica ring's; with `keys`, without a
// link key) are refused. Throws Error when not all came within `seconds`.
std::vector<WorkerEndpoints> collect_endpoints(Engine& engine, double seconds, bool keys,
                                               bool replicas = false);

}  // namespace fedpar
