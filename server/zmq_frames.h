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

// Sends `m`, preceded by a routing identity when one is given (ROUTER side). Vector frames go to
// ZeroMQ without a copy when `m.owner` holds their memory (ZeroMQ releases it once sent). Returns
// the bytes of the message frames (the identity is ZeroMQ's, not ours).
inline size_t send_message(zmq::socket_t& sock, const WireMessage& m, const std::string* identity = nullptr) {
  std::vector<zmq::message_t> parts;
  if (identity) parts.emplace_back(identity->data(), identity->size());
  size_t bytes = 0;
  for (const auto& f : m.frames) {
    parts.emplace_back(f.data(), f.size());
    bytes += f.size();
  }
  for (const auto& v : m.vectors) {
    bytes += v.size_bytes();
    if (!m.owner || v.empty()) {
      parts.emplace_back(v.data(), v.size_bytes());
      continue;
    }
    auto* hold = new std::shared_ptr<const void>(m.owner);  // released by ZeroMQ's free function
    parts.emplace_back(const_cast<float*>(v.data()), v.size_bytes(),
                       [](void*, void* h) { delete static_cast<std::shared_ptr<const void>*>(h); }, hold);
  }
  zmq::send_multipart(sock, parts);
  return bytes;
}

}  // namespace fedpar
