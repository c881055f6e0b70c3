// Reader for the IDX format of MNIST (big-endian magic, dimensions, then uint8 data).
// Every size is checked against the file before use; errors name the file and the problem.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

namespace fedpar {

struct IdxArray {
  std::vector<uint32_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;
};

// Reads an unsigned-byte IDX file with `expected_rank` dimensions (3 for images, 1 for labels).
IdxArray read_idx_u8(const std::filesystem::path& path, int expected_rank);

// The same file opened and checked, its data read in pieces (the first dimension's entries in
// order): a client keeps the rows it hosts without holding the whole file.
class IdxStream {
 public:
  IdxStream(const std::filesystem::path& path, int expected_rank);
  const std::vector<uint32_t>& dims() const { return dims_; }
  uint64_t entry_bytes() const;  // bytes per entry of the first dimension (784 for an image)
  // Reads the next `entries` entries into `out` (entries * entry_bytes() bytes).
  void read(uint64_t entries, uint8_t* out);

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  std::vector<uint32_t> dims_;
};

}  // namespace fedpar
