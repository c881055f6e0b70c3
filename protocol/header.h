// The wire protocol shared by server and clients (transport-free, so it is tested on bytes).
// A message is a multipart ZeroMQ message: frame 0 is this fixed little-endian header, frames
// 1.. the payload (raw bytes, float32 values sent without copying). Every length is checked
// against the real frame sizes, and the payload against its CRC32C, before anything is used.
//
//   offset  size  field
//        0     4  magic "FDPR" (0x52504446 little-endian)
//        4     2  version (kProtocolVersion)
//        6     2  header length in bytes (kHeaderBytes)
//        8     2  message type (MessageType)
//       10     2  flags (reserved, 0)
//       12     4  client id
//       16     8  run id
//       24     8  round
//       32     8  payload length: the sum of the sizes of frames 1..
//       40     4  CRC32C of the payload frames, in order
//       44     2  codec (CodecId, core/codec/codec.h)
//       46     2  number of payload frames
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/codec/codec.h"

namespace fedpar {

constexpr uint32_t kProtocolMagic = 0x52504446u;  // bytes 'F' 'D' 'P' 'R'
// 2: typed message bodies (messages.h); 3: READY; 4: PING; 5: STOP says how the run ended
constexpr uint16_t kProtocolVersion = 5;
constexpr size_t kHeaderBytes = 48;
constexpr uint16_t kMaxPayloadFrames = 64;

enum class MessageType : uint16_t {
  kHello = 1,    // client -> server: I host `slots` virtual clients
  kWelcome = 2,  // server -> client: your virtual client ids and manifest slices
  kTask = 3,     // server -> client: the model and what to compute this round
  kUpdate = 4,   // client -> server: gradient or model delta, n_k, loss, timings
  kStop = 5,     // server -> client: the run is over, and how it ended
  kError = 6,    // either way: what was wrong with the last message
  kRing = 7,     // allreduce topology: client -> server its ring endpoint; server -> client its
                 // rank, the ring size and the next rank's endpoint
  kReady = 8,    // client -> server: data loaded and model built, ready for round 1's TASK (a
                 // ring's or model-parallel worker's RING says so instead)
  kPing = 9,     // server -> client: nothing to do; sent to learn whether the process has a
                 // connection (a client whose connection closed mid-round), and ignored
};
const char* message_type_name(MessageType t);  // "UPDATE", or "unknown"

struct Header {
  MessageType type = MessageType::kError;
  uint16_t flags = 0;
  uint32_t client = 0;
  uint64_t run = 0;
  uint64_t round = 0;
  uint64_t payload_bytes = 0;
  uint32_t payload_crc = 0;
  CodecId codec = CodecId::kRawF32;
  uint16_t payload_frames = 0;
};

using HeaderBytes = std::array<uint8_t, kHeaderBytes>;

// Builds the header for `payload` (computes its length, frame count and CRC).
Header make_header(MessageType type, uint32_t client, uint64_t run, uint64_t round,
                   std::span<const std::span<const uint8_t>> payload,
                   CodecId codec = CodecId::kRawF32);
HeaderBytes encode_header(const Header& h);

// Why a message was rejected: one line for the log and for the ERROR reply.
struct ProtocolError {
  std::string reason;
};

// The type, client and round of a frame 0, read with no check but its length and magic (no
// version, CRC or payload): for code that orders messages before the engine validates them (the
// emulated links key their draws by these). nullopt: not a fedpar header.
struct HeaderPeek {
  MessageType type;
  uint32_t client;
  uint64_t round;
};
std::optional<HeaderPeek> peek_header(std::span<const uint8_t> frame0);

// Parses frame 0 and checks it against the payload frames that came with it: magic, version
// (an unknown one is named next to the expected one), header length, type, codec, frame count,
// payload length against the real frame sizes, and the CRC. Never throws, never reads past a frame.
std::variant<Header, ProtocolError> decode_message(
    std::span<const std::span<const uint8_t>> frames);

}  // namespace fedpar
