// Checkpoint files: every bit of float32 and float64 state comes back, a rewrite replaces the
// file whole, and damage of any kind (a flipped bit, a cut, another file) is an Error that says
// so rather than a wrong state.
#include "core/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/check.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

Checkpoint sample() {
  Checkpoint c;
  c.meta = {{"round", 7}, {"note", "x"}};
  c.f32["params"] = {1.5f, -0.0f, std::numeric_limits<float>::denorm_min(), 3e38f};
  c.f32["empty"] = {};
  c.f64["adam.m"] = {1.0 / 3.0, -2e-300};
  return c;
}

std::vector<char> bytes_of(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put_bytes(const std::filesystem::path& p, const std::vector<char>& b) {
  std::ofstream(p, std::ios::binary).write(b.data(), std::streamsize(b.size()));
}

std::string error_of(const std::filesystem::path& p) {
  try {
    read_checkpoint(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, EveryBitComesBackAndARewriteReplacesTheFileWhole) {
  TempDir tmp;
  const auto file = tmp / "checkpoint.bin";
  write_checkpoint(file, sample());
  const Checkpoint back = read_checkpoint(file);
  EXPECT_EQ(back.meta, sample().meta);
  EXPECT_EQ(std::memcmp(back.floats("params").data(), sample().f32["params"].data(), 16), 0);
  EXPECT_TRUE(std::signbit(back.floats("params")[1]));
  EXPECT_TRUE(back.floats("empty").empty());
  EXPECT_EQ(back.doubles("adam.m"), sample().f64["adam.m"]);
  EXPECT_THROW(back.floats("missing"), Error);
  Checkpoint next = sample();
  next.meta["round"] = 9;
  write_checkpoint(file, next);
  EXPECT_EQ(read_checkpoint(file).meta["round"], 9);
  EXPECT_FALSE(std::filesystem::exists(tmp / "checkpoint.bin.tmp"));
}

TEST(Checkpoint, DamageIsAnErrorThatSaysSo) {
  TempDir tmp;
  const auto file = tmp / "c.bin";
  write_checkpoint(file, sample());
  const std::vector<char> good = bytes_of(file);
  std::vector<char> b = good;
  b[b.size() - 12] ^= 0x10;  // a bit of the float64 data
  put_bytes(file, b);
  EXPECT_NE(error_of(file).find("CRC32C does not match"), std::string::npos) << error_of(file);
  b.assign(good.begin(), good.end() - 9);  // cut short
  put_bytes(file, b);
  EXPECT_NE(error_of(file).find("not a usable checkpoint"), std::string::npos) << error_of(file);
  put_bytes(file, {'h', 'e', 'l', 'l', 'o', '\n'});
  EXPECT_NE(error_of(file).find("not a fedpar checkpoint"), std::string::npos) << error_of(file);
  EXPECT_NE(error_of(tmp / "absent.bin").find("cannot read the checkpoint"), std::string::npos);
}

TEST(Checkpoint, AWriteThatCannotHappenNamesItsCause) {
  TempDir tmp;
  try {
    write_checkpoint(tmp / "no-such-folder" / "c.bin", sample());
    FAIL() << "wrote into a missing folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
        << e.what();
  }
  const testing::FullDisk disk(tmp / "full", "16k");
  if (!disk.ok()) GTEST_SKIP() << "a full disk needs root (a 16 KiB tmpfs)";
  Checkpoint big = sample();
  big.f32["params"].assign(100000, 1.0f);  // 400 KB on a 16 KiB disk
  try {
    write_checkpoint(tmp / "full" / "c.bin", big);
    FAIL() << "a 400 KB checkpoint fit on a 16 KiB disk";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fedpar
