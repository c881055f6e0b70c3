// Message bodies; see messages.h.
#include "protocol/frames.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/check.h"

namespace fedpar {

// Blocks are scanned without an early exit, which vectorizes: a float is not finite exactly when
// its exponent bits are all ones.
size_t first_non_finite(std::span<const float> v) {
  constexpr size_t kBlock = 4096;
  for (size_t b = 0; b < v.size(); b += kBlock) {
    const size_t e = std::min(v.size(), b + kBlock);
    uint32_t bad = 0;
    for (size_t j = b; j < e; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &v[j], sizeof bits);
      bad |= uint32_t((bits & 0x7F800000u) == 0x7F800000u);
    }
    if (bad)
      for (size_t j = b; j < e; ++j)
        if (!std::isfinite(v[j])) return j;
  }
  return v.size();
}

std::vector<std::span<const uint8_t>> WireMessage::spans() const {
  std::vector<std::span<const uint8_t>> out(frames.begin(), frames.end());
  for (const auto& v : vectors)
    out.emplace_back(reinterpret_cast<const uint8_t*>(v.data()), v.size_bytes());
  return out;
}

size_t WireMessage::bytes() const {
  size_t n = 0;
  for (const auto& f : frames) n += f.size();
  for (const auto& v : vectors) n += v.size_bytes();
  return n;
}

std::span<float> ParsedMessage::copy(size_t n) {
  // for overwrite: a decoded vector is written whole, zeroing it first would be a wasted pass
  return {copies.emplace_back(std::make_unique_for_overwrite<float[]>(n)).get(), n};
}

std::vector<std::vector<uint8_t>> WireMessage::copy_frames() const {
  std::vector<std::vector<uint8_t>> out;
  for (const auto& s : spans()) out.emplace_back(s.begin(), s.end());
  return out;
}

EncodedVectors encode_vectors(const Codec& c, std::span<const std::span<const float>> vectors,
                              const CodecContext& ctx) {
  EncodedVectors e{c.id(), {}};
  for (const auto& v : vectors) c.encode(v, ctx, e.frames.emplace_back());
  return e;
}

WireMessage encode_message(MessageType type, uint32_t client, uint64_t run, uint64_t round,
                           const nlohmann::json& body,
                           std::span<const std::span<const float>> vectors,
                           std::shared_ptr<const void> owner, EncodedVectors encoded) {
  WireMessage m;
  const std::string text = body.is_null() ? std::string("{}") : body.dump();  // {} reads as null
  m.frames.resize(2);
  m.frames[1].assign(text.begin(), text.end());
  if (encoded.codec != CodecId::kRawF32) {
    FEDPAR_CHECK(vectors.empty()) << "a message carries raw or encoded vectors, not both";
    m.frames.insert(m.frames.end(), std::make_move_iterator(encoded.frames.begin()),
                    std::make_move_iterator(encoded.frames.end()));
  }
  m.vectors.assign(vectors.begin(), vectors.end());
  m.owner = std::move(owner);
  auto all = m.spans();
  std::vector<std::span<const uint8_t>> payload(all.begin() + 1,
                                                all.end());  // CRC'd: body + vectors
  const HeaderBytes hb =
      encode_header(make_header(type, client, run, round, payload, encoded.codec));
  m.frames[0].assign(hb.begin(), hb.end());
  return m;
}

size_t max_body_bytes(MessageType type) {
  switch (type) {
    case MessageType::kWelcome:  // the resolved config and every hosted client's sample indices
      return size_t(256) << 20;
    case MessageType::kTask:  // the participants' ids
      return size_t(16) << 20;
    default:  // a handful of numbers and strings
      return size_t(64) << 10;
  }
}

