// Message bodies: round trip, and every way a peer's message can be wrong is a reason, not a crash.
#include "protocol/frames.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/codec/codec.h"

namespace fedpar {
namespace {

using Frames = std::vector<std::vector<uint8_t>>;

std::variant<ParsedMessage, ProtocolError> parse(const Frames& f, std::vector<size_t> expect = {},
                                                 bool finite = false) {
  std::vector<std::span<const uint8_t>> spans(f.begin(), f.end());
  return parse_message(spans, expect, finite);
}

std::string reason(const std::variant<ParsedMessage, ProtocolError>& r) {
  if (auto* e = std::get_if<ProtocolError>(&r)) return e->reason;
  return "accepted";
}

Frames update_with(const std::vector<float>& values, nlohmann::json body = {{"num_samples", 600}}) {
  const std::vector<std::span<const float>> vecs = {values};
  return encode_message(MessageType::kUpdate, 3, 77, 5, body, vecs).copy_frames();
}

TEST(Messages, UpdateRoundTrip) {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f};
  const Frames f = update_with(values, {{"num_samples", 600}, {"loss_sum", 12.5}});
  auto r = parse(f, {3}, true);
  ASSERT_EQ(reason(r), "accepted");
  const ParsedMessage& m = std::get<ParsedMessage>(r);
  EXPECT_EQ(m.header.type, MessageType::kUpdate);
  EXPECT_EQ(m.header.client, 3u);
  EXPECT_EQ(m.header.round, 5u);
  ASSERT_EQ(m.vectors.size(), 1u);
  EXPECT_EQ(std::vector<float>(m.vectors[0].begin(), m.vectors[0].end()), values);
  EXPECT_EQ(std::get<uint64_t>(field<uint64_t>(m.body, "num_samples")), 600u);
  EXPECT_DOUBLE_EQ(std::get<double>(field<double>(m.body, "loss_sum")), 12.5);
}

TEST(Messages, WrongSizesAndNonFiniteValuesAreRejected) {
  const std::vector<float> values = {1, 2, 3};
  EXPECT_NE(reason(parse(update_with(values), {4})).find("vector 0 has 3 values, the model has 4"),
            std::string::npos);
  EXPECT_NE(reason(parse(update_with(values), {3, 3})).find("carries 1 vectors, expected 2"),
            std::string::npos);
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const std::vector<float> v = {1, bad, 3};
    EXPECT_NE(reason(parse(update_with(v), {3}, true)).find("non-finite value"), std::string::npos);
    EXPECT_EQ(reason(parse(update_with(v), {3}, false)), "accepted");  // e.g. a model sent down
  }
}

// fp16-encoded vectors: decoded with the run's codecs, checked like raw ones after decoding.
Frames fp16_update(const std::vector<float>& values, uint64_t round = 5) {
  const auto c = make_codec("fp16", {});
  const std::vector<std::span<const float>> vecs = {values};
  const EncodedVectors enc = encode_vectors(*c, vecs, {round, 3});
  return encode_message(MessageType::kUpdate, 3, 77, round, {{"num_samples", 1}}, {}, {}, enc)
      .copy_frames();
}

TEST(Messages, EncodedVectorsAreDecodedWithTheRunsCodecAndCheckedAfterDecoding) {
  CodecSet codecs;
  codecs.add(make_codec("fp16", {}));
  std::vector<std::span<const uint8_t>> spans;
  auto parse_with = [&](const Frames& f, const CodecSet* set, std::vector<size_t> expect,
                        bool finite) {
    spans.assign(f.begin(), f.end());
    return parse_message(spans, expect, finite, set);
  };
  const Frames f = fp16_update({0.5f, -1.25f, 3.0f});
  EXPECT_EQ(f[2].size(), 6u);  // two bytes per value on the wire
  auto r = parse_with(f, &codecs, {3}, true);
  ASSERT_EQ(reason(r), "accepted");
  const ParsedMessage& m = std::get<ParsedMessage>(r);
  EXPECT_EQ(m.header.codec, CodecId::kF16);
  EXPECT_EQ(std::vector<float>(m.vectors[0].begin(), m.vectors[0].end()),
            (std::vector<float>{0.5f, -1.25f, 3.0f}));
  EXPECT_EQ(reason(parse_with(f, nullptr, {3}, true)),
            "UPDATE is encoded with fp16, which this run does not use");
  EXPECT_EQ(reason(parse_with(f, &codecs, {}, true)),
            "UPDATE carries fp16-encoded vectors where raw ones are expected");
  EXPECT_EQ(reason(parse_with(f, &codecs, {4}, true)),
            "UPDATE vector 0: fp16 holds 6 bytes, expected 8 for 4 values");
  // 1e5 is finite in float32 but Inf in fp16: rejected after decoding, with its index
  EXPECT_EQ(reason(parse_with(fp16_update({1.0f, 1e5f, 0.0f}), &codecs, {3}, true)),
            "UPDATE vector 0 decodes to a non-finite value (inf) at index 1");
  // a raw message is always accepted, codecs or not
  EXPECT_EQ(reason(parse_with(update_with({1.0f, 2.0f, 3.0f}), &codecs, {3}, true)), "accepted");
}

