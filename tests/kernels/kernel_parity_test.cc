// Every op of the CUDA backend against the CPU backend (its reference) on random inputs of sizes
// {1, 255, 256, 100003}: block edges, one partial block, many blocks. Tolerances are absolute +
// relative per op: elementwise ops agree to an ulp or two (either compiler may fuse a
// multiply-add), reductions and products to their summation order. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>

#include "core/backend.h"
#include "tests/kernels/gpu_fixture.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::all_close;
using testing::random_vector;

const size_t kSizes[] = {1, 255, 256, 100003};

class KernelParity : public testing::Gpu {
 protected:
  std::vector<int32_t> labels(size_t rows, int classes, uint64_t seed) {
    auto r = random_vector(rows, seed, 0.0f, float(classes) - 0.001f);
    return std::vector<int32_t>(r.begin(), r.end());
  }
};

TEST_F(KernelParity, ElementwiseOps) {
  for (size_t n : kSizes) {
    const auto x = random_vector(n, 1), y = random_vector(n, 2);
    auto run = [&](Backend& be) {
      auto dx = on(be, x), dy = on(be, y), out = on(be, std::vector<float>(n, 0.0f));
      std::vector<std::vector<float>> results;
      be.relu_forward(out.data(), dx.data(), n);
      results.push_back(out.download());
      be.relu_backward(out.data(), dy.data(), dx.data(), n);
      results.push_back(out.download());
      be.axpy(dy.data(), dx.data(), 0.37f, n);
      results.push_back(dy.download());
      be.scale(dy.data(), -1.7f, n);
      results.push_back(dy.download());
      be.fill(out.data(), 2.5f, n);
      results.push_back(out.download());
      return results;
    };
    const auto want = run(*cpu), got = run(*gpu);
    for (size_t op = 0; op < want.size(); ++op)
      EXPECT_TRUE(all_close(got[op], want[op], 1e-7, 1e-6)) << "op " << op << ", n=" << n;
  }
}

TEST_F(KernelParity, SgdStepWithMomentumNesterovDecayAndAppliedSum) {
  struct Case {
    float momentum, wd;
    bool nesterov;
  };
  for (size_t n : kSizes)
    for (Case c : {Case{0, 0, false}, Case{0, 1e-3f, false}, Case{0.9f, 0, false},
                   Case{0.9f, 5e-4f, true}}) {
      const auto w = random_vector(n, 3), g = random_vector(n, 4);
      auto run = [&](Backend& be) {
        auto dw = on(be, w), dg = on(be, g), v = on(be, std::vector<float>(n, 0.0f)),
             applied = on(be, std::vector<float>(n, 0.0f));
        for (int step = 0; step < 3; ++step)
          be.sgd_step(dw.data(), v.data(), dg.data(), 0.05f, c.momentum, c.wd, c.nesterov, n,
                      applied.data());
        return std::vector{dw.download(), v.download(), applied.download()};
      };
      const auto want = run(*cpu), got = run(*gpu);
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(all_close(got[i], want[i], 1e-6, 1e-5))
            << "vector " << i << ", n=" << n << ", momentum " << c.momentum << ", nesterov "
            << c.nesterov;
    }
}

TEST_F(KernelParity, DotIsAccumulatedInDouble) {
  for (size_t n : kSizes) {
    const auto x = random_vector(n, 5), y = random_vector(n, 6);
    auto dot = [&](Backend& be) {
      auto dx = on(be, x), dy = on(be, y);
      return be.dot(dx.data(), dy.data(), n);
    };
    const double want = dot(*cpu);
    EXPECT_NEAR(dot(*gpu), want, 1e-9 * std::max(1.0, std::sqrt(double(n)))) << "n=" << n;
  }
}

TEST_F(KernelParity, GemmInEveryTransposeMatchesCpu) {
  for (size_t m : kSizes)
    for (Trans ta : {Trans::kNo, Trans::kYes})
      for (Trans tb : {Trans::kNo, Trans::kYes}) {
        const int n = 37, k = 53;
        const auto a = random_vector(m * k, 7), b = random_vector(size_t(k) * n, 8),
                   c0 = random_vector(m * n, 9);
        auto run = [&](Backend& be) {
          auto da = on(be, a), db = on(be, b), dc = on(be, c0);
          be.gemm(ta, tb, int(m), n, k, 0.5f, da.data(), db.data(), 0.25f, dc.data());
          return dc.download();
        };
        EXPECT_TRUE(all_close(run(*gpu), run(*cpu), 1e-5, 1e-4))
            << "m=" << m << " ta=" << int(ta) << " tb=" << int(tb);
      }
  // A long inner dimension: the sums differ in order only.
  const int k = 100003;
  const auto a = random_vector(size_t(3) * k, 10), b = random_vector(size_t(k) * 4, 11);
  auto run = [&](Backend& be) {
    auto da = on(be, a), db = on(be, b), dc = on(be, std::vector<float>(12, 0.0f));
    be.gemm(Trans::kNo, Trans::kNo, 3, 4, k, 1.0f, da.data(), db.data(), 0.0f, dc.data());
    return dc.download();
  };
  EXPECT_TRUE(all_close(run(*gpu), run(*cpu), 1e-2, 1e-4));
}