std::variant<ParsedMessage, ProtocolError> parse_message(
    std::span<const std::span<const uint8_t>> frames, std::span<const size_t> expected_floats,
    bool require_finite, const CodecSet* codecs, size_t encoded_floats) {
  auto head = decode_message(frames);
  if (auto* e = std::get_if<ProtocolError>(&head)) return *e;
  ParsedMessage out{std::get<Header>(head), {}, {}};
  const char* type = message_type_name(out.header.type);
  if (frames.size() < 2) return ProtocolError{fmt::format("{} without a body frame", type)};
  const auto body = frames[1];
  if (body.size() > max_body_bytes(out.header.type))  // checked before a parser sees it
    return ProtocolError{fmt::format("{} body of {} bytes is over its limit of {}", type,
                                     body.size(), max_body_bytes(out.header.type))};
  out.body = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (out.body.is_discarded() || !out.body.is_object())
    return ProtocolError{fmt::format("{} body is not a JSON object", type)};
  const size_t vectors = frames.size() - 2;
  if (!expected_floats.empty() && vectors != expected_floats.size())
    return ProtocolError{
        fmt::format("{} carries {} vectors, expected {}", type, vectors, expected_floats.size())};
  const Codec* codec = nullptr;
  if (out.header.codec != CodecId::kRawF32) {
    codec = codecs ? codecs->find(out.header.codec) : nullptr;
    if (!codec)
      return ProtocolError{fmt::format("{} is encoded with {}, which this run does not use", type,
                                       codec_id_name(out.header.codec))};
    if (vectors > 0 && expected_floats.empty() && encoded_floats == 0)
      return ProtocolError{fmt::format("{} carries {}-encoded vectors where raw ones are expected",
                                       type, codec->name())};
  }
  for (size_t i = 0; i < vectors; ++i) {
    const auto f = frames[2 + i];
    if (codec) {
      const std::span<float> decoded =
          out.copy(expected_floats.empty() ? encoded_floats : expected_floats[i]);
      const CodecContext ctx{out.header.round, out.header.type == MessageType::kTask
                                                   ? CodecContext::kDownlink
                                                   : out.header.client};
      if (std::string why = codec->decode(f, ctx, decoded); !why.empty())
        return ProtocolError{fmt::format("{} vector {}: {}", type, i, why)};
      if (const size_t j = require_finite ? first_non_finite(decoded) : decoded.size();
          j < decoded.size())
        return ProtocolError{fmt::format(
            "{} vector {} decodes to a non-finite value ({}) at index {}", type, i, decoded[j], j)};
      out.vectors.emplace_back(decoded);
      continue;
    }
    if (f.size() % sizeof(float) != 0)
      return ProtocolError{fmt::format("{} vector {} has {} bytes, not a whole number of float32",
                                       type, i, f.size())};
    const size_t n = f.size() / sizeof(float);
    if (!expected_floats.empty() && n != expected_floats[i])
      return ProtocolError{fmt::format("{} vector {} has {} values, the model has {}", type, i, n,
                                       expected_floats[i])};
    std::span<const float> v;
    if (reinterpret_cast<uintptr_t>(f.data()) % alignof(float) == 0) {
      v = {reinterpret_cast<const float*>(f.data()), n};
    } else {  // ZeroMQ keeps small frames inline, unaligned: copy those
      const std::span<float> copy = out.copy(n);
      std::memcpy(copy.data(), f.data(), f.size());
      v = copy;
    }
    if (const size_t j = require_finite ? first_non_finite(v) : n; j < n)
      return ProtocolError{
          fmt::format("{} vector {} holds a non-finite value ({}) at index {}", type, i, v[j], j)};
    out.vectors.push_back(v);
  }
  return out;
}

template <typename T>
std::variant<T, ProtocolError> field(const nlohmann::json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end()) return ProtocolError{fmt::format("missing field '{}'", name)};
  bool ok = false;
  if constexpr (std::is_same_v<T, std::string>)
    ok = it->is_string();
  else if constexpr (std::is_same_v<T, bool>)
    ok = it->is_boolean();
  else if constexpr (std::is_floating_point_v<T>)
    ok = it->is_number();
  else if constexpr (std::is_same_v<T, uint32_t>)
    ok = it->is_number_unsigned() && it->template get<uint64_t>() <= UINT32_MAX;
  else if constexpr (std::is_same_v<T, std::vector<uint32_t>>) {
    ok = it->is_array();
    for (const auto& e : *it)
      ok = ok && e.is_number_unsigned() && e.template get<uint64_t>() <= UINT32_MAX;
  } else if constexpr (std::is_same_v<T, std::vector<uint64_t>>) {
    ok = it->is_array();
    for (const auto& e : *it) ok = ok && e.is_number_unsigned();
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    ok = it->is_array();
    for (const auto& e : *it) ok = ok && e.is_number();
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    ok = it->is_array();
    for (const auto& e : *it) ok = ok && e.is_string();
  } else if constexpr (std::is_unsigned_v<T>)
    ok = it->is_number_unsigned();
  else if constexpr (std::is_integral_v<T>)
    ok = it->is_number_integer();
  else
    ok = true;
  if (!ok) return ProtocolError{fmt::format("field '{}' has the wrong type", name)};
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return ProtocolError{fmt::format("field '{}' has the wrong type", name)};
  }
}

template std::variant<std::string, ProtocolError> field<std::string>(const nlohmann::json&,
                                                                     const char*);
template std::variant<bool, ProtocolError> field<bool>(const nlohmann::json&, const char*);
template std::variant<double, ProtocolError> field<double>(const nlohmann::json&, const char*);
template std::variant<uint64_t, ProtocolError> field<uint64_t>(const nlohmann::json&, const char*);
template std::variant<int64_t, ProtocolError> field<int64_t>(const nlohmann::json&, const char*);
template std::variant<uint32_t, ProtocolError> field<uint32_t>(const nlohmann::json&, const char*);
template std::variant<std::vector<uint32_t>, ProtocolError> field<std::vector<uint32_t>>(
    const nlohmann::json&, const char*);
template std::variant<std::vector<uint64_t>, ProtocolError> field<std::vector<uint64_t>>(
    const nlohmann::json&, const char*);
template std::variant<std::vector<double>, ProtocolError> field<std::vector<double>>(
    const nlohmann::json&, const char*);
template std::variant<std::vector<std::string>, ProtocolError> field<std::vector<std::string>>(
    const nlohmann::json&, const char*);

}  // namespace fedpar
