// LinkSecurity; see link_security.h.
#include "transport/link_security.h"

#include <fmt/format.h>
#include <unistd.h>

#include "core/check.h"

namespace fedpar {

LinkSecurity::LinkSecurity(zmq::context_t& ctx, int64_t max_frame_bytes, bool quiet)
    : max_frame_(max_frame_bytes),
      keys_(generate_curve_key_pair()),
      guard_(std::make_unique<CurveGuard>(ctx, nullptr, std::nullopt, quiet,
                                          fmt::format("worker {} links", ::getpid()))) {}

void LinkSecurity::prepare_bind(zmq::socket_t& sock) const {
  sock.set(zmq::sockopt::maxmsgsize, max_frame_);
  if (keys_) make_curve_server(sock, CurveServer{*keys_, {}});
}

void LinkSecurity::prepare_connect(zmq::socket_t& sock, const LinkPeer& peer) const {
  if (!keys_) return;
  if (peer.key.empty())
    throw Error(fmt::format(
        "the server named the worker at {} without its link key: in a run with [security] "
        "every worker must be a fedpar of this version",
        peer.endpoint));
  try {
    make_curve_client(sock, CurveClient{*keys_, peer.key});
  } catch (const zmq::error_t& e) {
    throw Error(fmt::format("the link key the server gave for {} is not a CURVE key: {}",
                            peer.endpoint, e.what()));
  }
}

void LinkSecurity::allow(std::set<std::string> keys) {
  if (guard_) guard_->allow(std::move(keys));
}

}  // namespace fedpar