TEST(Messages, MalformedBodiesAndFramesAreRejected) {
  auto rebuild = [](Frames f) {  // re-seal the header so only the body is wrong
    std::vector<std::span<const uint8_t>> payload(f.begin() + 1, f.end());
    const HeaderBytes hb = encode_header(make_header(MessageType::kUpdate, 3, 77, 5, payload));
    f[0].assign(hb.begin(), hb.end());
    return f;
  };
  Frames f = update_with({1, 2});
  f[1] = {'[', '1', ']'};
  EXPECT_NE(reason(parse(rebuild(f))).find("body is not a JSON object"), std::string::npos);
  f[1] = {'{', '"', 'a'};
  EXPECT_NE(reason(parse(rebuild(f))).find("body is not a JSON object"), std::string::npos);
  f = update_with({1, 2});
  f[2].pop_back();
  EXPECT_NE(reason(parse(rebuild(f))).find("not a whole number of float32"), std::string::npos);
  f = update_with({1, 2});
  f.resize(1);
  EXPECT_NE(reason(parse(rebuild(f))).find("without a body frame"), std::string::npos);
  f = update_with({1, 2});
  f[2][0] ^= 1;  // header not re-sealed: the CRC catches it
  EXPECT_NE(reason(parse(f)).find("CRC32C"), std::string::npos);
}

// A valid header over a huge JSON body: refused by its size, before a parser sees it (a 20 MB
// HELLO body once cost the server 337 MiB), while a WELCOME may carry the shards' indices.
TEST(Messages, OversizedBodiesAreRefusedBeforeParsing) {
  const std::string huge = "{\"slots\": 1, \"pad\": \"" + std::string(1 << 20, 'x') + "\"}";
  for (MessageType t : {MessageType::kHello, MessageType::kUpdate, MessageType::kError}) {
    const nlohmann::json body = nlohmann::json::parse(huge);
    const WireMessage m = encode_message(t, 0, 0, 0, body);
    const auto spans = m.spans();
    const auto got = parse_message(spans);
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(got)) << message_type_name(t);
    EXPECT_NE(std::get<ProtocolError>(got).reason.find("is over its limit of 65536"),
              std::string::npos)
        << std::get<ProtocolError>(got).reason;
  }
  const WireMessage w = encode_message(MessageType::kWelcome, 0, 0, 0, nlohmann::json::parse(huge));
  const auto spans = w.spans();
  EXPECT_TRUE(std::holds_alternative<ParsedMessage>(parse_message(spans)));
}

TEST(Messages, FieldsAreTypeChecked) {
  const nlohmann::json body = {{"n", -1}, {"ids", {1, 2, -3}}, {"name", "x"}, {"big", 1ull << 40}};
  EXPECT_TRUE(std::holds_alternative<ProtocolError>(field<uint64_t>(body, "n")));
  EXPECT_TRUE(std::holds_alternative<ProtocolError>(field<uint64_t>(body, "missing")));
  EXPECT_TRUE(std::holds_alternative<ProtocolError>(field<std::vector<uint32_t>>(body, "ids")));
  EXPECT_TRUE(std::holds_alternative<ProtocolError>(field<uint32_t>(body, "big")));
  EXPECT_TRUE(std::holds_alternative<ProtocolError>(field<double>(body, "name")));
  EXPECT_EQ(std::get<std::string>(field<std::string>(body, "name")), "x");
  EXPECT_EQ(std::get<int64_t>(field<int64_t>(body, "n")), -1);
  EXPECT_NE(std::get<ProtocolError>(field<uint64_t>(body, "missing"))
                .reason.find("missing field 'missing'"),
            std::string::npos);
}

}  // namespace
}  // namespace fedpar
