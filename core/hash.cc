// Content hash; see hash.h.
#include "core/hash.h"

#include <fmt/format.h>

#include <cstring>

#include "core/rng.h"

namespace fedpar {

uint64_t hash_bytes(const void* data, size_t bytes, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = splitmix64(h ^ w);
  }
  uint64_t tail = 0;
  if (bytes > i) std::memcpy(&tail, p + i, bytes - i);  // p may be null when bytes == 0
  return splitmix64(h ^ tail ^ (uint64_t(bytes) << 56));
}

std::string hash_hex(uint64_t h) { return fmt::format("{:016x}", h); }

}  // namespace fedpar
