// Fuzzes the IDX reader (MNIST's image and label files): the first byte picks the rank asked for.
#include "core/idx.h"
#include "fuzz/fuzz_files.h"

using namespace fedpar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int rank = 1 + data[0] % 3;
  return fuzz::read_file_input(data + 1, size - 1, [&](const auto& path) {
    const IdxArray a = read_idx_u8(path, rank);
    uint64_t count = 1;
    for (auto d : a.dims)  // dimensions whose product overflows must have been refused
      if (__builtin_mul_overflow(count, uint64_t(d), &count)) __builtin_trap();
    if (a.dims.size() != size_t(rank) || a.data.size() != count) __builtin_trap();
  });
}

std::vector<std::string> fedpar_fuzz_seeds() {
  // rank 1: 3 labels; rank 3: two 2x2 images
  const std::string labels = std::string("\x00", 1) + std::string("\x00\x00\x08\x01", 4) +
                             std::string("\x00\x00\x00\x03", 4) + "\x01\x02\x03";
  const std::string images = std::string("\x02", 1) + std::string("\x00\x00\x08\x03", 4) +
                             std::string("\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x02", 12) +
                             "abcdefgh";
  return {labels, images};
}
