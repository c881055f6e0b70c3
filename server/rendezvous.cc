// collect_endpoints; see rendezvous.h.
#include "server/rendezvous.h"

#include <fmt/format.h>

#include <map>

#include "core/check.h"

namespace fedpar {
namespace {

// A worker listening on every interface (bind = "tcp://0.0.0.0:*") is reached at the address its
// RING came from; "" when that address is unknown.
std::string reachable_endpoint(const std::string& endpoint, const Received& from) {
  const std::string any = "tcp://0.0.0.0:";
  if (!endpoint.starts_with(any)) return endpoint;
  std::string host = from.peer_address();
  if (host.empty()) return "";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6
  return "tcp://" + host + ":" + endpoint.substr(any.size());
}

}  // namespace

std::vector<WorkerEndpoints> collect_endpoints(Engine& engine, double seconds) {
  std::map<std::string, WorkerEndpoints> endpoints;
  const auto deadline = deadline_after(seconds);
  while (endpoints.size() < engine.order.size()) {
    auto in = engine.receive(deadline);
    if (!in)
      throw Error(fmt::format("only {} of {} workers sent their endpoint within {} s",
                              endpoints.size(), engine.order.size(), seconds));
    auto ring = decode_ring_endpoint(in->parsed);
    WorkerEndpoints at;
    if (const auto* m = std::get_if<RingEndpointMsg>(&ring)) {
      at.link = reachable_endpoint(m->endpoint, in->msg);
      if (!m->replica_endpoint.empty())
        at.replica = reachable_endpoint(m->replica_endpoint, in->msg);
    }
    if (engine.process_index(in->msg.peer) < 0 || at.link.empty()) {
      engine.reject(in->msg, engine.process_index(in->msg.peer) < 0 ? "not a worker of this run"
                             : ring.index() != 0
                                 ? "expected RING with the worker's endpoint"
                                 : "an endpoint on every interface needs a tcp connection to the "
                                   "server");
      continue;
    }
    endpoints[in->msg.peer] = at;
  }
  std::vector<WorkerEndpoints> out;
  for (const auto& id : engine.order) out.push_back(endpoints.at(id));
  return out;
}

}  // namespace fedpar
