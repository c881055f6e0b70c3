// Mixed precision on the CPU reference: the rounding to bf16 / fp16, products on rounded inputs,
// dynamic loss scaling, and training that still learns with fp32 master weights.
#include "core/precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/loss_scaler.h"
#include "core/model.h"
#include "core/synthetic.h"
#include "core/trainer.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::random_vector;

TEST(Precision, RoundsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> even (1).
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-7f + 0x1p-8f), 1.0f + 0x1p-6f);   // tie -> even upwards
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f + 0x1p-12f), 1.0f + 0x1p-7f);  // above the tie
  EXPECT_TRUE(std::isinf(round_to_bf16(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  // fp16: 11 significant bits, largest finite 65504.
  EXPECT_EQ(round_to_f16(1.0f + 0x1p-11f), 1.0f);
  EXPECT_EQ(round_to_f16(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);
  EXPECT_EQ(round_to_f16(65504.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to_f16(70000.0f)));
  EXPECT_EQ(parse_precision("bf16"), Precision::kBF16);
  EXPECT_THROW(parse_precision("fp8"), Error);
}

TEST(Precision, ReducedProductsAreFp32ProductsOfRoundedInputs) {
  auto be = make_backend("cpu");
  const int m = 7, n = 5, k = 300;
  const auto a = random_vector(size_t(m) * k, 1), b = random_vector(size_t(k) * n, 2);
  for (Precision p : {Precision::kBF16, Precision::kF16}) {
    std::vector<float> ra(a), rb(b), want(size_t(m) * n), got(size_t(m) * n), full(size_t(m) * n);
    for (float& v : ra) v = round_to(p, v);
    for (float& v : rb) v = round_to(p, v);
    be->set_precision(Precision::kF32);
    be->gemm(Trans::kNo, Trans::kNo, m, n, k, 1.0f, ra.data(), rb.data(), 0.0f, want.data());
    be->gemm(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), b.data(), 0.0f, full.data());
    be->set_precision(p);
    be->gemm(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), b.data(), 0.0f, got.data());
    EXPECT_EQ(got, want) << precision_name(p);
    EXPECT_NE(got, full) << precision_name(p) << ": rounding changed nothing";
    EXPECT_TRUE(testing::all_close(got, full, 0.1, 0.05)) << precision_name(p);
  }
}

TEST(LossScaler, SkipsOverflowsBacksOffAndGrows) {
  auto be = make_backend("cpu");
  LossScaler s({.init = 1024.0f, .growth = 2.0f, .backoff = 0.5f, .growth_interval = 3});
  std::vector<float> g = {2048.0f, -1024.0f};
  EXPECT_TRUE(s.unscale(*be, g.data(), g.size()));
  EXPECT_EQ(g, (std::vector<float>{2.0f, -1.0f}));
  std::vector<float> bad = {1.0f, std::numeric_limits<float>::infinity()};
  EXPECT_FALSE(s.unscale(*be, bad.data(), bad.size()));
  EXPECT_EQ(s.scale(), 512.0f);
  EXPECT_EQ(s.skipped(), 1);
  bad[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(s.unscale(*be, bad.data(), bad.size()));
  EXPECT_EQ(s.scale(), 256.0f);
  for (int i = 0; i < 3; ++i) {
    std::vector<float> ok = {1.0f};
    EXPECT_TRUE(s.unscale(*be, ok.data(), 1));
  }
  EXPECT_EQ(s.scale(), 512.0f);  // three good steps in a row: grows
}

TEST(Precision, TrainingInBf16AndFp16StillLearns) {
  const TrainTest data = generate_synthetic({.iid = true, .seed = 3});
  auto accuracy = [&](Precision p, int64_t* skipped) {
    auto be = make_backend("cpu");
    Model m(*be, {"mlp", {64}}, data.train.shape, data.train.num_classes);
    TrainOptions o{.epochs = 5, .batch = 20, .seed = 1, .precision = p};
    o.lr.base_lr = 0.05f;
    train(m, data.train, data.test, o,
          {.on_epoch = [&](const EpochInfo& e) { *skipped = e.skipped_steps; }});
    EXPECT_EQ(be->precision(), p);
    const BatchStats st = evaluate(m, data.test);
    return 100.0 * double(st.correct) / double(st.samples);
  };
  int64_t skipped = 0;
  const double f32 = accuracy(Precision::kF32, &skipped);
  const double bf16 = accuracy(Precision::kBF16, &skipped);
  const double f16 = accuracy(Precision::kF16, &skipped);
  std::printf(
      "synthetic IID, MLP(64), 5 epochs: fp32 %.2f%%, bf16 %.2f%%, fp16 %.2f%% (%lld steps "
      "skipped)\n",
      f32, bf16, f16, static_cast<long long>(skipped));
  EXPECT_GT(f32, 50.0);
  EXPECT_NEAR(bf16, f32, 3.0);
  EXPECT_NEAR(f16, f32, 3.0);
}

}  // namespace
}  // namespace fedpar
