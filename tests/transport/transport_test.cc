// Vector frames go to ZeroMQ without a copy: over inproc the receiver sees the sender's very
// buffer, and the buffer is released once ZeroMQ and the receiver are done with it. Without an
// owner the frames are copied, so the caller may reuse its memory at once.
#include "transport/transport.h"

#include <gtest/gtest.h>

#include <thread>
#include <zmq_addon.hpp>

#include "protocol/frames.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

std::vector<std::span<const uint8_t>> spans(const std::vector<zmq::message_t>& parts) {
  Received r;
  for (const auto& f : parts)
    r.frames.emplace_back(f.data(), f.size());  // copies, for the views' sake
  static std::vector<Received> keep;
  keep.push_back(std::move(r));
  return keep.back().spans();
}

struct Pair {
  zmq::context_t ctx;
  zmq::socket_t a{ctx, zmq::socket_type::pair}, b{ctx, zmq::socket_type::pair};
  Pair() {
    b.bind("inproc://frames");
    a.connect("inproc://frames");
  }
  std::vector<zmq::message_t> receive() {
    std::vector<zmq::message_t> parts;
    EXPECT_TRUE(zmq::recv_multipart(b, std::back_inserter(parts)));
    return parts;
  }
};

TEST(ZmqFrames, OwnedVectorsTravelWithoutCopyAndAreReleased) {
  Pair p;
  auto data = std::make_shared<const std::vector<float>>(100000, 1.5f);
  const float* raw = data->data();
  const std::weak_ptr<const void> weak = data;
  const std::vector<std::span<const float>> vecs = {*data};
  const size_t bytes =
      *send_message(p.a, encode_message(MessageType::kUpdate, 1, 2, 3, {{"k", 1}}, vecs, data));
  data.reset();  // now only ZeroMQ holds the buffer
  auto parts = p.receive();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].data(), static_cast<const void*>(raw));  // the same memory: no copy
  EXPECT_EQ(bytes, parts[0].size() + parts[1].size() + parts[2].size());
  auto parsed = parse_message(spans(parts), std::vector<size_t>{100000}, true);
  ASSERT_TRUE(std::holds_alternative<ParsedMessage>(parsed));
  EXPECT_EQ(std::get<ParsedMessage>(parsed).vectors[0][99999], 1.5f);
  EXPECT_FALSE(weak.expired());
  parts.clear();
  EXPECT_TRUE(weak.expired());  // released with the last message
}

TEST(ZmqFrames, UnownedVectorsAreCopied) {
  Pair p;
  std::vector<float> data(1000, 2.0f);
  const std::vector<std::span<const float>> vecs = {data};
  send_message(p.a, encode_message(MessageType::kUpdate, 1, 2, 3, {}, vecs));
  std::fill(data.begin(), data.end(), -1.0f);  // the caller may reuse its memory at once
  auto parts = p.receive();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_NE(parts[2].data(), static_cast<const void*>(data.data()));
  auto parsed = parse_message(spans(parts), std::vector<size_t>{1000}, true);
  ASSERT_TRUE(std::holds_alternative<ParsedMessage>(parsed));
  EXPECT_EQ(std::get<ParsedMessage>(parsed).vectors[0][0], 2.0f);
}

// The server's transport and a client's channel over inproc: the server learns the peer's identity
// from its first message and answers it by that name; byte counts are the frames' sizes; a
// receive with nothing to read returns at its deadline.
TEST(Transport, ChannelAndTransportTalkOverInproc) {
  zmq::context_t ctx;
  const auto server = bind_zmq_transport("inproc://transport-test", &ctx);
  EXPECT_EQ(server->endpoint(), "inproc://transport-test");
  const auto client = connect_zmq_channel(server->endpoint(), &ctx);
  const std::vector<float> v = {1, 2, 3};
  const std::vector<std::span<const float>> vecs = {v};
  const size_t sent =
      client->send(encode_message(MessageType::kHello, 0, 0, 0, {{"slots", 1}}, vecs));
  auto got = server->receive(deadline_after(5));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->bytes(), sent);
  EXPECT_FALSE(got->peer.empty());
  EXPECT_EQ(got->peer_address(), "");  // inproc has no address
  server->send(got->peer, encode_message(MessageType::kStop, 0, 0, 0, {}));
  auto back = client->receive(deadline_after(5));
  ASSERT_TRUE(back.has_value());
  auto parsed = parse_message(back->spans());
  ASSERT_TRUE(std::holds_alternative<ParsedMessage>(parsed));
  EXPECT_EQ(std::get<ParsedMessage>(parsed).header.type, MessageType::kStop);
  const auto t0 = Clock::now();
  EXPECT_FALSE(server->receive(deadline_after(0.2)).has_value());
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(150));
}

// A frame over the transport's limit disconnects its sender before it is buffered (four 1 GiB
// frames once took the server to 4.2 GiB); a peer within the limit is heard as before.
TEST(Transport, AFrameOverTheLimitDisconnectsItsSenderAndOthersAreHeard) {
  const auto server = bind_zmq_transport("tcp://127.0.0.1:*", nullptr, 64 << 10);
  const auto big = connect_zmq_channel(server->endpoint());
  const auto fair = connect_zmq_channel(server->endpoint());
  const std::vector<float> huge(1 << 20, 1.0f), small(1000, 1.0f);  // 4 MiB, 4 KB
  const std::vector<std::span<const float>> too_big = {huge}, within = {small};
  big->send(encode_message(MessageType::kUpdate, 0, 0, 0, {}, too_big));
  fair->send(encode_message(MessageType::kUpdate, 0, 0, 0, {}, within));
  auto got = server->receive(deadline_after(10));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->frames.back().size(), small.size() * sizeof(float));
  EXPECT_FALSE(server->receive(deadline_after(0.5)).has_value());  // the 4 MiB frame never came
}

