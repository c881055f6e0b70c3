// A fast, order-sensitive 64-bit content hash (8 bytes at a time through splitmix64), the same on
// every little-endian machine. Names datasets and manifests; not for security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fedpar {

uint64_t hash_bytes(const void* data, size_t bytes, uint64_t h = 0);
std::string hash_hex(uint64_t h);  // 16 hex digits

}  // namespace fedpar
