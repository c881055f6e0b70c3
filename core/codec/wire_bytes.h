// Little-endian put/get and LEB128 varints for codec payloads. Readers are bounds-checked: a peer's
// bytes never make them read past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace fedpar {

template <typename T>
void put_le(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));  // fedpar runs on little-endian hosts only
}

inline void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(uint8_t(v | 0x80));
    v >>= 7;
  }
  out.push_back(uint8_t(v));
}

inline size_t varint_bytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}

// Reads from a span, remembering where it is; every read fails (returns false) rather than
// reading past the end.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> b) : b_(b) {}
  template <typename T>
  bool get(T& v) {
    if (b_.size() - at_ < sizeof(T)) return false;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= b_.size()) return false;
      const uint8_t byte = b_[at_++];
      v |= uint64_t(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;  // more than 10 bytes: not a varint we write
  }
  std::span<const uint8_t> take(size_t n) {  // empty and fails() when fewer than n are left
    if (b_.size() - at_ < n) {
      failed_ = true;
      return {};
    }
    auto s = b_.subspan(at_, n);
    at_ += n;
    return s;
  }
  size_t left() const { return b_.size() - at_; }
  bool failed() const { return failed_; }

 private:
  std::span<const uint8_t> b_;
  size_t at_ = 0;
  bool failed_ = false;
};

}  // namespace fedpar
