// Fuzzes the checkpoint reader (`--resume DIR` reads checkpoint.bin; a truncated or altered file
// must be refused with a reason). Input: [mode] then the file; mode 1 appends the CRC32C the
// file needs, so the fuzzer explores the JSON header and vectors behind the checksum.
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/checkpoint.h"
#include "core/crc32c.h"
#include "fuzz/fuzz_files.h"

using namespace fedpar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::vector<uint8_t> file(data + 1, data + size);
  if (data[0] & 1) {
    const uint32_t crc = crc32c(file.data(), file.size());
    file.resize(file.size() + 4);
    std::memcpy(file.data() + file.size() - 4, &crc, 4);
  }
  return fuzz::read_file_input(file.data(), file.size(),
                               [](const auto& path) { (void)read_checkpoint(path); });
}

std::vector<std::string> fedpar_fuzz_seeds() {
  auto bytes_of = [](const Checkpoint& c) {
    const auto file = std::filesystem::temp_directory_path() / "fedpar-fuzz-seed.ckpt";
    write_checkpoint(file, c);
    std::ifstream in(file, std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(in), {}};
    std::filesystem::remove(file);
    return bytes;
  };
  Checkpoint c;
  c.meta = {{"round", 7}, {"config", "rounds = 30\n"}};
  c.f32["params"] = {1.0f, -2.0f, 0.5f};
  c.f64["fedopt.m"] = {0.25, 0.125};
  const std::string full = bytes_of(c), empty = bytes_of(Checkpoint{});
  // as written (mode 0), and without the CRC for the harness to append (mode 1)
  return {std::string(1, '\0') + full, std::string(1, '\1') + full.substr(0, full.size() - 4),
          std::string(1, '\1') + empty.substr(0, empty.size() - 4)};
}
