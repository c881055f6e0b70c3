// The CPU backend's ops against naive double-precision loops that define them.
#include "core/backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/im2col_conv.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::all_close;
using testing::random_vector;

class CpuOps : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> be = make_backend("cpu");
};

// c = alpha * op(a) op(b) + beta * c, in double.
std::vector<float> gemm_ref(bool ta, bool tb, int m, int n, int k, float alpha,
                            const std::vector<float>& a, const std::vector<float>& b, float beta,
                            std::vector<float> c) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p)
        s += double(ta ? a[size_t(p) * m + i] : a[size_t(i) * k + p]) *
             double(tb ? b[size_t(j) * k + p] : b[size_t(p) * n + j]);
      c[size_t(i) * n + j] =
          float(alpha * s + (beta == 0.0f ? 0.0 : beta * double(c[size_t(i) * n + j])));
    }
  return c;
}

TEST_F(CpuOps, GemmAllTransposesAndBetas) {
  int seed = 0;
  for (auto [m, n, k] : {std::tuple{1, 1, 1}, {3, 5, 7}, {17, 13, 31}, {64, 10, 200}, {2, 0, 3}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 1.0f, 0.5f}) {
          auto a = random_vector(size_t(m) * k, ++seed);
          auto b = random_vector(size_t(k) * n, ++seed);
          auto c = random_vector(size_t(m) * n, ++seed);
          auto want = gemm_ref(ta, tb, m, n, k, 0.75f, a, b, beta, c);
          be->gemm(ta ? Trans::kYes : Trans::kNo, tb ? Trans::kYes : Trans::kNo, m, n, k, 0.75f,
                   a.data(), b.data(), beta, c.data());
          EXPECT_TRUE(all_close(c, want, 1e-5, 1e-5))
              << m << "x" << n << "x" << k << " ta=" << ta << " tb=" << tb << " beta=" << beta;
        }
}

TEST_F(CpuOps, BiasAndColumnSums) {
  auto y = random_vector(12, 1), bias = random_vector(4, 2);
  auto want = y;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) want[r * 4 + c] += bias[c];
  be->add_bias(y.data(), bias.data(), 3, 4);
  EXPECT_TRUE(all_close(y, want, 0, 0));

  std::vector<float> out = {1, 2, 3, 4};
  std::vector<float> sums = {1, 2, 3, 4};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) sums[c] += y[r * 4 + c];
  be->sum_rows(out.data(), y.data(), 3, 4, 1.0f);
  EXPECT_TRUE(all_close(out, sums, 1e-6, 1e-6));
}

TEST_F(CpuOps, SoftmaxCrossEntropyMatchesDefinition) {
  const int rows = 5, classes = 7;
  auto z = random_vector(rows * classes, 3, -20.0f, 20.0f);  // large logits: stability matters
  std::vector<int32_t> y = {0, 6, 3, 3, 1};
  std::vector<float> d(rows * classes);
  const double loss = be->softmax_xent(d.data(), z.data(), y.data(), rows, classes, 0.5f);
  double want = 0;
  std::vector<float> want_d(rows * classes);
  for (int r = 0; r < rows; ++r) {
    double m = -1e300, s = 0;
    for (int c = 0; c < classes; ++c) m = std::max(m, double(z[r * classes + c]));
    for (int c = 0; c < classes; ++c) s += std::exp(double(z[r * classes + c]) - m);
    want += m + std::log(s) - z[r * classes + y[r]];
    for (int c = 0; c < classes; ++c)
      want_d[r * classes + c] = float(0.5 * (std::exp(z[r * classes + c] - m) / s - (c == y[r])));
  }
  EXPECT_NEAR(loss, want, 1e-8 * std::abs(want));  // float vs double shift by the max
  EXPECT_TRUE(all_close(d, want_d, 1e-7, 1e-6));
  EXPECT_TRUE(std::isfinite(be->softmax_xent(nullptr, z.data(), y.data(), rows, classes, 0.0f)));
}

TEST_F(CpuOps, SquaredErrorAgainstOneHot) {
  std::vector<float> p = {0.5f, 0.25f, -1.0f, 2.0f};
  std::vector<int32_t> y = {1, 0};
  std::vector<float> d(4);
  const double loss = be->squared_error(d.data(), p.data(), y.data(), 2, 2, 2.0f);
  // row 0: (0.5-0)^2 + (0.25-1)^2 = 0.8125; row 1: (-1-1)^2 + 2^2 = 8; halves: 0.40625 + 4
  EXPECT_DOUBLE_EQ(loss, 4.40625);
  EXPECT_EQ(d, (std::vector<float>{1.0f, -1.5f, -4.0f, 4.0f}));
}

