// Vector frames go to ZeroMQ without a copy: over inproc the receiver sees the sender's very
// buffer, and the buffer is released once ZeroMQ and the receiver are done with it. Without an
// owner the frames are copied, so the caller may reuse its memory at once.
#include <gtest/gtest.h>

#include "core/messages.h"
#include "server/zmq_frames.h"

namespace fedpar {
namespace {

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
  const size_t bytes = send_message(p.a, encode_message(MessageType::kUpdate, 1, 2, 3, {{"k", 1}}, vecs, data));
  data.reset();  // now only ZeroMQ holds the buffer
  auto parts = p.receive();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].data(), static_cast<const void*>(raw));  // the same memory: no copy
  EXPECT_EQ(bytes, parts[0].size() + parts[1].size() + parts[2].size());
  auto parsed = parse_message(frame_spans(parts), std::vector<size_t>{100000}, true);
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
  auto parsed = parse_message(frame_spans(parts), std::vector<size_t>{1000}, true);
  ASSERT_TRUE(std::holds_alternative<ParsedMessage>(parsed));
  EXPECT_EQ(std::get<ParsedMessage>(parsed).vectors[0][0], 2.0f);
}

}  // namespace
}  // namespace fedpar
