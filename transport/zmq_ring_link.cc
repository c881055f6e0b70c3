// ZmqRingLink; see zmq_ring_link.h.
#include "transport/zmq_ring_link.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstring>
#include <vector>
#include <zmq_addon.hpp>

#include "core/check.h"
#include "transport/zmq_interrupted.h"

namespace fedpar {

ZmqRingLink::ZmqRingLink(zmq::context_t& ctx, const std::string& bind, double deadline_seconds,
                         const LinkSecurity* security)
    : in_(ctx, zmq::socket_type::pull),
      out_(ctx, zmq::socket_type::push),
      security_(security),
      deadline_ms_(int(deadline_seconds * 1000)) {
  in_.set(zmq::sockopt::linger, 0);
  out_.set(zmq::sockopt::linger, 0);
  out_.set(zmq::sockopt::sndtimeo, deadline_ms_);  // a next worker that never takes: no hang
  if (security_) security_->prepare_bind(in_);
  try {
    in_.bind(bind);
  } catch (const zmq::error_t& e) {
    throw Error(fmt::format("ring: cannot bind {}: {}", bind, e.what()));
  }
  endpoint_ = in_.get(zmq::sockopt::last_endpoint);
}

void ZmqRingLink::reconnect_next(const LinkPeer& next, uint32_t epoch) {
  FEDPAR_CHECK(epoch > epoch_ && epoch < (1u << 16))
      << "ring epoch " << epoch << " after " << epoch_;
  if (!next_endpoint_.empty()) {
    try {
      out_.disconnect(next_endpoint_);  // what was queued for the old neighbour goes with it
    } catch (const zmq::error_t&) {
    }
  }
  epoch_ = epoch;
  connect_next(next);
}

void ZmqRingLink::connect_next(const LinkPeer& next) {
  next_endpoint_ = next.endpoint;
  if (security_) security_->prepare_connect(out_, next);
  try {
    out_.connect(next.endpoint);
  } catch (const zmq::error_t& e) {
    throw Error(
        fmt::format("ring: cannot connect to the next worker at {}: {}", next.endpoint, e.what()));
  }
}

void ZmqRingLink::set_codec(const Codec* c) {
  FEDPAR_CHECK(!c || c->id() == CodecId::kF16 || c->id() == CodecId::kBf16)
      << "the ring carries raw float32 or a 16-bit cast, not " << c->name();
  codec_ = c;
}

size_t ZmqRingLink::wire_bytes(size_t floats) const {
  return floats * (codec_ ? sizeof(uint16_t) : sizeof(float));
}

void ZmqRingLink::finish(std::span<float> chunk) {
  if (!codec_ || chunk.empty()) return;
  decoded_.resize(chunk.size());
  round_trip(*codec_, chunk, {}, encoded_, decoded_);
  std::copy(decoded_.begin(), decoded_.end(), chunk.begin());
}

void ZmqRingLink::send_next(std::span<const float> chunk, uint64_t tag) {
  tag |= epoch_ << 48;
  uint8_t t[8];
  for (int i = 0; i < 8; ++i) t[i] = uint8_t(tag >> (8 * i));
  std::array<zmq::message_t, 2> parts;
  parts[0] = zmq::message_t(t, sizeof t);
  size_t payload = chunk.size_bytes();
  if (codec_) {
    codec_->encode(chunk, {}, encoded_);
    parts[1] = zmq::message_t(encoded_.data(), encoded_.size());
    payload = encoded_.size();
  } else if (chunk.size_bytes() >= kZeroCopyBytes) {
    auto* hold = new std::shared_ptr<InFlight>(in_flight_);
    {
      std::lock_guard lock(in_flight_->mutex);
      ++in_flight_->count;
    }
    parts[1] = zmq::message_t(
        const_cast<float*>(chunk.data()), chunk.size_bytes(),
        [](void*, void* h) {  // on ZeroMQ's I/O thread, once the chunk has left
          auto* f = static_cast<std::shared_ptr<InFlight>*>(h);
          {
            std::lock_guard lock((*f)->mutex);
            --(*f)->count;
          }
          (*f)->released.notify_all();
          delete f;
        },
        hold);
  } else {
    parts[1] = zmq::message_t(chunk.data(), chunk.size_bytes());
  }
  if (!send_parts(out_, parts))
    throw Error(fmt::format("ring: the next worker took nothing within {} ms", deadline_ms_));
  sent_ += sizeof t + payload;
}

void ZmqRingLink::flush() {
  std::unique_lock lock(in_flight_->mutex);
  if (!in_flight_->released.wait_for(lock, std::chrono::milliseconds(deadline_ms_),
                                     [&] { return in_flight_->count == 0; }))
    throw Error(
        fmt::format("ring: the next worker took nothing within {} ms (did it die?)", deadline_ms_));
}

zmq::message_t ZmqRingLink::receive(uint64_t tag, size_t bytes) {
  tag |= epoch_ << 48;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms_);
  std::vector<zmq::message_t> frames;
  uint64_t got = 0;
  do {  // skips what a broken ring of an earlier epoch left queued
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !wait_readable(in_, deadline))
      throw Error(fmt::format("ring: the previous worker sent nothing within {} ms (did it die?)",
                              deadline_ms_));
    frames.clear();
    if (!zmq::recv_multipart(in_, std::back_inserter(frames), zmq::recv_flags::dontwait))
      throw Error("ring: a receive that poll announced returned nothing");
    got = 0;
    if (frames.size() == 2 && frames[0].size() == 8)
      for (int i = 0; i < 8; ++i) got |= uint64_t(frames[0].data<uint8_t>()[i]) << (8 * i);
  } while (frames.size() == 2 && frames[0].size() == 8 && (got >> 48) < epoch_);
  if (frames.size() != 2 || frames[0].size() != 8 || got != tag || frames[1].size() != bytes)
    throw Error(fmt::format(
        "ring: got {} frame(s), message {} of {} bytes; expected message {} of {} bytes",
        frames.size(), got, frames.size() == 2 ? frames[1].size() : 0, tag, bytes));
  received_ += frames[0].size() + frames[1].size();
  return std::move(frames[1]);
}

void ZmqRingLink::decode(const zmq::message_t& m, std::span<float> into) {
  const std::string why =
      codec_->decode({static_cast<const uint8_t*>(m.data()), m.size()}, {}, into);
  if (!why.empty()) throw Error("ring: the previous worker's chunk: " + why);
}

void ZmqRingLink::recv_prev(std::span<float> into, uint64_t tag) {
  const zmq::message_t m = receive(tag, wire_bytes(into.size()));
  if (codec_) return decode(m, into);
  if (!into.empty()) std::memcpy(into.data(), m.data(), into.size_bytes());
}

void ZmqRingLink::recv_prev_add(std::span<float> acc, uint64_t tag) {
  const zmq::message_t m = receive(tag, wire_bytes(acc.size()));
  if (acc.empty()) return;
  if (codec_) {
    decoded_.resize(acc.size());
    decode(m, decoded_);
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = decoded_[i] + acc[i];
    return;
  }
  // The frame may not be float-aligned: read it bytewise into registers, not through a float*.
  const auto* bytes = static_cast<const uint8_t*>(m.data());
  for (size_t i = 0; i < acc.size(); ++i) {
    float v;
    std::memcpy(&v, bytes + i * sizeof(float), sizeof v);
    acc[i] = v + acc[i];
  }
}

}  // namespace fedpar
