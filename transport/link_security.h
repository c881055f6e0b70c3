// What a worker's links to other workers (the ring all-reduce's, a pipeline's, a tensor group's)
// check before a byte of a peer's message is read: the frame size, and in a run with [security]
// that the peer holds one of the run's worker keys. Each worker makes a CURVE key pair of its own
// for the run; the server, which every worker reaches over its own authenticated channel, hands
// each worker its neighbours' public keys with their endpoints (RING), so a worker lets in only
// the run's workers and knows whom it connects to.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <zmq.hpp>

#include "transport/curve.h"

namespace fedpar {

// Where a neighbour listens, and its link key ("" in a plaintext run).
struct LinkPeer {
  std::string endpoint, key;
};

class LinkSecurity {
 public:
  // Plaintext links that refuse frames above `max_frame_bytes` (-1: no limit).
  explicit LinkSecurity(int64_t max_frame_bytes = -1) : max_frame_(max_frame_bytes) {}
  // CURVE links: a fresh key pair, and a ZAP handler on `ctx` that lets no one in until allow().
  LinkSecurity(zmq::context_t& ctx, int64_t max_frame_bytes, bool quiet);
  LinkSecurity(const LinkSecurity&) = delete;  // links hold a pointer to it
  LinkSecurity& operator=(const LinkSecurity&) = delete;

  bool curve() const { return keys_.has_value(); }
  std::string public_key() const { return keys_ ? keys_->public_key : ""; }  // sent in RING
  // Before a receiving socket binds: the frame limit, and CURVE as the server side.
  void prepare_bind(zmq::socket_t& sock) const;
  // Before a sending socket connects to `peer`: CURVE as a client that expects `peer.key`.
  // Error when a CURVE run's peer comes without a key.
  void prepare_connect(zmq::socket_t& sock, const LinkPeer& peer) const;
  // The workers' keys that may connect (a CURVE run's; ignored in plaintext).
  void allow(std::set<std::string> keys);
  uint64_t refused() const { return guard_ ? guard_->refused() : 0; }  // keys not allowed so far

 private:
  int64_t max_frame_;
  std::optional<CurveKeyPair> keys_;
  std::unique_ptr<CurveGuard> guard_;
};

}  // namespace fedpar
