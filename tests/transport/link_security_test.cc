// The links between workers check peers before a byte is read: with CURVE a worker lets in only
// the keys the server named (a plaintext sender and one with a key of its own never get a chunk
// through, and ZAP counts the refusal), and a frame larger than the link's limit is dropped with
// its sender's connection while frames within it still pass.
#include "transport/link_security.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/check.h"
#include "transport/zmq_ring_link.h"

namespace fedpar {
namespace {

// True when nothing (of any tag) arrives within the receiving link's deadline.
bool nothing_more(ZmqRingLink& in) {
  std::vector<float> v(4);
  try {
    in.recv_prev(v, 0);
    return false;
  } catch (const Error& e) {
    return std::string(e.what()).find("sent nothing") != std::string::npos;
  }
}

TEST(LinkSecurity, ACurveLinkLetsInOnlyTheKeysTheServerNamed) {
  zmq::context_t ctx_a, ctx_b, ctx_c, ctx_d;  // one per worker process, as in a run
  LinkSecurity sec_a(ctx_a, 1 << 20, true), sec_b(ctx_b, 1 << 20, true),
      sec_c(ctx_c, 1 << 20, true);
  ZmqRingLink a(ctx_a, "tcp://127.0.0.1:*", 1.0, &sec_a);
  ZmqRingLink b(ctx_b, "tcp://127.0.0.1:*", 1.0, &sec_b);
  ZmqRingLink stranger(ctx_c, "tcp://127.0.0.1:*", 1.0, &sec_c);  // a key a's list lacks
  ZmqRingLink plaintext(ctx_d, "tcp://127.0.0.1:*", 1.0);
  EXPECT_EQ(sec_a.public_key().size(), 40u);
  EXPECT_NE(sec_a.public_key(), sec_b.public_key());

  // Everyone connects before a knows whom to let in (as a neighbour may in a run): their
  // handshakes wait for the allow-list instead of failing for good.
  const std::vector<float> chunk = {1.5f, -2.0f, 3.25f, 4.0f};
  stranger.connect_next({a.endpoint(), sec_a.public_key()});
  plaintext.connect_next({a.endpoint()});
  stranger.send_next(chunk, 9);
  plaintext.send_next(chunk, 9);
  b.connect_next({a.endpoint(), sec_a.public_key()});
  b.send_next(chunk, 7);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  sec_a.allow({sec_b.public_key()});
  std::vector<float> got(4);
  a.recv_prev(got, 7);
  EXPECT_EQ(got, chunk);
  EXPECT_TRUE(nothing_more(a));  // neither intruder's chunk 9 came
  EXPECT_GE(sec_a.refused(), 1u);

  // A CURVE worker cannot connect to a neighbour the server named without a key.
  EXPECT_THROW(b.connect_next({a.endpoint(), ""}), Error);
}

TEST(LinkSecurity, AFrameAboveTheLimitIsDroppedAndSmallerOnesStillPass) {
  zmq::context_t ctx;
  const LinkSecurity limit(64 * sizeof(float));
  ZmqRingLink in(ctx, "tcp://127.0.0.1:*", 1.0, &limit), out(ctx, "tcp://127.0.0.1:*", 1.0);
  out.connect_next({in.endpoint()});
  out.send_next(std::vector<float>(65, 1.0f), 1);
  EXPECT_TRUE(nothing_more(in));
  const std::vector<float> fits(64, 2.0f);
  out.send_next(fits, 2);  // the sender reconnects; a frame within the limit goes through
  std::vector<float> got(64);
  ASSERT_NO_THROW(in.recv_prev(got, 2));
  EXPECT_EQ(got, fits);
}

}  // namespace
}  // namespace fedpar
