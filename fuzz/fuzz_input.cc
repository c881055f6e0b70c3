// See fuzz_input.h.
#include "fuzz/fuzz_input.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace fedpar::fuzz {

std::vector<std::vector<uint8_t>> split_frames(std::span<const uint8_t> data) {
  if (data.empty()) return {};
  const size_t count = data[0] % 66;  // up to header + body + 64 vectors
  data = data.subspan(1);
  std::vector<std::vector<uint8_t>> frames(count);
  for (auto& f : frames) {
    uint32_t n = 0;
    std::memcpy(&n, data.data(), std::min<size_t>(4, data.size()));
    data = data.subspan(std::min<size_t>(4, data.size()));
    n = uint32_t(std::min<size_t>(n, data.size()));
    f.assign(data.begin(), data.begin() + n);
    data = data.subspan(n);
  }
  return frames;
}

std::string join_frames(const std::vector<std::vector<uint8_t>>& frames) {
  std::string out(1, char(frames.size()));
  for (const auto& f : frames) {
    const uint32_t n = uint32_t(f.size());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out.append(f.begin(), f.end());
  }
  return out;
}

std::vector<std::span<const uint8_t>> spans(const std::vector<std::vector<uint8_t>>& frames) {
  return {frames.begin(), frames.end()};
}

const std::filesystem::path& input_file(std::span<const uint8_t> data) {
  struct Owned {  // removed when the process exits
    std::filesystem::path path;
    ~Owned() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  };
  static const Owned file{[]() -> std::filesystem::path {
    // scripts/fuzz.sh names it, one per harness: the path goes into error messages, and a pid in
    // it would steer the coverage, and so a seeded run's inputs, down another course each time
    if (const char* named = std::getenv("FEDPAR_FUZZ_INPUT")) return named;
    const std::filesystem::path shm = "/dev/shm";
    std::error_code ec;
    const auto dir =
        std::filesystem::is_directory(shm, ec) ? shm : std::filesystem::temp_directory_path();
    return dir / ("fedpar-fuzz-" + std::to_string(getpid()));
  }()};
  std::ofstream(file.path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
  return file.path;
}

namespace {
bool verbose = false;
}  // namespace

void set_verbose(bool on) { verbose = on; }

void refused(std::string_view why) {
  if (verbose) std::fprintf(stderr, "  refused: %.*s\n", int(why.size()), why.data());
}

}  // namespace fedpar::fuzz
