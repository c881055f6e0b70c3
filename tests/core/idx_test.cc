// The IDX reader on well-formed and broken files.
#include "core/idx.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/check.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

void write_idx(const std::filesystem::path& p, uint32_t magic, std::vector<uint32_t> dims,
               size_t data_bytes) {
  std::ofstream out(p, std::ios::binary);
  auto put = [&](uint32_t v) {
    const unsigned char b[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
    out.write(reinterpret_cast<const char*>(b), 4);
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  for (size_t i = 0; i < data_bytes; ++i) out.put(char(i % 251));
}

std::string error_of(const std::filesystem::path& p, int rank) {
  try {
    read_idx_u8(p, rank);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Idx, ReadsImagesAndLabels) {
  testing::TempDir d;
  write_idx(d / "img", 0x803, {3, 2, 4}, 24);
  const IdxArray a = read_idx_u8(d / "img", 3);
  EXPECT_EQ(a.dims, (std::vector<uint32_t>{3, 2, 4}));
  ASSERT_EQ(a.data.size(), 24u);
  EXPECT_EQ(a.data[23], 23);
  write_idx(d / "lab", 0x801, {5}, 5);
  EXPECT_EQ(read_idx_u8(d / "lab", 1).data.size(), 5u);
}

TEST(Idx, BrokenFilesGetClearErrors) {
  testing::TempDir d;
  write_idx(d / "magic", 0x802, {3, 2, 4}, 24);
  EXPECT_NE(error_of(d / "magic", 3).find("wrong IDX magic 0x00000802, expected 0x00000803"),
            std::string::npos);
  write_idx(d / "short", 0x803, {3, 2, 4}, 20);
  EXPECT_NE(error_of(d / "short", 3)
                .find("truncated IDX file: dimensions promise 24 data bytes "
                      "but the file holds 20"),
            std::string::npos);
  write_idx(d / "long", 0x803, {3, 2, 4}, 30);
  EXPECT_NE(error_of(d / "long", 3).find("oversized"), std::string::npos);
  write_idx(d / "tiny", 0x803, {}, 0);
  EXPECT_NE(error_of(d / "tiny", 3).find("truncated IDX file (4 bytes"), std::string::npos);
  EXPECT_NE(error_of(d / "absent", 3).find("missing dataset file"), std::string::npos);
  EXPECT_NE(error_of(d / "absent", 3).find("scripts/setup.sh"), std::string::npos);
  write_idx(d / "labels-as-images", 0x801, {20}, 20);
  EXPECT_NE(error_of(d / "labels-as-images", 3).find("wrong IDX magic"), std::string::npos);
}

}  // namespace
}  // namespace fedpar
