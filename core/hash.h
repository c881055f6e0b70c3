// A fast, order-sensitive 64-bit content hash (8 bytes at a time through splitmix64), the same on
// every little-endian machine. Names datasets and manifests; not for security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fedpar {

uint64_t hash_bytes(const void* data, size_t bytes, uint64_t h = 0);

// hash_bytes over data given in pieces: add(a), add(b), finish() is hash_bytes(a ++ b, h), for
// data too large to hold at once (a client hashes the whole training set, keeping its rows).
class HashStream {
 public:
  explicit HashStream(uint64_t h = 0) : h_(h) {}
  void add(const void* data, size_t bytes);
  uint64_t finish() const;

 private:
  uint64_t h_;
  uint64_t bytes_ = 0;
  unsigned char pending_[8] = {};  // the bytes of an unfinished 8-byte word
  size_t pending_n_ = 0;
};
std::string hash_hex(uint64_t h);  // 16 hex digits

}  // namespace fedpar
