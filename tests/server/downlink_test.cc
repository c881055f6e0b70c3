// The downlink: raw, a cast of the model, or the encoded change to the clients' replica, which a
// client following the messages keeps bit for bit equal to the server's x^ (no drift).
#include "server/downlink.h"

#include <gtest/gtest.h>

#include "core/rng.h"

namespace fedpar {
namespace {

struct Received {
  std::vector<std::vector<uint8_t>> frames;  // what raw vectors view
  ParsedMessage parsed;                      // owns what decoded vectors view
  TaskMsg task;
};

Received receive(const WireMessage& m, const CodecSet& codecs, size_t floats) {
  Received r{m.copy_frames(), {}, {}};
  std::vector<std::span<const uint8_t>> spans(r.frames.begin(), r.frames.end());
  auto p = parse_message(spans, {}, false, &codecs, floats);
  EXPECT_EQ(p.index(), 0u) << std::get<ProtocolError>(p).reason;
  r.parsed = std::move(std::get<ParsedMessage>(p));
  auto t = decode_task(r.parsed);
  EXPECT_EQ(t.index(), 0u);
  r.task = std::get<TaskMsg>(t);
  return r;
}

TEST(Downlink, DeltaModeKeepsTheClientsReplicaInStepBitForBit) {
  CompressionSpec spec{.downlink = "fp16", .downlink_delta = true};
  Downlink down(spec);
  ASSERT_TRUE(down.delta());
  CodecSet codecs;
  codecs.add(make_codec("fp16", {}));
  const auto fp16 = make_codec("fp16", {});
  const size_t d = 1000;
  Rng rng(5, "downlink-test");
  std::vector<float> x(d), client, expect;
  for (auto& v : x) v = float(rng.normal());
  for (uint64_t round = 0; round < 20; ++round) {
    if (round > 0)
      for (auto& v : x) v += 0.01f * float(rng.normal());  // the server's step
    const auto snapshot = std::make_shared<const std::vector<float>>(x);
    const WireMessage m =
        down.encode(TaskMsg{.kind = TaskKind::kLocalTrain}, snapshot, {0, 1, round});
    const Received r = receive(m, codecs, d);
    ASSERT_EQ(r.task.vectors.size(), 1u);
    const auto v = r.task.vectors[0];
    if (round == 0) {  // the whole model, raw
      EXPECT_FALSE(r.task.delta);
      EXPECT_EQ(r.parsed.header.codec, CodecId::kRawF32);
      client.assign(v.begin(), v.end());
      expect = x;
      continue;
    }
    EXPECT_TRUE(r.task.delta);
    EXPECT_EQ(r.parsed.header.codec, CodecId::kF16);
    EXPECT_EQ(m.frames[2].size(), 2 * d);
    for (size_t i = 0; i < d; ++i) client[i] = client[i] + v[i];
    // the server's x^ computed independently: x^ += fp16(x - x^)
    std::vector<float> change(d), decoded(d);
    for (size_t i = 0; i < d; ++i) change[i] = x[i] - expect[i];
    std::vector<uint8_t> bytes;
    round_trip(*fp16, change, {round, 0}, bytes, decoded);
    for (size_t i = 0; i < d; ++i) expect[i] = expect[i] + decoded[i];
    ASSERT_EQ(client, expect) << "round " << round;
    // what fp16 drops stays in x - x^ and does not pile up: each entry within fp16's rounding of
    // one round's change (|change| < 0.1 here: half an ulp is at most 2^-15)
    for (size_t i = 0; i < d; ++i) ASSERT_LE(std::abs(x[i] - client[i]), 0x1p-14f) << i;
  }
}

// A random codec on the downlink draws from the downlink's own stream, not client 0's (whose
// uplink draws from (round, 0) in the same round): the frame is the kDownlink encoding. (A run
// refuses QSGD as its delta downlink, which is not contractive; the stream is Downlink's.)
TEST(Downlink, ARandomCodecDrawsFromTheDownlinksOwnStream) {
  const CodecParams params{.seed = 9};
  Downlink down(CompressionSpec{.downlink = "qsgd", .downlink_delta = true, .params = params});
  CodecSet codecs;
  codecs.add(make_codec("qsgd", params));
  const size_t d = 500;
  std::vector<float> x(d, 0.0f);
  (void)down.encode(TaskMsg{.kind = TaskKind::kLocalTrain},
                    std::make_shared<const std::vector<float>>(x), {0, 0, 0});
  Rng rng(3, "downlink-stream");
  for (auto& v : x) v = float(rng.normal());
  const WireMessage m = down.encode(TaskMsg{.kind = TaskKind::kLocalTrain},
                                    std::make_shared<const std::vector<float>>(x), {0, 0, 1});
  const Received r = receive(m, codecs, d);  // decodes with the downlink's stream
  ASSERT_TRUE(r.task.delta);
  const auto qsgd = make_codec("qsgd", params);
  std::vector<uint8_t> own, client0;
  qsgd->encode(x, {1, CodecContext::kDownlink}, own);
  qsgd->encode(x, {1, 0}, client0);
  EXPECT_EQ(m.frames[2], own);
  EXPECT_NE(own, client0);
}

TEST(Downlink, CastModeSendsTheRoundedModelAndRawModeItsFloats) {
  const std::vector<float> x = {1.0f, 1.0f + 0x1p-12f, -3.5f};
  const auto snapshot = std::make_shared<const std::vector<float>>(x);
  CodecSet codecs;
  codecs.add(make_codec("bf16", {}));
  Downlink cast(CompressionSpec{.downlink = "bf16"});
  EXPECT_FALSE(cast.delta());
  const Received c = receive(cast.encode({.kind = TaskKind::kGradient}, snapshot, {}), codecs, 3);
  EXPECT_FALSE(c.task.delta);
  EXPECT_EQ(std::vector<float>(c.task.vectors[0].begin(), c.task.vectors[0].end()),
            (std::vector<float>{1.0f, 1.0f, -3.5f}));
  Downlink raw(CompressionSpec{});
  const Received r = receive(raw.encode({.kind = TaskKind::kGradient}, snapshot, {}), codecs, 3);
  EXPECT_EQ(std::vector<float>(r.task.vectors[0].begin(), r.task.vectors[0].end()), x);
}

}  // namespace
}  // namespace fedpar
