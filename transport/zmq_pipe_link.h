// A pipeline stage's links over ZeroMQ: each stage binds one PULL socket that both neighbours
// connect to, and connects a PUSH socket to each of theirs. A message is a tag (8 bytes,
// little-endian: the step, the micro-batch and the direction), a payload and optionally a second
// payload (the first stage sends the micro-batch's labels along with its activations, so only it
// needs the data). Activations and gradients of the two neighbours interleave on the one socket:
// a message that comes before the one awaited is held until it is asked for. Receives wait at most
// the deadline, so a dead neighbour stops the stage with an Error naming it instead of a hang.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "transport/link_security.h"

namespace fedpar {

enum class PipeDirection : uint8_t { kForward = 0, kBackward = 1 };

// The tag of micro-batch `micro` of step `step` travelling `dir`.
uint64_t pipe_tag(uint64_t step, uint32_t micro, PipeDirection dir);

class ZmqPipeLink {
 public:
  // Binds the receiving socket at `bind` (tcp://host:* picks a free port; see endpoint()), with
  // `security`'s frame limit and keys (null: plaintext, no limit); `security` outlives the link.
  ZmqPipeLink(zmq::context_t& ctx, const std::string& bind, double deadline_seconds,
              const LinkSecurity* security = nullptr);
  std::string endpoint() const { return endpoint_; }
  // An endpoint "" where there is no neighbour (the first stage has no previous, the last no next).
  void connect(const LinkPeer& prev, const LinkPeer& next);

  // Forward goes to the next stage, backward to the previous one.
  void send(PipeDirection dir, uint64_t tag, std::span<const uint8_t> payload,
            std::span<const uint8_t> extra = {});

  struct Message {
    std::vector<uint8_t> payload, extra;
  };
  // The message `tag`, whose payload must be `bytes` long and its extra `extra_bytes` (Error
  // otherwise, or when nothing comes within the deadline).
  Message receive(uint64_t tag, size_t bytes, size_t extra_bytes);

  uint64_t bytes_sent() const { return sent_; }
  uint64_t bytes_received() const { return received_; }
  double wait_seconds() const { return wait_; }  // blocked in receive, since the start

 private:
  zmq::socket_t in_, to_prev_, to_next_;
  const LinkSecurity* security_;
  bool has_prev_ = false, has_next_ = false;
  std::string endpoint_;
  int deadline_ms_;
  std::map<uint64_t, Message> held_;  // came before they were asked for
  uint64_t sent_ = 0, received_ = 0;
  double wait_ = 0;
};

}  // namespace fedpar
