// The ring all-reduce's links over ZeroMQ: each worker binds a PULL socket that its previous
// neighbour connects to, and connects a PUSH socket to its next neighbour's. A message is two
// frames: the tag (8 bytes, little-endian) and the chunk's floats, large chunks sent without a
// copy. Receives wait at most the deadline, so a dead neighbour stops the ring with an Error
// instead of a hang.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <zmq.hpp>

#include "core/codec/codec.h"
#include "transport/link_security.h"
#include "transport/ring_allreduce.h"

namespace fedpar {

class ZmqRingLink final : public RingLink {
 public:
  // Binds the receiving socket at `bind` (tcp://host:* picks a free port; see endpoint()), with
  // `security`'s frame limit and keys (null: plaintext, no limit); `security` outlives the link.
  ZmqRingLink(zmq::context_t& ctx, const std::string& bind, double deadline_seconds,
              const LinkSecurity* security = nullptr);
  std::string endpoint() const { return endpoint_; }  // where the previous worker connects
  void connect_next(const LinkPeer& next);
  // A re-formed ring (allreduce.elastic): sends go to `next` instead, and messages of earlier
  // epochs still queued from the broken ring are dropped unread (`epoch` only grows).
  void reconnect_next(const LinkPeer& next, uint32_t epoch);
  // Chunks travel encoded with `c` (a summable codec: fp16, bf16); each hop decodes, adds in
  // float and encodes again, and finish() rounds the finished sums. Null: raw float32.
  void set_codec(const Codec* c);

  void send_next(std::span<const float> chunk, uint64_t tag) override;
  void recv_prev(std::span<float> into, uint64_t tag) override;
  void recv_prev_add(std::span<float> acc, uint64_t tag) override;  // adds from the received frame
  void finish(std::span<float> chunk) override;
  void flush() override;
  uint64_t bytes_sent() const { return sent_; }
  uint64_t bytes_received() const { return received_; }

 private:
  // The next message's payload frame, checked against tag and size (Error otherwise).
  zmq::message_t receive(uint64_t tag, size_t bytes);
  size_t wire_bytes(size_t floats) const;  // a chunk of `floats` values on the wire
  void decode(const zmq::message_t& m, std::span<float> into);

  // Chunks of at least kZeroCopyBytes go to ZeroMQ as views of the caller's memory; `in_flight_`
  // counts those ZeroMQ still holds (its I/O thread releases them, possibly after this link is
  // gone: hence shared). flush() sleeps on the condition rather than spinning: with more workers
  // than cores, a spinning worker would take the core its neighbour needs to finish.
  struct InFlight {
    std::mutex mutex;
    std::condition_variable released;
    int64_t count = 0;
  };
  static constexpr size_t kZeroCopyBytes = 64 * 1024;
  std::shared_ptr<InFlight> in_flight_ = std::make_shared<InFlight>();
  zmq::socket_t in_, out_;
  const LinkSecurity* security_;
  std::string endpoint_, next_endpoint_;
  uint64_t epoch_ = 0;  // in a tag's top 16 bits
  int deadline_ms_;
  uint64_t sent_ = 0, received_ = 0;
  const Codec* codec_ = nullptr;
  std::vector<uint8_t> encoded_;  // the chunk being sent, when encoded (ZeroMQ copies it)
  std::vector<float> decoded_;
};

}  // namespace fedpar
