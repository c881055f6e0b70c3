// ZmqPipeLink; see zmq_pipe_link.h.
#include "transport/zmq_pipe_link.h"

#include <fmt/format.h>

#include <cstring>
#include <zmq_addon.hpp>

#include "core/check.h"
#include "transport/zmq_interrupted.h"

namespace fedpar {

uint64_t pipe_tag(uint64_t step, uint32_t micro, PipeDirection dir) {
  return (step << 32) | (uint64_t(micro) << 1) | uint64_t(dir);
}

namespace {
std::string describe(uint64_t tag) {
  return fmt::format("{} of micro-batch {} of step {}", tag & 1 ? "gradients" : "activations",
                     uint32_t(tag) >> 1, (tag >> 32) + 1);
}
}  // namespace

ZmqPipeLink::ZmqPipeLink(zmq::context_t& ctx, const std::string& bind, double deadline_seconds,
                         const LinkSecurity* security)
    : in_(ctx, zmq::socket_type::pull),
      to_prev_(ctx, zmq::socket_type::push),
      to_next_(ctx, zmq::socket_type::push),
      security_(security),
      deadline_ms_(int(deadline_seconds * 1000)) {
  for (zmq::socket_t* s : {&in_, &to_prev_, &to_next_}) s->set(zmq::sockopt::linger, 0);
  to_prev_.set(zmq::sockopt::sndtimeo, deadline_ms_);
  to_next_.set(zmq::sockopt::sndtimeo, deadline_ms_);
  if (security_) security_->prepare_bind(in_);
  try {
    in_.bind(bind);
  } catch (const zmq::error_t& e) {
    throw Error(fmt::format("pipeline: cannot bind {}: {}", bind, e.what()));
  }
  endpoint_ = in_.get(zmq::sockopt::last_endpoint);
}

void ZmqPipeLink::connect(const LinkPeer& prev, const LinkPeer& next) {
  for (auto [socket, peer, has, who] : {std::tuple{&to_prev_, &prev, &has_prev_, "previous"},
                                        std::tuple{&to_next_, &next, &has_next_, "next"}}) {
    if (peer->endpoint.empty()) continue;
    if (security_) security_->prepare_connect(*socket, *peer);
    try {
      socket->connect(peer->endpoint);
    } catch (const zmq::error_t& e) {
      throw Error(fmt::format("pipeline: cannot connect to the {} stage at {}: {}", who,
                              peer->endpoint, e.what()));
    }
    *has = true;
  }
}

void ZmqPipeLink::send(PipeDirection dir, uint64_t tag, std::span<const uint8_t> payload,
                       std::span<const uint8_t> extra) {
  const bool forward = dir == PipeDirection::kForward;
  FEDPAR_CHECK(forward ? has_next_ : has_prev_)
      << "pipeline: no " << (forward ? "next" : "previous") << " stage to send to";
  uint8_t t[8];
  for (int i = 0; i < 8; ++i) t[i] = uint8_t(tag >> (8 * i));
  std::vector<zmq::message_t> parts;
  parts.emplace_back(t, sizeof t);
  parts.emplace_back(payload.data(), payload.size());
  if (!extra.empty()) parts.emplace_back(extra.data(), extra.size());
  if (!send_parts(forward ? to_next_ : to_prev_, parts))
    throw Error(fmt::format("pipeline: the {} stage took nothing within {} ms (did it die?)",
                            forward ? "next" : "previous", deadline_ms_));
  sent_ += sizeof t + payload.size() + extra.size();
}

ZmqPipeLink::Message ZmqPipeLink::receive(uint64_t tag, size_t bytes, size_t extra_bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(deadline_ms_);
  while (!held_.count(tag)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !wait_readable(in_, deadline))
      throw Error(fmt::format("pipeline: no {} from the {} stage within {} ms (did it die?)",
                              describe(tag), tag & 1 ? "next" : "previous", deadline_ms_));
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(in_, std::back_inserter(frames), zmq::recv_flags::dontwait)) continue;
    uint64_t got = 0;
    if (frames.size() < 2 || frames.size() > 3 || frames[0].size() != 8)
      throw Error(
          fmt::format("pipeline: a neighbour sent a message of {} frame(s), not a tag "
                      "and one or two payloads",
                      frames.size()));
    for (int i = 0; i < 8; ++i) got |= uint64_t(frames[0].data<uint8_t>()[i]) << (8 * i);
    Message m;
    m.payload.assign(frames[1].data<uint8_t>(), frames[1].data<uint8_t>() + frames[1].size());
    if (frames.size() == 3)
      m.extra.assign(frames[2].data<uint8_t>(), frames[2].data<uint8_t>() + frames[2].size());
    received_ += 8 + m.payload.size() + m.extra.size();
    if (!held_.emplace(got, std::move(m)).second)
      throw Error(fmt::format("pipeline: {} came twice", describe(got)));
  }
  Message m = std::move(held_.at(tag));
  held_.erase(tag);
  wait_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (m.payload.size() != bytes || m.extra.size() != extra_bytes)
    throw Error(fmt::format("pipeline: {} of {} + {} bytes, expected {} + {}", describe(tag),
                            m.payload.size(), m.extra.size(), bytes, extra_bytes));
  return m;
}

}  // namespace fedpar
