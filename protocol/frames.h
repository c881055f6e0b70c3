// Message bodies on top of the wire header (protocol/header.h): frame 1 is a small JSON object with
// the message's fields, frames 2.. raw little-endian float32 vectors (parameters, gradients,
// deltas), sent and received without conversion. Decoding checks every field's presence and type,
// every vector's length against what the receiver expects, and that floats are finite; a failure is
// a one-line reason for the log and the ERROR reply, never an exception escaping to the server.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "protocol/header.h"

namespace fedpar {

// Vectors as a codec encoded them, sent in place of raw float32 ones: one frame per vector.
struct EncodedVectors {
  CodecId codec = CodecId::kRawF32;  // kRawF32: nothing encoded, the raw vectors go
  std::vector<std::vector<uint8_t>> frames;
};

// Encodes each of `vectors` with `c`, in the context the header will carry (round, client): the
// receiver decodes with the same.
EncodedVectors encode_vectors(const Codec& c, std::span<const std::span<const float>> vectors,
                              const CodecContext& ctx);

// An outgoing message. `frames` holds the small frames (header, JSON body); the float vectors
// are views of the caller's memory, not copies: the sender hands them to ZeroMQ without copying
// when `owner` keeps that memory alive until ZeroMQ is done with it (else it copies them once).
struct WireMessage {
  std::vector<std::vector<uint8_t>> frames;     // header, body[, encoded vectors]
  std::vector<std::span<const float>> vectors;  // frames 2..
  std::shared_ptr<const void> owner;            // holds what `vectors` view, or null

  // Every frame in wire order, and its copy (for tests that corrupt frames).
  std::vector<std::span<const uint8_t>> spans() const;
  size_t bytes() const;  // all frames together, as they go on the wire
  std::vector<std::vector<uint8_t>> copy_frames() const;
};

WireMessage encode_message(MessageType type, uint32_t client, uint64_t run, uint64_t round,
                           const nlohmann::json& body,
                           std::span<const std::span<const float>> vectors = {},
                           std::shared_ptr<const void> owner = {}, EncodedVectors encoded = {});

// A received message whose header, body and vector frames passed the checks.
struct ParsedMessage {
  Header header;
  nlohmann::json body;                           // always an object
  std::vector<std::span<const float>> vectors;   // views into the frames, or into `copies`
  std::vector<std::unique_ptr<float[]>> copies;  // decoded vectors, and unaligned raw frames
  std::span<float> copy(size_t n);               // a new copy of n floats, uninitialised
};

// The index of the first NaN or Inf in `v` (v.size() when none).
size_t first_non_finite(std::span<const float> v);

// The largest JSON body a message of `type` may carry; a larger one is refused unparsed.
size_t max_body_bytes(MessageType type);

// `expected_floats[i]` is the length vector i must have (the receiver knows the model size);
// an empty list accepts any number of vectors of any length, a mismatch in count or length is
// rejected. `require_finite` rejects NaN and Inf (updates from clients), after decoding.
// Encoded vectors are decoded with `codecs` (the header names the codec; one the receiver does
// not use is rejected) to expected_floats[i] values, or to `encoded_floats` when the list is
// empty (0: the receiver expects no encoded vectors).
std::variant<ParsedMessage, ProtocolError> parse_message(
    std::span<const std::span<const uint8_t>> frames, std::span<const size_t> expected_floats = {},
    bool require_finite = false, const CodecSet* codecs = nullptr, size_t encoded_floats = 0);

// Typed field access for bodies: returns the value or a ProtocolError naming the field.
template <typename T>
std::variant<T, ProtocolError> field(const nlohmann::json& body, const char* name);

}  // namespace fedpar