// bf16 / fp16 products (tensor cores, fp32 accumulation) against the CPU reference: fp32 products
// of the inputs rounded the same way.
TEST_F(KernelParity, ReducedPrecisionGemmMatchesTheRoundedReference) {
  for (Precision p : {Precision::kBF16, Precision::kF16})
    for (size_t m : kSizes) {
      const int n = 40, k = 64;
      const auto a = random_vector(m * k, 26), b = random_vector(size_t(k) * n, 27);
      auto run = [&](Backend& be) {
        be.set_precision(p);
        auto da = on(be, a), db = on(be, b), dc = on(be, std::vector<float>(m * n, 0.0f));
        be.gemm(Trans::kNo, Trans::kYes, int(m), n, k, 1.0f, da.data(), db.data(), 0.0f, dc.data());
        be.set_precision(Precision::kF32);
        return dc.download();
      };
      EXPECT_TRUE(all_close(run(*gpu), run(*cpu), 1e-4, 1e-3)) << precision_name(p) << " m=" << m;
    }
}

TEST_F(KernelParity, BiasAndColumnSums) {
  for (size_t rows : kSizes) {
    const int cols = 19;
    const auto y = random_vector(rows * cols, 12), bias = random_vector(cols, 13),
               out0 = random_vector(cols, 14);
    auto run = [&](Backend& be, float beta) {
      auto dy = on(be, y), db = on(be, bias), out = on(be, out0);
      be.add_bias(dy.data(), db.data(), int(rows), cols);
      be.sum_rows(out.data(), dy.data(), int(rows), cols, beta);
      return std::vector{dy.download(), out.download()};
    };
    for (float beta : {0.0f, 0.5f}) {
      const auto want = run(*cpu, beta), got = run(*gpu, beta);
      EXPECT_TRUE(all_close(got[0], want[0], 1e-7, 1e-6)) << "add_bias rows=" << rows;
      EXPECT_TRUE(all_close(got[1], want[1], 1e-5, 1e-5))
          << "sum_rows rows=" << rows << " beta=" << beta;
    }
  }
}

TEST_F(KernelParity, LossesAndAccuracyAreStableAndAgree) {
  const int classes = 10;
  for (size_t rows : kSizes) {
    auto logits = random_vector(rows * classes, 15, -8.0f, 8.0f);
    logits[0] = 80.0f;  // exp(80) overflows a float: the stable softmax must not
    const auto y = labels(rows, classes, 16);
    auto run = [&](Backend& be) {
      auto dz = on(be, logits), grad = on(be, std::vector<float>(rows * classes, 0.0f));
      auto dy = on(be, y);
      const double xent =
          be.softmax_xent(grad.data(), dz.data(), dy.data(), int(rows), classes, 0.5f);
      const auto g_xent = grad.download();
      const double se =
          be.squared_error(grad.data(), dz.data(), dy.data(), int(rows), classes, 0.25f);
      const double fwd = be.softmax_xent(nullptr, dz.data(), dy.data(), int(rows), classes, 0.0f);
      const int64_t correct = be.count_correct(dz.data(), dy.data(), int(rows), classes);
      return std::tuple{xent, g_xent, se, grad.download(), fwd, correct};
    };
    const auto [x0, g0, s0, gs0, f0, c0] = run(*cpu);
    const auto [x1, g1, s1, gs1, f1, c1] = run(*gpu);
    EXPECT_TRUE(std::isfinite(x1));
    EXPECT_NEAR(x1, x0, 1e-9 * std::max(1.0, std::abs(x0))) << "rows=" << rows;
    EXPECT_NEAR(f1, x1, 1e-12 * std::max(1.0, std::abs(x1)));
    EXPECT_NEAR(s1, s0, 1e-9 * std::max(1.0, std::abs(s0))) << "rows=" << rows;
    EXPECT_TRUE(all_close(g1, g0, 1e-7, 1e-5)) << "softmax gradient rows=" << rows;
    EXPECT_TRUE(all_close(gs1, gs0, 1e-7, 1e-6)) << "squared-error gradient rows=" << rows;
    EXPECT_EQ(c1, c0) << "rows=" << rows;
  }
}

