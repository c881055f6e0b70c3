// Wire protocol header encode / decode and validation; see protocol.h.
#include "protocol/header.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "core/crc32c.h"

namespace fedpar {
namespace {

template <typename T>
void put(uint8_t* at, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) at[i] = uint8_t(uint64_t(v) >> (8 * i));
}

template <typename T>
T get(const uint8_t* at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t(at[i]) << (8 * i);
  return T(v);
}

bool known_type(uint16_t t) { return t >= 1 && t <= 9; }

}  // namespace

const char* message_type_name(MessageType t) {
  switch (t) {
    case MessageType::kHello:
      return "HELLO";
    case MessageType::kWelcome:
      return "WELCOME";
    case MessageType::kTask:
      return "TASK";
    case MessageType::kUpdate:
      return "UPDATE";
    case MessageType::kStop:
      return "STOP";
    case MessageType::kError:
      return "ERROR";
    case MessageType::kRing:
      return "RING";
    case MessageType::kReady:
      return "READY";
    case MessageType::kPing:
      return "PING";
  }
  return "unknown";
}

Header make_header(MessageType type, uint32_t client, uint64_t run, uint64_t round,
                   std::span<const std::span<const uint8_t>> payload, CodecId codec) {
  Header h{.type = type,
           .client = client,
           .run = run,
           .round = round,
           .codec = codec,
           .payload_frames = uint16_t(payload.size())};
  for (const auto& f : payload) {
    h.payload_bytes += f.size();
    h.payload_crc = crc32c(f.data(), f.size(), h.payload_crc);
  }
  return h;
}

HeaderBytes encode_header(const Header& h) {
  HeaderBytes b{};
  put<uint32_t>(&b[0], kProtocolMagic);
  put<uint16_t>(&b[4], kProtocolVersion);
  put<uint16_t>(&b[6], uint16_t(kHeaderBytes));
  put<uint16_t>(&b[8], uint16_t(h.type));
  put<uint16_t>(&b[10], h.flags);
  put<uint32_t>(&b[12], h.client);
  put<uint64_t>(&b[16], h.run);
  put<uint64_t>(&b[24], h.round);
  put<uint64_t>(&b[32], h.payload_bytes);
  put<uint32_t>(&b[40], h.payload_crc);
  put<uint16_t>(&b[44], uint16_t(h.codec));
  put<uint16_t>(&b[46], h.payload_frames);
  return b;
}

std::optional<HeaderPeek> peek_header(std::span<const uint8_t> frame0) {
  if (frame0.size() < kHeaderBytes || get<uint32_t>(frame0.data()) != kProtocolMagic)
    return std::nullopt;
  return HeaderPeek{MessageType(get<uint16_t>(frame0.data() + 8)),
                    get<uint32_t>(frame0.data() + 12), get<uint64_t>(frame0.data() + 24)};
}

std::variant<Header, ProtocolError> decode_message(
    std::span<const std::span<const uint8_t>> frames) {
  auto fail = [](std::string why) { return ProtocolError{std::move(why)}; };
  if (frames.empty()) return fail("empty message (no header frame)");
  const auto head = frames[0];
  // Magic and version first, so a peer speaking something else gets told what we expected.
  if (head.size() < 8)
    return fail(fmt::format("header frame has {} bytes, expected {}", head.size(), kHeaderBytes));
  const uint8_t* b = head.data();
  if (get<uint32_t>(b) != kProtocolMagic)
    return fail(fmt::format("bad magic 0x{:08x}, expected 0x{:08x} (\"FDPR\"): not a fedpar peer",
                            get<uint32_t>(b), kProtocolMagic));
  if (const auto v = get<uint16_t>(b + 4); v != kProtocolVersion)
    return fail(
        fmt::format("protocol version {} is not supported, expected {}", v, kProtocolVersion));
  if (const auto len = get<uint16_t>(b + 6); len != kHeaderBytes || head.size() != kHeaderBytes)
    return fail(fmt::format("header length field {} with a {}-byte frame, expected {}", len,
                            head.size(), kHeaderBytes));
  Header h;
  const uint16_t type = get<uint16_t>(b + 8);
  if (!known_type(type))
    return fail(
        fmt::format("unknown message type {}, expected 1..9 (HELLO, WELCOME, TASK, UPDATE, "
                    "STOP, ERROR, RING, READY, PING)",
                    type));
  h.type = MessageType(type);
  h.flags = get<uint16_t>(b + 10);
  if (h.flags != 0) return fail(fmt::format("flags 0x{:04x} are not defined, expected 0", h.flags));
  h.client = get<uint32_t>(b + 12);
  h.run = get<uint64_t>(b + 16);
  h.round = get<uint64_t>(b + 24);
  h.payload_bytes = get<uint64_t>(b + 32);
  h.payload_crc = get<uint32_t>(b + 40);
  const uint16_t codec = get<uint16_t>(b + 44);
  if (codec >= kCodecIdCount)
    return fail(fmt::format("unknown codec {}, expected 0..{} ({})", codec, kCodecIdCount - 1,
                            fmt::join(codec_names(), ", ")));
  h.codec = CodecId(codec);
  h.payload_frames = get<uint16_t>(b + 46);
  if (h.payload_frames != frames.size() - 1 || h.payload_frames > kMaxPayloadFrames)
    return fail(fmt::format("header announces {} payload frames, {} arrived (at most {})",
                            h.payload_frames, frames.size() - 1, kMaxPayloadFrames));
  uint64_t actual = 0;
  uint32_t crc = 0;
  for (size_t i = 1; i < frames.size(); ++i) {
    actual += frames[i].size();
    crc = crc32c(frames[i].data(), frames[i].size(), crc);
  }
  if (actual != h.payload_bytes)
    return fail(fmt::format("header announces {} payload bytes, the frames hold {}",
                            h.payload_bytes, actual));
  if (crc != h.payload_crc)
    return fail(fmt::format("payload CRC32C 0x{:08x} does not match the header's 0x{:08x}", crc,
                            h.payload_crc));
  return h;
}

}  // namespace fedpar