TEST_F(CpuOps, CountCorrectTakesFirstMaximum) {
  std::vector<float> s = {1, 3, 3, 0, 0, 1, 5, 5, 5};
  std::vector<int32_t> y = {1, 2, 0};
  EXPECT_EQ(be->count_correct(s.data(), y.data(), 3, 3), 3);
  y = {2, 2, 1};
  EXPECT_EQ(be->count_correct(s.data(), y.data(), 3, 3), 1);
}

TEST_F(CpuOps, Im2colAndCol2imAreAdjoint) {
  // <im2col(x), c> == <x, col2im(c)> for every x, c: the backward pass is the exact transpose.
  const int n = 2, h = 6, w = 5, c = 3, k = 5, pad = 2;
  auto x = random_vector(size_t(n) * h * w * c, 4);
  auto cols_dir = random_vector(size_t(n) * h * w * k * k * c, 5);
  std::vector<float> cols(cols_dir.size()), dx(x.size());
  be->im2col(cols.data(), x.data(), n, h, w, c, k, pad);
  be->col2im(dx.data(), cols_dir.data(), n, h, w, c, k, pad);
  const double lhs = be->dot(cols.data(), cols_dir.data(), cols.size());
  const double rhs = be->dot(x.data(), dx.data(), x.size());
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(lhs));
  // The centre tap of each patch is the pixel itself.
  const size_t centre = (size_t(pad) * k + pad) * c;
  for (int p = 0; p < n * h * w; ++p)
    for (int ch = 0; ch < c; ++ch)
      ASSERT_EQ(cols[size_t(p) * k * k * c + centre + ch], x[size_t(p) * c + ch]);
}

TEST_F(CpuOps, Im2colAndCol2imAreAdjointWithoutPadding) {
  // 'valid': a 3x3 kernel over 6x5 images has 4x3 output pixels, each a window inside the image
  const int n = 2, h = 6, w = 5, c = 3, k = 3, oh = 4, ow = 3;
  auto x = random_vector(size_t(n) * h * w * c, 6);
  auto cols_dir = random_vector(size_t(n) * oh * ow * k * k * c, 7);
  std::vector<float> cols(cols_dir.size()), dx(x.size());
  be->im2col(cols.data(), x.data(), n, h, w, c, k, 0);
  be->col2im(dx.data(), cols_dir.data(), n, h, w, c, k, 0);
  const double lhs = be->dot(cols.data(), cols_dir.data(), cols.size());
  const double rhs = be->dot(x.data(), dx.data(), x.size());
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(lhs));
  // output pixel (oy, ox)'s tap (ky, kx) is input pixel (oy + ky, ox + kx)
  for (int b = 0; b < n; ++b)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int ky = 0; ky < k; ++ky)
          for (int kx = 0; kx < k; ++kx)
            ASSERT_EQ(cols[((size_t(b) * oh + oy) * ow + ox) * k * k * c + (ky * k + kx) * c],
                      x[((size_t(b) * h + oy + ky) * w + ox + kx) * c]);
}

