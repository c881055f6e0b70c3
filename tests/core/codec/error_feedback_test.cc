// Error feedback: what compression drops arrives later; the residual follows the learning rate.
#include "core/codec/error_feedback.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

}  // namespace
}  // namespace fedpar
