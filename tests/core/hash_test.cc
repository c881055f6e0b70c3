// The content hash fed in pieces is the hash of the whole, however the pieces cut its words; and
// a dataset cut to rows keeps those rows in order.
#include "core/hash.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/dataset.h"

namespace fedpar {
namespace {

TEST(HashStream, PiecesOfAnySizeHashAsTheWhole) {
  std::vector<unsigned char> data(1000);
  std::iota(data.begin(), data.end(), 0);
  for (size_t total : {size_t(0), size_t(7), size_t(8), size_t(9), size_t(1000)}) {
    const uint64_t whole = hash_bytes(data.data(), total, 42);
    for (size_t piece : {size_t(1), size_t(3), size_t(8), size_t(13), size_t(512)}) {
      HashStream s(42);
      for (size_t at = 0; at < total; at += piece)
        s.add(data.data() + at, std::min(piece, total - at));
      EXPECT_EQ(s.finish(), whole) << total << " bytes in pieces of " << piece;
    }
  }
  EXPECT_NE(hash_bytes(data.data(), 9, 42), hash_bytes(data.data(), 8, 42));
}

TEST(Dataset, KeepRowsKeepsThoseRowsInOrderAndTheirUsers) {
  Dataset d{"t", {1, 1, 2}, 3, {0, 1, 10, 11, 20, 21, 30, 31}, {0, 1, 2, 0}, {7, 8, 9, 7}};
  const std::vector<uint32_t> rows = {1, 3};
  d.keep_rows(rows);
  EXPECT_EQ(d.x, (std::vector<float>{10, 11, 30, 31}));
  EXPECT_EQ(d.y, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(d.user, (std::vector<int32_t>{8, 7}));
}

}  // namespace
}  // namespace fedpar
