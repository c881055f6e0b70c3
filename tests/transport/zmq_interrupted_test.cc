// A signal handled on a thread blocked in ZeroMQ makes the call fail with EINTR. Before, that
// escaped as `fedpar: internal error: Interrupted system call` now and then after a Ctrl-C; now a
// stop signal ends the call as Interrupted (the command exits 128 + the signal) and any other
// signal retries it.
#include "transport/zmq_interrupted.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

namespace fedpar {
namespace {

using namespace std::chrono_literals;

// Sends `sig` to `target` every 20 ms, `times` times or until `done`: one of them lands while
// the target waits in ZeroMQ, whenever the target gets there.
std::thread keep_signalling(pthread_t target, int sig, int times, const std::atomic<bool>& done) {
  return std::thread([=, &done] {
    for (int i = 0; i < times && !done; ++i) {
      std::this_thread::sleep_for(20ms);
      pthread_kill(target, sig);
    }
  });
}

void on_usr1(int) {}

struct Usr1Handler {  // a handler that does nothing, as SIGCHLD's or a profiler's
  struct sigaction old {};
  Usr1Handler() {
    struct sigaction a {};
    a.sa_handler = on_usr1;
    sigaction(SIGUSR1, &a, &old);
  }
  ~Usr1Handler() { sigaction(SIGUSR1, &old, nullptr); }
};

TEST(ZmqInterrupted, AnotherSignalRetriesTheWait) {
  Usr1Handler handler;
  zmq::context_t ctx;
  zmq::socket_t in(ctx, zmq::socket_type::pull);
  in.bind("inproc://quiet");
  zmq::pollitem_t item{in.handle(), 0, ZMQ_POLLIN, 0};
  // the signal does interrupt a bare poll (else this test would prove nothing)...
  std::atomic<bool> done = false;
  std::thread t = keep_signalling(pthread_self(), SIGUSR1, 100, done);
  int interrupted = 0;
  try {
    zmq::poll(&item, 1, 5000ms);
  } catch (const zmq::error_t& e) {
    interrupted = e.num();
  }
  done = true;
  t.join();
  EXPECT_EQ(interrupted, EINTR);
  // ... and wait_readable goes on waiting through them, to its deadline and not past it (a
  // retry that restarted the whole wait would end 300 ms after the last signal, at 800 ms or more)
  done = false;
  t = keep_signalling(pthread_self(), SIGUSR1, 25, done);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(wait_readable(in, t0 + 300ms));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 299ms);  // whole milliseconds: the last slice may end within 1 ms of it
  EXPECT_LT(waited, 700ms);
  done = true;
  t.join();
}

// A DEALER with no peer blocks in send until a signal interrupts it: a stop signal (SIGINT with
// fedpar's handler) ends it as Interrupted. In a child process: the stop flag stays set.
TEST(ZmqInterruptedDeathTest, AStopSignalEndsABlockedSendAsInterrupted) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::signal(SIGINT, SIG_DFL);  // a test started with SIGINT ignored would keep it ignored
        install_stop_handlers();
        zmq::context_t ctx;
        zmq::socket_t out(ctx, zmq::socket_type::dealer);
        out.set(zmq::sockopt::sndtimeo, 10'000);  // a send no signal ends fails, not hangs
        std::vector<zmq::message_t> parts;
        parts.emplace_back(std::string("tag"));
        parts.emplace_back(std::string("payload"));
        std::atomic<bool> done = false;
        std::thread t = keep_signalling(pthread_self(), SIGINT, 500, done);
        int code = 1;
        try {
          send_parts(out, parts);
        } catch (const Interrupted& e) {
          code = e.signal() == SIGINT ? 0 : 2;
        }
        done = true;
        t.join();
        std::exit(code);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace fedpar
