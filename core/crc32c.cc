// CRC32C; see crc32c.h. Reflected polynomial 0x82F63B78, initial and final XOR 0xFFFFFFFF.
#include "core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace fedpar {
namespace {

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = make_table();

#if defined(__SSE4_2__)
// Large buffers run as three independent lanes of kLane bytes, which keeps the CPU's CRC unit
// busy (one lane waits on each instruction's latency). The register is linear over GF(2), so
// crc(s, A B) = shift(s, |B|) ^ crc(0, B): lanes are joined by shifting over kLane zero bytes,
// a linear map of the 32-bit register, done as four 256-entry tables.
constexpr size_t kLane = 4096;

struct LaneShift {
  std::array<std::array<uint32_t, 256>, 4> t;
  uint32_t operator()(uint32_t s) const {
    return t[0][s & 0xFF] ^ t[1][(s >> 8) & 0xFF] ^ t[2][(s >> 16) & 0xFF] ^ t[3][s >> 24];
  }
};

const LaneShift& lane_shift() {
  static const LaneShift shift = [] {
    std::array<uint32_t, 32> basis{};  // each register bit, shifted over kLane zero bytes
    for (int b = 0; b < 32; ++b) {
      uint64_t c = uint32_t(1) << b;
      for (size_t i = 0; i < kLane; i += 8) c = _mm_crc32_u64(c, 0);
      basis[size_t(b)] = uint32_t(c);
    }
    LaneShift s{};
    for (size_t k = 0; k < 4; ++k)
      for (uint32_t v = 0; v < 256; ++v)
        for (size_t bit = 0; bit < 8; ++bit)
          if (v >> bit & 1) s.t[k][v] ^= basis[8 * k + bit];
    return s;
  }();
  return shift;
}

uint64_t load64(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
#endif

}  // namespace

uint32_t crc32c_portable(const void* data, size_t bytes, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < bytes; ++i) crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t crc32c(const void* data, size_t bytes, uint32_t crc) {
#if defined(__SSE4_2__)
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  size_t i = 0;
  if (bytes >= 3 * kLane) {
    const LaneShift& shift = lane_shift();
    for (; i + 3 * kLane <= bytes; i += 3 * kLane) {
      const unsigned char *a = p + i, *b = a + kLane, *d = b + kLane;
      uint64_t cb = 0, cd = 0;
      for (size_t k = 0; k < kLane; k += 8) {
        c = _mm_crc32_u64(c, load64(a + k));
        cb = _mm_crc32_u64(cb, load64(b + k));
        cd = _mm_crc32_u64(cd, load64(d + k));
      }
      c = shift(shift(uint32_t(c)) ^ uint32_t(cb)) ^ uint32_t(cd);
    }
  }
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    c = _mm_crc32_u64(c, w);
  }
  uint32_t c32 = uint32_t(c);
  for (; i < bytes; ++i) c32 = _mm_crc32_u8(c32, p[i]);
  return ~c32;
#else
  return crc32c_portable(data, bytes, crc);
#endif
}

}  // namespace fedpar