TEST_F(CpuOps, ConvolutionMatchesIm2colReference) {
  // The backend's convolution (oneDNN when built with it) against im2col + gemm, which defines it.
  Im2colConv ref(*be);
  int seed = 100;
  for (ConvShape s :
       {ConvShape{2, 6, 5, 3, 4, 3}, ConvShape{3, 28, 28, 1, 8, 5}, ConvShape{2, 14, 14, 8, 6, 5},
        ConvShape{1, 1, 1, 1, 1, 1}, ConvShape{5, 7, 7, 16, 32, 5},
        // 'valid' (no padding), as in LeNet: 28 -> 24 and 12 -> 8, and a non-square input
        ConvShape{3, 28, 28, 1, 6, 5, true}, ConvShape{2, 12, 12, 6, 16, 5, true},
        ConvShape{2, 6, 5, 3, 4, 3, true}}) {
    const size_t nx = size_t(s.n) * s.h * s.w * s.c,
                 ny = size_t(s.n) * s.out_h() * s.out_w() * s.oc;
    const size_t nw = size_t(s.oc) * s.k * s.k * s.c;
    auto x = random_vector(nx, ++seed), w = random_vector(nw, ++seed);
    auto b = random_vector(size_t(s.oc), ++seed), dy = random_vector(ny, ++seed);
    std::vector<float> y(ny), y_ref(ny);
    be->conv2d_forward(s, x.data(), w.data(), b.data(), y.data());
    ref.forward(s, x.data(), w.data(), b.data(), y_ref.data());
    EXPECT_TRUE(all_close(y, y_ref, 1e-5, 1e-4)) << "forward n=" << s.n << " c=" << s.c;
    // Gradients are ADDED to what is there: start both from the same non-zero values.
    auto dw = random_vector(nw, ++seed), db = random_vector(size_t(s.oc), ++seed);
    auto dw_ref = dw, db_ref = db;
    std::vector<float> dx(nx), dx_ref(nx);
    be->conv2d_backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
    ref.backward(s, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data());
    EXPECT_TRUE(all_close(dx, dx_ref, 1e-5, 1e-4)) << "dx n=" << s.n << " c=" << s.c;
    EXPECT_TRUE(all_close(dw, dw_ref, 1e-4, 1e-4)) << "dw n=" << s.n << " c=" << s.c;
    EXPECT_TRUE(all_close(db, db_ref, 1e-4, 1e-4)) << "db n=" << s.n << " c=" << s.c;
    std::vector<float> dw2 = dw;  // dx = null: weights still get their gradient
    be->conv2d_backward(s, x.data(), w.data(), dy.data(), nullptr, dw2.data(), db.data());
    EXPECT_NE(dw2, dw);
  }
}

TEST_F(CpuOps, ValidConvolutionIsOneDotProductPerFullOverlap) {
  // A 'valid' 3x3 kernel over a 3x4 image has 1x2 outputs, each the dot product of the kernel with
  // the window it covers, plus the bias; dx spreads dy back over those windows.
  const ConvShape s{1, 3, 4, 1, 1, 3, true};
  ASSERT_EQ(s.out_h(), 1);
  ASSERT_EQ(s.out_w(), 2);
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<float> w = {1, 0, -1, 2, 0, -2, 1, 0, -1}, b = {0.5f};
  std::vector<float> y(2);
  be->conv2d_forward(s, x.data(), w.data(), b.data(), y.data());
  // left window rows (1 2 3), (5 6 7), (9 10 11): (1-3) + 2 (5-7) + (9-11) = -8
  EXPECT_FLOAT_EQ(y[0], -8 + 0.5f);
  EXPECT_FLOAT_EQ(y[1], -8 + 0.5f);  // the image is linear along x: the same difference
  const std::vector<float> dy = {1, 10};
  std::vector<float> dx(12), dw(9, 0.0f), db(1, 0.0f);
  be->conv2d_backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  // column 0 is read only by the left window's tap kx = 0, column 3 only by the right's kx = 2
  EXPECT_FLOAT_EQ(dx[0], 1 * w[0]);
  EXPECT_FLOAT_EQ(dx[3], 10 * w[2]);
  EXPECT_FLOAT_EQ(dx[1], 1 * w[1] + 10 * w[0]);
  EXPECT_FLOAT_EQ(db[0], 11);
  EXPECT_FLOAT_EQ(dw[0], 1 * x[0] + 10 * x[1]);  // tap (0, 0) saw x[0] and x[1]
}

TEST_F(CpuOps, MaxPoolForwardBackward) {
  // one sample, 2x4 image, 1 channel -> 1x2
  std::vector<float> x = {1, 9, 2, 3, 4, 5, 8, 8};
  std::vector<float> y(2);
  std::vector<int32_t> arg(2);
  be->maxpool2_forward(y.data(), arg.data(), x.data(), 1, 2, 4, 1);
  EXPECT_EQ(y, (std::vector<float>{9, 8}));
  EXPECT_EQ(arg, (std::vector<int32_t>{1, 2}));  // first maximum wins the 8-8 tie
  std::vector<float> dy = {10, 20}, dx(8);
  be->maxpool2_backward(dx.data(), dy.data(), arg.data(), 1, 2, 4, 1);
  EXPECT_EQ(dx, (std::vector<float>{0, 10, 0, 0, 0, 0, 20, 0}));
}

