// CRC32C (Castagnoli), the checksum of every wire payload. Uses the SSE4.2 instruction when the
// build targets it, a table otherwise; both give the same value (tested on the standard vector).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fedpar {

// Continues a CRC over more bytes: crc32c(b, crc32c(a)) == crc32c(a followed by b).
uint32_t crc32c(const void* data, size_t bytes, uint32_t crc = 0);
// The table version, always compiled; the reference the fast path is checked against.
uint32_t crc32c_portable(const void* data, size_t bytes, uint32_t crc = 0);

}  // namespace fedpar
