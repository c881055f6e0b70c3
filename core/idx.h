// Reader for the IDX format of MNIST (big-endian magic, dimensions, then uint8 data).
// Every size is checked against the file before use; errors name the file and the problem.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace fedpar {

struct IdxArray {
  std::vector<uint32_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;
};

// Reads an unsigned-byte IDX file with `expected_rank` dimensions (3 for images, 1 for labels).
IdxArray read_idx_u8(const std::filesystem::path& path, int expected_rank);

}  // namespace fedpar
