// The wire protocol on raw bytes: CRC32C vectors, header round trip and byte layout, and the
// rejection (never a crash) of every malformed case, plus random garbage.
#include "protocol/header.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/crc32c.h"
#include "core/rng.h"

namespace fedpar {
namespace {

using Frame = std::vector<uint8_t>;

std::variant<Header, ProtocolError> decode(const std::vector<Frame>& frames) {
  std::vector<std::span<const uint8_t>> spans(frames.begin(), frames.end());
  return decode_message(spans);
}

// A valid UPDATE with two payload frames.
std::vector<Frame> valid_message() {
  Frame meta = {1, 2, 3, 4, 5};
  Frame values(4 * 1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = uint8_t(i * 31);
  const std::vector<std::span<const uint8_t>> payload = {meta, values};
  const Header h = make_header(MessageType::kUpdate, 7, 0xABCDEF, 42, payload);
  const HeaderBytes hb = encode_header(h);
  return {Frame(hb.begin(), hb.end()), meta, values};
}

std::string reason(const std::vector<Frame>& frames) {
  auto r = decode(frames);
  if (auto* e = std::get_if<ProtocolError>(&r)) return e->reason;
  return "accepted";
}

TEST(Crc32c, StandardVectorAndContinuation) {
  const char* s = "123456789";
  EXPECT_EQ(crc32c(s, 9), 0xE3069283u);
  EXPECT_EQ(crc32c_portable(s, 9), 0xE3069283u);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
  Rng rng(1, "test");
  // Up to and past the three-lane path (3 x 4 KB blocks) and its tail, at an odd offset too.
  std::vector<uint8_t> buf(3 * 12288 + 301);
  for (auto& b : buf) b = uint8_t(rng.next_u32());
  EXPECT_EQ(crc32c(buf.data() + 1, 3 * 12288 + 7), crc32c_portable(buf.data() + 1, 3 * 12288 + 7));
  for (size_t n :
       {0, 1, 7, 8, 9, 63, 64, 65, 299, 12287, 12288, 12289, 24576 + 100, 3 * 12288 + 301}) {
    EXPECT_EQ(crc32c(buf.data(), n), crc32c_portable(buf.data(), n)) << n;
    const size_t cut = n / 3;
    EXPECT_EQ(crc32c(buf.data() + cut, n - cut, crc32c(buf.data(), cut)), crc32c(buf.data(), n));
  }
}

TEST(Protocol, RoundTripAndLittleEndianLayout) {
  const auto frames = valid_message();
  auto r = decode(frames);
  ASSERT_TRUE(std::holds_alternative<Header>(r)) << std::get<ProtocolError>(r).reason;
  const Header h = std::get<Header>(r);
  EXPECT_EQ(h.type, MessageType::kUpdate);
  EXPECT_EQ(h.client, 7u);
  EXPECT_EQ(h.run, 0xABCDEFu);
  EXPECT_EQ(h.round, 42u);
  EXPECT_EQ(h.payload_bytes, 4005u);
  EXPECT_EQ(h.payload_frames, 2);
  const Frame& b = frames[0];
  ASSERT_EQ(b.size(), kHeaderBytes);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "FDPR");
  EXPECT_EQ(b[4], 5);  // version 5, little-endian
  EXPECT_EQ(b[5], 0);
  EXPECT_EQ(b[8], 4);    // UPDATE
  EXPECT_EQ(b[24], 42);  // round
  EXPECT_STREQ(message_type_name(MessageType::kUpdate), "UPDATE");
}

TEST(Protocol, EmptyPayloadIsValid) {
  const Header h = make_header(MessageType::kStop, 0, 1, 2, {});
  const HeaderBytes hb = encode_header(h);
  EXPECT_EQ(reason({Frame(hb.begin(), hb.end())}), "accepted");
}

TEST(Protocol, EveryMalformedCaseIsRejectedWithItsReason) {
  auto with = [](auto change) {
    auto f = valid_message();
    change(f);
    return reason(f);
  };
  auto has = [](const std::string& r, const char* what) {
    return r.find(what) != std::string::npos;
  };
  EXPECT_TRUE(has(reason({}), "empty message"));
  for (size_t n = 0; n < kHeaderBytes; ++n) {  // every truncation of the header
    const std::string r = with([&](auto& f) { f[0].resize(n); });
    EXPECT_NE(r, "accepted") << "truncated to " << n;
  }
  EXPECT_TRUE(
      has(with([](auto& f) { f[0].push_back(0); }), "header length field 48 with a 49-byte frame"));
  EXPECT_TRUE(has(with([](auto& f) { f[0][0] = 'X'; }), "bad magic"));
  EXPECT_TRUE(
      has(with([](auto& f) { f[0][4] = 4; }), "protocol version 4 is not supported, expected 5"));
  EXPECT_TRUE(has(with([](auto& f) { f[0][6] = 40; }), "header length field 40"));
  EXPECT_TRUE(has(with([](auto& f) { f[0][8] = 0; }), "unknown message type 0"));
  EXPECT_TRUE(has(with([](auto& f) { f[0][8] = 10; }), "unknown message type 10"));
  EXPECT_TRUE(has(with([](auto& f) { f[0][10] = 1; }), "flags 0x0001 are not defined"));
  EXPECT_TRUE(has(with([](auto& f) { f[0][44] = 9; }), "unknown codec 9"));
  EXPECT_TRUE(
      has(with([](auto& f) { f.push_back({1}); }), "announces 2 payload frames, 3 arrived"));
  EXPECT_TRUE(has(with([](auto& f) { f.pop_back(); }), "announces 2 payload frames, 1 arrived"));
  EXPECT_TRUE(has(with([](auto& f) { f[2].pop_back(); }),
                  "announces 4005 payload bytes, the frames hold 4004"));
  EXPECT_TRUE(has(with([](auto& f) { f[2][17] ^= 1; }), "payload CRC32C"));
  EXPECT_TRUE(has(with([](auto& f) { std::swap(f[1], f[2]); }), "CRC32C"));  // frame order matters
  EXPECT_TRUE(has(with([](auto& f) { f[0][40] ^= 0x80; }), "CRC32C"));
}

TEST(Protocol, RandomGarbageNeverCrashesAndOnlyUncheckableFieldsSlipThrough) {
  Rng rng(9, "fuzz");
  const Frame original = valid_message()[0];
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<Frame> frames = valid_message();
    const int mode = int(rng.below(3));
    if (mode == 0) {  // a random header frame of random size
      frames[0].resize(rng.below(2 * kHeaderBytes));
      for (auto& b : frames[0]) b = uint8_t(rng.next_u32());
    } else {  // flip random bits anywhere in the header
      for (int k = 0; k <= mode; ++k)
        frames[0][rng.below(kHeaderBytes)] ^= uint8_t(1u << rng.below(8));
    }
    if (!std::holds_alternative<Header>(decode(frames))) continue;
    ++accepted;
    // Only the type and the codec (each to another known one) and client / run / round can
    // change unnoticed: the header cannot know them; the receiver checks them against its own
    // state (parse_message rejects a codec the run does not use: frames_test).
    for (size_t i = 0; i < kHeaderBytes; ++i) {
      const bool free_field = (i >= 8 && i < 10) || (i >= 12 && i < 32) || (i >= 44 && i < 46);
      if (!free_field) {
        ASSERT_EQ(frames[0][i], original[i]) << "byte " << i << " changed unnoticed";
      }
    }
  }
  EXPECT_GT(accepted, 0);  // the flips did reach the free fields
}

}  // namespace
}  // namespace fedpar
