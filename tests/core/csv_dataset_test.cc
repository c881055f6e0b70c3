// CSV datasets: header detection, the user column, and line-numbered errors.
#include "core/csv_dataset.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/check.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

std::filesystem::path write(const testing::TempDir& d, const std::string& name,
                            const std::string& text) {
  std::ofstream(d / name) << text;
  return d / name;
}

TEST(CsvDataset, HeaderWithUserColumn) {
  testing::TempDir d;
  auto p = write(d, "a.csv", "f1,f2,label,user\n0.5,1,2,7\n-1e-3, 3 ,0,7\n\n4,5,1,9\r\n");
  Dataset ds = read_csv_dataset(p, false);
  EXPECT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds.dim(), 2u);
  EXPECT_EQ(ds.num_classes, 3);
  EXPECT_EQ(ds.x, (std::vector<float>{0.5f, 1, -1e-3f, 3, 4, 5}));
  EXPECT_EQ(ds.y, (std::vector<int32_t>{2, 0, 1}));
  EXPECT_EQ(ds.user, (std::vector<int32_t>{7, 7, 9}));
}

TEST(CsvDataset, NoHeaderNoUser) {
  testing::TempDir d;
  Dataset ds = read_csv_dataset(write(d, "b.csv", "1,2,3,1\n4,5,6,0\n"), false);
  EXPECT_EQ(ds.dim(), 3u);
  EXPECT_FALSE(ds.has_users());
  Dataset du = read_csv_dataset(write(d, "c.csv", "1,2,3,1\n4,5,6,0\n"), true);
  EXPECT_EQ(du.dim(), 2u);
  EXPECT_EQ(du.user, (std::vector<int32_t>{1, 0}));
}

TEST(CsvDataset, ErrorsNameFileAndLine) {
  testing::TempDir d;
  auto msg = [&](const std::string& text) {
    try {
      read_csv_dataset(write(d, "e.csv", text), false);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg("1,2,0\n1,x,1\n").find("e.csv:2: column 2 is not a finite number: 'x'"),
            std::string::npos);
  EXPECT_NE(msg("1,2,0\n1,1\n").find("e.csv:2: 2 columns, but the first row had 3"),
            std::string::npos);
  EXPECT_NE(msg("1,2,-1\n").find("label must be an integer in 0..65535"), std::string::npos);
  // a label is a class (one model output each): 2^31 - 1 would overflow the class count
  EXPECT_NE(msg("1,2,2147483647\n").find("label must be an integer in 0..65535"),
            std::string::npos);
  EXPECT_NE(msg("1,2,0.5\n").find("label must be an integer"), std::string::npos);
  EXPECT_NE(msg("1,nan,1\n").find("not a finite number"), std::string::npos);
  EXPECT_NE(msg("a,b\n").find("no data rows"), std::string::npos);
  EXPECT_THROW(read_csv_dataset(d / "missing.csv", false), Error);
}

}  // namespace
}  // namespace fedpar
