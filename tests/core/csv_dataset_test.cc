// CSV datasets: header detection, the user column, and line-numbered errors.
#include "core/csv_dataset.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/check.h"
#include "core/dataset.h"
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

// A UTF-8 byte-order mark (spreadsheets write one) is not a header: the first row is data.
TEST(CsvDataset, AByteOrderMarkIsSkipped) {
  testing::TempDir d;
  Dataset ds = read_csv_dataset(write(d, "bom.csv",
                                      "\xEF\xBB\xBF"
                                      "1,2,1\n3,4,0\n"),
                                false);
  EXPECT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds.x, (std::vector<float>{1, 2, 3, 4}));
  Dataset dh = read_csv_dataset(write(d, "bomh.csv",
                                      "\xEF\xBB\xBF"
                                      "a,label,user\n1,1,5\n"),
                                false);
  EXPECT_EQ(dh.user, (std::vector<int32_t>{5}));
}

// A label is a class index: labels with gaps make outputs no sample trains, which the data line
// says (a CSV of labels 0, 1000, 2000 built a 2001-class model without a word).
TEST(CsvDataset, ClassesWithoutATrainingSampleAreSaid) {
  testing::TempDir d;
  TrainTest tt;
  tt.train = read_csv_dataset(write(d, "gaps.csv", "1,0\n2,1000\n3,2000\n"), false);
  EXPECT_EQ(tt.train.num_classes, 2001);
  EXPECT_NE(describe(tt).find("2001 classes (1998 without a training sample: a label is a class "
                              "index, so gaps in the labels widen the model)"),
            std::string::npos)
      << describe(tt);
  tt.train = read_csv_dataset(write(d, "dense.csv", "1,0\n2,1\n"), false);
  EXPECT_EQ(describe(tt).find("without a training sample"), std::string::npos) << describe(tt);
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
  // only the first line may be a header: a row whose first field is not a number is an error,
  // not another header skipped without a word (an id column, an NA)
  EXPECT_NE(
      msg("f,g,label\nNA,1,0\n2,3,1\n").find("e.csv:2: column 1 is not a finite number: 'NA'"),
      std::string::npos);
  // a header is a first line without a number: a first row starting with an id or NA is a
  // sample and an error (it was skipped as a header, one sample lost without a word)
  EXPECT_NE(msg("s0,1.5,0\ns1,2.5,1\n").find("e.csv:1: column 1 is not a finite number: 's0'"),
            std::string::npos);
  EXPECT_NE(msg("NA,1,0\n2,3,1\n").find("e.csv:1: column 1 is not a finite number: 'NA'"),
            std::string::npos);
  EXPECT_NE(msg(",1,0\n2,3,1\n").find("e.csv:1: column 1 is not a finite number: ''"),
            std::string::npos);
  EXPECT_NE(msg("1.5;2;0\n").find("e.csv:1: fields are separated by commas, and this line has ';'"),
            std::string::npos);
  EXPECT_THROW(read_csv_dataset(d / "missing.csv", false), Error);
  try {
    read_csv_dataset("missing-here.csv", false);
    ADD_FAILURE() << "a missing file was read";
  } catch (const Error& e) {  // why, and where a relative path was looked for
    EXPECT_NE(std::string(e.what()).find(
                  "cannot open CSV file missing-here.csv: No such file or directory (a relative "
                  "path is read from the current folder, " +
                  std::filesystem::current_path().string() + ")"),
              std::string::npos)
        << e.what();
  }
}

// The columns are read by position (features..., label[, user]); a header whose names say
// otherwise had its columns swapped without a word (the label read as a feature, a user id as the
// label), so it is refused saying where the column must go; a user column is named as
// spreadsheets and R write it.
TEST(CsvDataset, AHeaderThatPutsTheLabelOrTheUserElsewhereIsRefused) {
  testing::TempDir d;
  auto msg = [&](const std::string& text, bool user = false) {
    try {
      read_csv_dataset(write(d, "h.csv", text), user);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg("label,income,age\n1,2,3\n")
                .find("h.csv:1: the header names column 1 'label', but the label is read from "
                      "column 3 (the columns are features..., label[, user]): move it there"),
            std::string::npos);
  EXPECT_NE(msg("a,b,user,label\n1,2,3,0\n")
                .find("h.csv:1: the header names column 3 'user', but a user id is read from the "
                      "last column only: move it last"),
            std::string::npos);
  EXPECT_NE(msg(",a,label\n0,1.5,1\n")
                .find("the header's first column has no name, as pandas' "
                      "to_csv writes its row index"),
            std::string::npos);
  EXPECT_NE(msg("a,label\n1,2,0\n").find("h.csv:2: 3 columns, but the header names 2"),
            std::string::npos);
  // data.csv_user_column = true on a file whose header ends in the label
  EXPECT_NE(msg("a,b,label\n1,2,0\n", true).find("the header names column 3 'label'"),
            std::string::npos);
  // quoted and capitalised, as R's write.csv and spreadsheets write them
  const Dataset r = read_csv_dataset(
      write(d, "r.csv", "\"f1\",\"f2\",\"Label\",\"User_ID\"\n1,2,1,8\n3,4,0,9\n"), false);
  EXPECT_EQ(r.dim(), 2u);
  EXPECT_EQ(r.user, (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(r.y, (std::vector<int32_t>{1, 0}));
  // features may be named anything, y included
  EXPECT_EQ(read_csv_dataset(write(d, "xy.csv", "x,y,label\n1,2,1\n"), false).dim(), 2u);
}

}  // namespace
}  // namespace fedpar
