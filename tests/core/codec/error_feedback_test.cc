// Error feedback: what compression drops arrives later; the residual follows the learning rate.
#include "core/codec/error_feedback.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "tests/core/codec/codec_test_util.h"

namespace fedpar {
namespace {

std::vector<float> decode(const Codec& c, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n);
  EXPECT_EQ(c.decode(bytes, {}, out), "");
  return out;
}

// 2^-26 per step is below fp16's smallest subnormal (2^-24): plain fp16 sends 0 every time; with
// the residual, step 3 carries 2^-24 and after step 4 all four steps have arrived, exactly.
TEST(ErrorFeedback, DeliversWhatTheCodecCannotSendByItself) {
  const auto fp16 = make_codec("fp16", {});
  ErrorFeedback ef(*fp16);
  const float g = 0x1p-26f;
  const std::vector<float> step = {g};
  const float expect_sent[] = {0.0f, 0.0f, 0x1p-24f, 0.0f};  // 2^-25 is a tie: to even (0)
  const float expect_residual[] = {g, 2 * g, -g, 0.0f};
  std::vector<uint8_t> bytes;
  float sent_total = 0;
  for (int t = 0; t < 4; ++t) {
    ef.encode(7, step, {}, 0.1f, bytes);
    const float sent = decode(*fp16, bytes, 1)[0];
    EXPECT_EQ(sent, expect_sent[t]) << "step " << t;
    EXPECT_EQ(ef.residual(7)[0], expect_residual[t]) << "step " << t;
    sent_total += sent;
  }
  EXPECT_EQ(sent_total, 4 * g);
  std::vector<uint8_t> plain;
  fp16->encode(step, {}, plain);
  EXPECT_EQ(decode(*fp16, plain, 1)[0], 0.0f);  // without the residual: lost
  EXPECT_TRUE(ef.residual(8).empty());          // residuals are per client
}

TEST(ErrorFeedback, ResidualIsRescaledWhenTheLearningRateChanges) {
  const auto fp16 = make_codec("fp16", {});
  ErrorFeedback ef(*fp16);
  std::vector<uint8_t> bytes;
  ef.encode(0, std::vector<float>{0x1p-26f}, {}, 0.1f, bytes);
  ASSERT_EQ(ef.residual(0)[0], 0x1p-26f);
  // halving the rate: the same pending step is twice the gradient; 2 * 2^-26 + 0 = 2^-25, a tie
  // that rounds to 0 and stays pending
  ef.encode(0, std::vector<float>{0.0f}, {}, 0.05f, bytes);
  EXPECT_EQ(decode(*fp16, bytes, 1)[0], 0.0f);
  EXPECT_EQ(ef.residual(0)[0], 0x1p-25f);
}

TEST(ErrorFeedback, ANonFiniteUpdateLeavesTheResidualAsItWas) {
  const auto fp16 = make_codec("fp16", {});
  ErrorFeedback ef(*fp16);
  std::vector<uint8_t> bytes;
  ef.encode(1, std::vector<float>{0x1p-26f, 1.0f}, {}, 1.0f, bytes);
  ef.encode(1, std::vector<float>{std::numeric_limits<float>::quiet_NaN(), 1.0f}, {}, 1.0f, bytes);
  EXPECT_TRUE(std::isnan(decode(*fp16, bytes, 2)[0]));  // sent as is: the receiver refuses it
  EXPECT_EQ(ef.residual(1)[0], 0x1p-26f);
  EXPECT_EQ(ef.residual(1)[1], 0.0f);
}

// Every codec, with the parameters that change its layout: topk whole and bucketed, randk's dense
// and sparse index draws, QSGD at a few s.
std::vector<std::pair<std::string, CodecParams>> every_codec() {
  std::vector<std::pair<std::string, CodecParams>> all;
  for (const std::string& name : codec_names())
    if (name != "none") all.push_back({name, {}});
  all.push_back({"topk", {.ratio = 0.1, .topk_bucket = 100}});
  all.push_back({"topk", {.ratio = 0.5}});
  all.push_back({"randk", {.ratio = 0.1, .seed = 9}});  // 16k >= d: the dense Fisher-Yates draw
  all.push_back({"randk", {.ratio = 1.0}});
  all.push_back({"qsgd", {.levels = 1, .bucket = 7}});
  all.push_back({"qsgd", {.levels = 127, .bucket = 100}});
  return all;
}

// The codec `name` for vectors of d values: PowerSGD reads them as one matrix (or a vector when d
// has no useful factoring), the others need no shapes.
std::unique_ptr<Codec> codec_for(const std::string& name, CodecParams params, size_t d) {
  if (name == "powersgd") {
    const int64_t rows = d >= 100 ? int64_t(d / 100) * 10 : 1;  // 100: 10x10, 1000: 100x10
    params.shapes = {rows > 1 ? std::vector<int64_t>{rows, int64_t(d) / rows}
                              : std::vector<int64_t>{int64_t(d)}};
  }
  return make_codec(name, params);
}

// Codec::subtract_decoded against decoding and subtracting, value by value, bit for bit: awkward
// vectors (ties, zeros of both signs, subnormals), a float32-range norm overflow (the decoding is
// NaN for QSGD and scaled_sign), and NaN and Inf inputs (then only the verdict is compared).
TEST(ErrorFeedback, TheInPlaceResidualIsDecodeAndSubtractBitForBitForEveryCodec) {
  int checked = 0;
  for (const auto& [name, params] : every_codec()) {
    for (size_t d : {1, 7, 100, 1000, 5000})
      for (int variant = 0; variant < 3; ++variant) {
        const auto c = codec_for(name, params, d);
        std::vector<float> p = testing::awkward_vector(d, d * 7 + variant, variant == 2);
        if (variant == 1 && d >= 2) p[d / 2] = 3e38f, p[d / 2 + 1] = 3e38f;
        const CodecContext ctx{.round = d + uint64_t(variant), .client = uint32_t(variant)};
        std::vector<uint8_t> bytes;
        c->encode(p, ctx, bytes);
        std::vector<float> decoded(d);
        ASSERT_EQ(c->decode(bytes, ctx, decoded), "") << name;
        std::vector<float> want(d);
        bool want_finite = true;
        for (size_t i = 0; i < d; ++i) {
          want_finite &= std::isfinite(decoded[i]);
          want[i] = p[i] - decoded[i];
        }
        std::vector<float> got = p, scratch;
        const bool finite = c->subtract_decoded(bytes, ctx, got, scratch);
        ASSERT_EQ(finite, want_finite) << name << " d " << d << " variant " << variant;
        if (want_finite) {
          ASSERT_TRUE(testing::same_bits(got, want))
              << name << " d " << d << " variant " << variant;
        }
        ++checked;
      }
  }
  EXPECT_EQ(checked, int(every_codec().size()) * 5 * 3);
}

// The residual error feedback keeps, step by step, against the definition written plainly
// (p = e + g; send C(p); e = p - D(C(p)) unless p or D(C(p)) holds NaN or Inf; e rescaled by
// old lr / new lr first): the same bytes and the same residual bits, for every codec, two clients
// interleaved, a learning-rate change and a non-finite step among them.
TEST(ErrorFeedback, KeepsTheDefinitionsResidualBitForBitForEveryCodec) {
  for (const auto& [name, params] : every_codec()) {
    const size_t d = 3000;
    // Two alike: PowerSGD's encoder keeps a warm start, which each encode advances.
    const auto c = codec_for(name, params, d), mine = codec_for(name, params, d);
    ErrorFeedback ef(*mine);
    std::map<uint32_t, std::vector<float>> e;  // the plain residuals
    std::map<uint32_t, float> last_lr;
    for (int step = 0; step < 8; ++step) {
      const uint32_t client = uint32_t(step % 2);
      const float lr = step < 5 ? 0.1f : 0.05f;
      std::vector<float> g = testing::awkward_vector(d, uint64_t(step) * 31 + 5, false);
      if (step == 6) g[17] = std::numeric_limits<float>::infinity();
      const CodecContext ctx{.round = uint64_t(step / 2), .client = client};
      std::vector<uint8_t> got;
      ef.encode(client, g, ctx, lr, got);

      auto& r = e[client];
      if (r.empty()) r.assign(d, 0.0f);
      if (last_lr.count(client) && last_lr[client] != lr)
        for (float& x : r) x *= last_lr[client] / lr;
      last_lr[client] = lr;
      std::vector<float> p(d), decoded(d);
      bool finite = true;
      for (size_t i = 0; i < d; ++i) finite &= std::isfinite(p[i] = r[i] + g[i]);
      std::vector<uint8_t> want;
      round_trip(*c, p, ctx, want, decoded);
      for (float x : decoded) finite &= std::isfinite(x);
      if (finite)
        for (size_t i = 0; i < d; ++i) r[i] = p[i] - decoded[i];

      ASSERT_EQ(got, want) << name << " step " << step;
      const auto kept = ef.residual(client);
      ASSERT_TRUE(testing::same_bits({kept.begin(), kept.end()}, r)) << name << " step " << step;
    }
  }
}

}  // namespace
}  // namespace fedpar
