// The codec registry: names, ids on the wire, parameter checks.
#include "core/codec/codec.h"

#include <gtest/gtest.h>

#include "tests/util/test_util.h"

namespace fedpar {
namespace {
using testing::error_of;

TEST(Codec, NamesAreTheWireIdsInOrderAndNoneIsRawFloat32) {
  const auto names = codec_names();
  ASSERT_EQ(names.size(), size_t(kCodecIdCount));
  EXPECT_EQ(names[0], "none");
  EXPECT_EQ(make_codec("none", {}), nullptr);
  for (uint16_t i : {1, 2}) {  // fp16, bf16
    const auto c = make_codec(names[i], {});
    ASSERT_TRUE(c) << names[i];
    EXPECT_EQ(uint16_t(c->id()), i) << names[i];
    EXPECT_EQ(c->name(), names[i]);
  }
}

TEST(Codec, BadNamesAndParametersSayWhatIsValid) {
  EXPECT_NE(error_of([] { make_codec("zip", {}); }).find("unknown codec 'zip' (valid: none, fp16"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_codec("topk", {.ratio = 0}); }).find("ratio must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_codec("qsgd", {.levels = 0}); }).find("levels must be in 1..127"),
            std::string::npos);
}

}  // namespace
}  // namespace fedpar
