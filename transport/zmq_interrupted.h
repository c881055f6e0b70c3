// ZeroMQ calls that a signal interrupts (EINTR). A blocking send or poll returns EINTR when any
// signal is handled on the thread waiting in it; cppzmq throws that as zmq::error_t, which reached
// `fedpar: internal error: Interrupted system call` after a Ctrl-C. A stop signal ends the run
// as at every other wait (Interrupted: the partial results folder is handled, the exit code is
// 128 + the signal); another signal retries the call (a send's timeout then starts again; a
// wait keeps its deadline).
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iterator>
#include <zmq.hpp>

#include "core/check.h"
#include "core/stop_signal.h"

namespace fedpar {

// zmq::send_multipart with each part retried on its own: a part ZeroMQ refused with EINTR was not
// taken, so the retry neither loses nor repeats a frame of the message. Only the first part can
// wait (libzmq admits a message whole), so a stop signal ends the send there and never leaves half
// a message queued. False: EAGAIN on the first part (dontwait, or a send timeout), nothing sent.
template <class Parts>  // a vector or array of zmq::message_t
bool send_parts(zmq::socket_t& sock, Parts& parts, zmq::send_flags flags = zmq::send_flags::none) {
  for (size_t i = 0; i < std::size(parts); ++i) {
    const zmq::send_flags more =
        i + 1 < std::size(parts) ? zmq::send_flags::sndmore : zmq::send_flags::none;
    while (true) {
      try {
        if (sock.send(parts[i], flags | more)) break;
        FEDPAR_CHECK(i == 0) << "ZeroMQ refused part " << i << " of a message it had begun";
        return false;
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
        if (i == 0) throw_if_stopped();
      }
    }
  }
  return true;
}

// Waits for `sock` to be readable until `deadline`, in slices of at most 100 ms: a stop signal may
// be handled on another thread (OpenMP's), which leaves this thread's poll uninterrupted, and a
// retried slice recomputes what is left. A deadline already past still looks once.
inline bool wait_readable(zmq::socket_t& sock, std::chrono::steady_clock::time_point deadline) {
  using std::chrono::milliseconds;
  while (true) {
    throw_if_stopped();
    const auto left = std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(
                                                    deadline - std::chrono::steady_clock::now()));
    zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, std::min(left, milliseconds(100))) > 0) return true;
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
    if (left.count() == 0) return false;
  }
}

}  // namespace fedpar
