// Helpers shared by the server and client processes for multipart ZeroMQ messages.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/messages.h"

namespace fedpar {

// Read-only views of received frames, for parse_message.
inline std::vector<std::span<const uint8_t>> frame_spans(const std::vector<zmq::message_t>& frames) {
  std::vector<std::span<const uint8_t>> s;
  for (const auto& f : frames) s.emplace_back(static_cast<const uint8_t*>(f.data()), f.size());
  return s;
}

// Sends `m`, preceded by a routing identity when one is given (ROUTER side). Returns the bytes of
// the message frames (the identity is ZeroMQ's, not ours).
inline size_t send_message(zmq::socket_t& sock, const WireMessage& m, const std::string* identity = nullptr) {
  std::vector<zmq::const_buffer> bufs;
  if (identity) bufs.push_back(zmq::buffer(*identity));
  size_t bytes = 0;
  for (const auto& f : m.frames) {
    bufs.push_back(zmq::buffer(f));
    bytes += f.size();
  }
  zmq::send_multipart(sock, bufs);
  return bytes;
}

}  // namespace fedpar
