// ZeroMQ calls that a signal interrupts (EINTR). A blocking send or poll returns EINTR when any
// signal is handled on the thread waiting in it; cppzmq throws that as zmq::error_t, which reached
// `fedpar: internal error: Interrupted system call` after a Ctrl-C. A stop signal ends the run
// as at every other wait (Interrupted: the partial results folder is handled, the exit code is
// 128 + the signal); another signal retries the call.
#pragma once

#include <cerrno>
#include <iterator>
#include <zmq.hpp>

#include "core/stop_signal.h"

namespace fedpar {

template <class Call>
auto retry_interrupted(Call&& call) {
  while (true) {
    try {
      return call();
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      throw_if_stopped();
    }
  }
}

// zmq::send_multipart with each part retried on its own: a part ZeroMQ refused with EINTR was not
// taken, so the retry neither loses nor repeats a frame of the message. False: EAGAIN on the first
// part (dontwait, or a send timeout), nothing sent.
template <class Parts>  // a vector or array of zmq::message_t
bool send_parts(zmq::socket_t& sock, Parts& parts, zmq::send_flags flags = zmq::send_flags::none) {
  for (size_t i = 0; i < std::size(parts); ++i) {
    const zmq::send_flags more =
        i + 1 < std::size(parts) ? zmq::send_flags::sndmore : zmq::send_flags::none;
    if (!retry_interrupted([&] { return sock.send(parts[i], flags | more); })) return false;
  }
  return true;
}

}  // namespace fedpar