TEST_F(CpuOps, SgdStepMatchesPyTorchFormula) {
  std::vector<float> w = {1.0f, -2.0f}, v = {0.5f, 0.0f}, g = {0.1f, 0.2f};
  be->sgd_step(w.data(), v.data(), g.data(), 0.1f, 0.9f, 0.01f, false, 2, nullptr);
  // d = g + wd*w = {0.11, 0.18}; v = 0.9 v + d = {0.56, 0.18}; w -= 0.1 v
  EXPECT_FLOAT_EQ(v[0], 0.56f);
  EXPECT_FLOAT_EQ(v[1], 0.18f);
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.056f);
  EXPECT_FLOAT_EQ(w[1], -2.0f - 0.018f);
  std::vector<float> w2 = {1.0f}, v2 = {0.5f}, g2 = {0.1f};
  be->sgd_step(w2.data(), v2.data(), g2.data(), 0.1f, 0.9f, 0.0f, true, 1, nullptr);
  // v = 0.45 + 0.1 = 0.55; nesterov: w -= 0.1 * (0.1 + 0.9 * 0.55)
  EXPECT_FLOAT_EQ(w2[0], 1.0f - 0.1f * (0.1f + 0.9f * 0.55f));
  std::vector<float> w3 = {1.0f}, g3 = {0.5f};
  be->sgd_step(w3.data(), nullptr, g3.data(), 0.2f, 0.0f, 0.0f, false, 1, nullptr);
  EXPECT_FLOAT_EQ(w3[0], 0.9f);
}

TEST_F(CpuOps, SgdStepAccumulatesTheAppliedChangeWithoutWsRounding) {
  // w is large, the step tiny: w - lr*g rounds to w's ulp, the accumulated step keeps its bits.
  for (float momentum : {0.0f, 0.9f}) {
    std::vector<float> w = {1000.0f, -3.0f}, v = {0.0f, 0.0f}, g = {1e-3f, 0.25f}, applied = {0, 0};
    const std::vector<float> w0 = w;
    be->sgd_step(w.data(), v.data(), g.data(), 0.01f, momentum, 0.0f, false, 2, applied.data());
    EXPECT_EQ(applied[0], -0.01f * 1e-3f);  // exactly the step, unrounded by w
    EXPECT_EQ(applied[1], -0.01f * 0.25f);
    EXPECT_NE(w[0] - w0[0], applied[0]);  // the endpoint difference lost it
    EXPECT_EQ(w[1], w0[1] - 0.01f * 0.25f);
    be->sgd_step(w.data(), v.data(), g.data(), 0.01f, momentum, 0.0f, false, 2, applied.data());
    EXPECT_FLOAT_EQ(applied[1], -0.01f * 0.25f * (2.0f + momentum));  // a running sum
  }
}

TEST_F(CpuOps, ReluAndAxpy) {
  std::vector<float> x = {-1, 0, 2}, y(3), dy = {5, 6, 7}, dx(3);
  be->relu_forward(y.data(), x.data(), 3);
  EXPECT_EQ(y, (std::vector<float>{0, 0, 2}));
  be->relu_backward(dx.data(), dy.data(), y.data(), 3);
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 7}));
  be->axpy(y.data(), dy.data(), 2.0f, 3);
  EXPECT_EQ(y, (std::vector<float>{10, 12, 16}));
  be->scale(y.data(), 0.5f, 3);
  EXPECT_EQ(y, (std::vector<float>{5, 6, 8}));
  EXPECT_DOUBLE_EQ(be->dot(y.data(), dy.data(), 3), 25.0 + 36.0 + 56.0);
}

// A batch's gather, small (inline) and large enough to be split over 2 threads: every row lands
// whole in its slot, whichever thread copies it.
TEST(CpuGather, RowsLandInTheirSlotsOnOneAndTwoThreads) {
  const size_t dim = 784, rows = 1000;
  const auto src = random_vector(rows * dim, 7);
  std::vector<uint32_t> idx(600);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = uint32_t((i * 577 + 13) % rows);
  for (int threads : {1, 2})
    for (size_t n : {size_t(3), idx.size()}) {
      auto be = make_backend("cpu", threads);
      std::vector<float> out(n * dim, -1.0f);
      be->gather_rows(out.data(), src.data(), std::span(idx).first(n), dim);
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(std::equal(out.begin() + ptrdiff_t(i * dim),
                               out.begin() + ptrdiff_t((i + 1) * dim),
                               src.begin() + ptrdiff_t(idx[i] * dim)))
            << "slot " << i << " of " << n << " on " << threads << " thread(s)";
    }
}

TEST(Backends, UnknownDeviceNamesTheChoices) {
  try {
    make_backend("tpu");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("valid devices: cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fedpar
