// Content hash; see hash.h.
#include "core/hash.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/rng.h"

namespace fedpar {

uint64_t hash_bytes(const void* data, size_t bytes, uint64_t h) {
  HashStream s(h);
  s.add(data, bytes);
  return s.finish();
}

void HashStream::add(const void* data, size_t bytes) {
  if (bytes == 0) return;  // data may be null then
  const auto* p = static_cast<const unsigned char*>(data);
  bytes_ += bytes;
  size_t i = 0;
  if (pending_n_ > 0) {  // complete the word a previous piece began
    const size_t take = std::min(bytes, 8 - pending_n_);
    std::memcpy(pending_ + pending_n_, p, take);
    pending_n_ += take, i = take;
    if (pending_n_ < 8) return;
    uint64_t w;
    std::memcpy(&w, pending_, 8);
    h_ = splitmix64(h_ ^ w);
    pending_n_ = 0;
  }
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h_ = splitmix64(h_ ^ w);
  }
  if (bytes > i) std::memcpy(pending_, p + i, bytes - i), pending_n_ = bytes - i;
}

uint64_t HashStream::finish() const {
  uint64_t tail = 0;
  std::memcpy(&tail, pending_, pending_n_);
  return splitmix64(h_ ^ tail ^ (bytes_ << 56));
}

std::string hash_hex(uint64_t h) { return fmt::format("{:016x}", h); }

}  // namespace fedpar
