// The codec registry: names, ids on the wire, parameter checks.
#include "core/codec/codec.h"

#include <gtest/gtest.h>

#include "core/rng.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {
using testing::error_of;

TEST(Codec, NamesAreTheWireIdsInOrderAndNoneIsRawFloat32) {
  const auto names = codec_names();
  ASSERT_EQ(names.size(), size_t(kCodecIdCount));
  EXPECT_EQ(names[0], "none");
  EXPECT_EQ(make_codec("none", {}), nullptr);
  const CodecParams p{.shapes = {{10, 100}}};  // PowerSGD needs the tensors' shapes
  for (uint16_t i = 1; i < kCodecIdCount; ++i) {
    const auto c = make_codec(names[i], p);
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
  EXPECT_NE(error_of([] { make_codec("randk", {.ratio = 1.5}); }).find("ratio must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_codec("qsgd", {.levels = 128}); }).find("levels must be in 1..127"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_codec("qsgd", {.bucket = 0}); }).find("bucket must be >= 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_codec("powersgd", {.rank = 0}); }).find("rank must be in 1..1024"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_codec("powersgd", {}); }).find("needs the shapes"),
            std::string::npos);
}

// Every codec: two codecs made alike give the same bytes for the same context (one codec may not:
// PowerSGD's encoder warm-starts from its previous call), its own encoding decodes, and garbage of
// any length is refused or decoded without a crash.
TEST(Codec, EveryCodecIsDeterministicAndSurvivesGarbage) {
  Rng rng(4, "codec-garbage");
  std::vector<float> v(1000);
  for (float& x : v) x = float(rng.normal());
  for (uint16_t i = 1; i < kCodecIdCount; ++i) {
    const auto c = make_codec(codec_id_name(CodecId(i)), {.shapes = {{10, 100}}});
    const auto twin = make_codec(codec_id_name(CodecId(i)), {.shapes = {{10, 100}}});
    const CodecContext ctx{.round = 3, .client = 2};
    std::vector<uint8_t> a, b;
    c->encode(v, ctx, a);
    twin->encode(v, ctx, b);
    EXPECT_EQ(a, b) << c->name();
    std::vector<float> out(v.size());
    EXPECT_EQ(c->decode(a, ctx, out), "") << c->name();
    for (size_t len : {size_t{0}, size_t{1}, size_t{3}, a.size() / 2, a.size() + 1}) {
      std::vector<uint8_t> junk(len);
      for (auto& x : junk) x = uint8_t(rng.next_u32());
      (void)c->decode(junk, ctx, out);
    }
  }
}

}  // namespace
}  // namespace fedpar
