// collect_endpoints; see rendezvous.h.
#include "server/rendezvous.h"

#include <fmt/format.h>

#include <map>

#include "core/check.h"
#include "transport/curve.h"

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

std::vector<std::string> link_keys(const std::vector<WorkerEndpoints>& at) {
  std::vector<std::string> keys;
  for (const auto& w : at)
    if (!w.key.empty()) keys.push_back(w.key);
  return keys;
}

std::vector<WorkerEndpoints> collect_endpoints(Engine& engine, double seconds, bool keys,
                                               bool replicas) {
  std::map<std::string, WorkerEndpoints> endpoints;
  const auto deadline = deadline_after(seconds);
  while (endpoints.size() < engine.order.size()) {
    auto in = engine.receive(deadline);
    if (!in)
      throw RunFailed(
          fmt::format("only {} of {} workers sent their endpoint within {} s "
                      "(start_wait_seconds)",
                      endpoints.size(), engine.order.size(), seconds));
    engine.throw_if_failed_to_start(*in);
    const auto ring = decode_ring_endpoint(in->parsed);
    const auto* m = std::get_if<RingEndpointMsg>(&ring);
    std::string refusal;
    WorkerEndpoints at;
    if (!m)  // a stranger never gets here: engine.receive() turned it away
      refusal = "expected RING with the worker's endpoint";
    else if (keys && !is_curve_key(m->key))
      refusal = "RING without the worker's link key, 40 characters of Z85 (a run with [security])";
    else if (replicas && m->replica_endpoint.empty())
      refusal = "RING without the replica ring's endpoint ([grid] data > 1)";
    else if ((at.link = reachable_endpoint(m->endpoint, in->msg)).empty() ||
             (replicas && (at.replica = reachable_endpoint(m->replica_endpoint, in->msg)).empty()))
      refusal = "an endpoint on every interface needs a tcp connection to the server";
    if (!refusal.empty()) {
      engine.reject(in->msg, refusal);
      continue;
    }
    at.key = m->key;
    endpoints[in->msg.peer] = at;
  }
  std::vector<WorkerEndpoints> out;
  for (const auto& id : engine.order) out.push_back(endpoints.at(id));
  return out;
}

}  // namespace fedpar