// The same on a client's side (fedpar client --max-frame-mib): a server's frame over the
// channel's limit never reaches the client.
TEST(Transport, AClientChannelDropsAServerFrameOverItsLimit) {
  const auto server = bind_zmq_transport("tcp://127.0.0.1:*");
  const auto client = connect_zmq_channel(server->endpoint(), nullptr, 64 << 10);
  client->send(encode_message(MessageType::kHello, 0, 0, 0, {{"slots", 1}}));
  const auto hello = server->receive(deadline_after(10));
  ASSERT_TRUE(hello.has_value());
  const std::vector<float> huge(1 << 20, 1.0f);
  const std::vector<std::span<const float>> too_big = {huge};
  server->send(hello->peer, encode_message(MessageType::kTask, 0, 0, 0, {}, too_big));
  EXPECT_FALSE(client->receive(deadline_after(1.0)).has_value());
}

// A peer that is gone (its process died: its connection closed) cannot be sent to: the send
// throws PeerUnreachable instead of the message vanishing, so the server need not wait out a
// deadline for the answer to a task that never left. A peer still connected is sent to.
TEST(Transport, ASendToAPeerThatIsGoneThrowsPeerUnreachable) {
  const auto server = bind_zmq_transport("tcp://127.0.0.1:*");
  auto gone = connect_zmq_channel(server->endpoint());
  const auto stays = connect_zmq_channel(server->endpoint());
  std::vector<std::string> ids;
  for (Channel* c : {gone.get(), stays.get()}) {
    c->send(encode_message(MessageType::kHello, 0, 0, 0, {{"slots", 1}}));
    const auto hello = server->receive(deadline_after(10));
    ASSERT_TRUE(hello.has_value());
    ids.push_back(hello->peer);
  }
  const WireMessage stop = encode_message(MessageType::kStop, 0, 0, 0, {});
  EXPECT_THROW(server->send("a peer that never came", stop), PeerUnreachable);
  EXPECT_NO_THROW(server->send(ids[0], stop));
  ASSERT_TRUE(gone->receive(deadline_after(10)).has_value());
  gone.reset();  // its socket closes, as a killed process's does
  bool unreachable = false;
  for (const auto until = deadline_after(10); !unreachable && Clock::now() < until;) {
    try {
      server->send(ids[0], stop);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const PeerUnreachable&) {
      unreachable = true;
    }
  }
  EXPECT_TRUE(unreachable) << "sends to a closed peer still succeed after 10 s";
  EXPECT_NO_THROW(server->send(ids[1], stop));
  EXPECT_TRUE(stays->receive(deadline_after(10)).has_value());
}

// connected() follows the socket of a peer's last message: true while it is open, false once it
// closes (a killed process's); a peer never heard from counts as connected. Over tcp and ipc;
// inproc cannot tell.
TEST(Transport, APeerIsConnectedUntilTheSocketOfItsLastMessageCloses) {
  const testing::TempDir tmp;
  for (const std::string& endpoint :
       {std::string("tcp://127.0.0.1:*"), "ipc://" + (tmp / "s").string()}) {
    SCOPED_TRACE(endpoint);
    const auto server = bind_zmq_transport(endpoint);
    auto gone = connect_zmq_channel(server->endpoint());
    const auto stays = connect_zmq_channel(server->endpoint());
    const WireMessage hello = encode_message(MessageType::kHello, 0, 0, 0, {{"slots", 1}});
    std::vector<std::string> ids;
    for (Channel* c : {gone.get(), stays.get()}) {
      c->send(hello);
      const auto r = server->receive(deadline_after(10));
      ASSERT_TRUE(r.has_value());
      ids.push_back(r->peer);
    }
    EXPECT_TRUE(server->connected(ids[0]));
    EXPECT_TRUE(server->connected("a peer never heard from"));
    gone.reset();  // its socket closes, as a killed process's does
    bool closed = false;
    for (const auto until = deadline_after(10); !closed && Clock::now() < until;) {
      closed = !server->connected(ids[0]);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(closed) << "a closed peer still counts as connected after 10 s";
    EXPECT_TRUE(server->connected(ids[1]));
    server->forget(ids[0]);  // nothing is remembered of it: as a peer never heard from
    EXPECT_TRUE(server->connected(ids[0]));
  }
  zmq::context_t ctx;
  const auto server = bind_zmq_transport("inproc://connected-test", &ctx);
  auto peer = connect_zmq_channel(server->endpoint(), &ctx);
  peer->send(encode_message(MessageType::kHello, 0, 0, 0, {{"slots", 1}}));
  const auto r = server->receive(deadline_after(10));
  ASSERT_TRUE(r.has_value());
  peer.reset();
  EXPECT_TRUE(server->connected(r->peer));  // inproc has no socket to ask
}

TEST(Transport, BindErrorsNameTheEndpoint) {
  zmq::context_t ctx;
  const auto a = bind_zmq_transport("inproc://taken", &ctx);
  try {
    bind_zmq_transport("inproc://taken", &ctx);
    FAIL() << "a second bind succeeded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cannot bind inproc://taken"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("another process listens there"), std::string::npos)
        << e.what();
  }
  // a host name is not looked up by bind (ZeroMQ's "No such device"): the form it takes is said
  for (const char* bad : {"tcp://localhost:0", "0.0.0.0:5572"}) try {
      bind_zmq_transport(bad, &ctx);
      ADD_FAILURE() << bad << " bound";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("bind takes tcp://ADDRESS:PORT"), std::string::npos)
          << e.what();
    }
}

}  // namespace
}  // namespace fedpar