TEST_F(KernelParity, Im2colCol2imAndConvolution) {
  // n images of 6x5 with 3 channels, 3x3 and 5x5 kernels ('same', and 'valid': 4x3 and 2x1
  // outputs), 4 output channels.
  for (int n : {1, 2, 7})
    for (int k : {3, 5})
      for (bool valid : {false, true}) {
        const ConvShape s{n, 6, 5, 3, 4, k, valid};
        const size_t pixels = size_t(n) * s.out_h() * s.out_w();
        const size_t in = size_t(n) * 6 * 5 * 3, out = pixels * 4, cols = pixels * k * k * 3;
        const auto x = random_vector(in, 17), w = random_vector(size_t(4) * k * k * 3, 18),
                   b = random_vector(4, 19), dy = random_vector(out, 20),
                   dc = random_vector(cols, 21);
        auto run = [&](Backend& be) {
          auto dx_in = on(be, x), dw = on(be, w), db = on(be, b), ddy = on(be, dy),
               ddc = on(be, dc);
          DeviceArray<float> c(be, cols), back(be, in), y(be, out), gx(be, in);
          auto gw = on(be, std::vector<float>(w.size(), 0.0f)),
               gb = on(be, std::vector<float>(4, 0.0f));
          be.im2col(c.data(), dx_in.data(), n, 6, 5, 3, k, s.pad());
          be.col2im(back.data(), ddc.data(), n, 6, 5, 3, k, s.pad());
          be.conv2d_forward(s, dx_in.data(), dw.data(), db.data(), y.data());
          be.conv2d_backward(s, dx_in.data(), dw.data(), ddy.data(), gx.data(), gw.data(),
                             gb.data());
          return std::vector{c.download(),  back.download(), y.download(),
                             gx.download(), gw.download(),   gb.download()};
        };
        const auto want = run(*cpu), got = run(*gpu);
        const char* names[] = {"im2col", "col2im", "conv forward", "conv dx", "conv dw", "conv db"};
        for (size_t i = 0; i < want.size(); ++i)
          EXPECT_TRUE(all_close(got[i], want[i], 1e-5, 1e-4))
              << names[i] << " n=" << n << " k=" << k << " valid=" << valid;
      }
}

TEST_F(KernelParity, MaxPoolForwardAndBackward) {
  for (size_t n : kSizes) {
    if (n > 256) n = 1003;  // images of 4x6x5: keep the largest case a few MB
    const int h = 4, w = 6, c = 5;
    auto x = random_vector(n * h * w * c, 22);
    x[1 * c] = x[0];  // a tie in the first window: the first maximum wins on both
    const auto dy = random_vector(n * (h / 2) * (w / 2) * c, 23);
    auto run = [&](Backend& be) {
      auto dx_in = on(be, x), ddy = on(be, dy);
      DeviceArray<float> y(be, dy.size()), dx(be, x.size());
      DeviceArray<int32_t> arg(be, dy.size());
      be.maxpool2_forward(y.data(), arg.data(), dx_in.data(), int(n), h, w, c);
      be.maxpool2_backward(dx.data(), ddy.data(), arg.data(), int(n), h, w, c);
      return std::tuple{y.download(), arg.download(), dx.download()};
    };
    const auto [y0, a0, d0] = run(*cpu);
    const auto [y1, a1, d1] = run(*gpu);
    EXPECT_EQ(y1, y0) << "n=" << n;
    EXPECT_EQ(a1, a0) << "n=" << n;
    EXPECT_EQ(d1, d0) << "n=" << n;
  }
}

// The same inputs give the same bits on every run: reductions have a fixed order, no atomics.
TEST_F(KernelParity, ReductionsAreDeterministic) {
  const size_t n = 100003;
  const auto x = random_vector(n, 24), y = random_vector(n, 25);
  auto dx = on(*gpu, x), dy = on(*gpu, y);
  const double first = gpu->dot(dx.data(), dy.data(), n);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(gpu->dot(dx.data(), dy.data(), n), first);
}

}  // namespace
}  // namespace fedpar
