// IDX reader; see idx.h.
#include "core/idx.h"

#include <fmt/format.h>
#include <fmt/std.h>

#include <fstream>

#include "core/check.h"

namespace fedpar {

IdxStream::IdxStream(const std::filesystem::path& path, int expected_rank) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    // DIR/mnist/FILE missing while DIR/FILE is there: the data dir named the dataset's own folder
    const auto above = std::filesystem::absolute(path).parent_path().parent_path();
    const bool one_too_deep = std::filesystem::is_regular_file(above / path.filename(), ec);
    throw Error(fmt::format(
        "missing dataset file {} ({})", path.string(),
        one_too_deep
            ? fmt::format("{} holds the files itself: the data dir is the folder above it, {}",
                          above.string(), above.parent_path().string())
            : "run scripts/setup.sh, or point --data-dir or FEDPAR_DATA_DIR at the folder that "
              "holds mnist/"));
  }
  const uint64_t file_size = std::filesystem::file_size(path);
  in_.open(path, std::ios::binary);
  if (!in_) throw Error(fmt::format("cannot open {}", path.string()));
  auto be32 = [](const unsigned char* b) {
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
  };
  const uint64_t header = 4 + 4 * uint64_t(expected_rank);
  if (file_size < header)
    throw Error(fmt::format("{}: truncated IDX file ({} bytes, header alone needs {})",
                            path.string(), file_size, header));
  std::vector<unsigned char> head(header);
  in_.read(reinterpret_cast<char*>(head.data()), std::streamsize(header));
  const uint32_t magic = be32(head.data());
  const uint32_t want = 0x0800u | uint32_t(expected_rank);  // type 0x08 = unsigned byte
  if (magic != want)
    throw Error(
        fmt::format("{}: wrong IDX magic 0x{:08x}, expected 0x{:08x} (unsigned bytes, {} "
                    "dimensions); is this the right file?",
                    path.string(), magic, want, expected_rank));
  uint64_t count = 1;
  bool overflow = false;  // three 32-bit dimensions can promise more than 64 bits count
  for (int i = 0; i < expected_rank; ++i) {
    dims_.push_back(be32(head.data() + 4 + 4 * size_t(i)));
    overflow |= __builtin_mul_overflow(count, uint64_t(dims_.back()), &count);
  }
  const uint64_t held = file_size - header;
  if (overflow || count != held)
    throw Error(fmt::format(
        "{}: {} IDX file: dimensions promise {} data bytes but the file holds {}; re-run "
        "scripts/setup.sh to fetch it again",
        path.string(), overflow || count > held ? "truncated" : "oversized",
        overflow ? std::string("more than 2^64") : std::to_string(count), held));
}

uint64_t IdxStream::entry_bytes() const {
  uint64_t n = 1;
  for (size_t i = 1; i < dims_.size(); ++i) n *= dims_[i];  // under 2^64 for rank <= 3
  return n;
}

void IdxStream::read(uint64_t entries, uint8_t* out) {
  in_.read(reinterpret_cast<char*>(out), std::streamsize(entries * entry_bytes()));
  if (!in_) throw Error(fmt::format("{}: read failed", path_.string()));
}

IdxArray read_idx_u8(const std::filesystem::path& path, int expected_rank) {
  IdxStream in(path, expected_rank);
  IdxArray out{in.dims(), std::vector<uint8_t>(uint64_t(in.dims()[0]) * in.entry_bytes())};
  in.read(in.dims()[0], out.data.data());
  return out;
}

}  // namespace fedpar
