// Im2colConv; see im2col_conv.h.
#include "core/im2col_conv.h"

namespace fedpar {

void Im2colConv::forward(const ConvShape& s, const float* x, const float* w, const float* b,
                         float* y) {
  const int pixels = s.n * s.out_h() * s.out_w(), patch = s.k * s.k * s.c;
  cols_.reserve(be_, size_t(pixels) * patch);
  be_.im2col(cols_.data(), x, s.n, s.h, s.w, s.c, s.k, s.pad());
  be_.gemm(Trans::kNo, Trans::kYes, pixels, s.oc, patch, 1.0f, cols_.data(), w, 0.0f, y);
  be_.add_bias(y, b, pixels, s.oc);
}

void Im2colConv::backward(const ConvShape& s, const float* x, const float* w, const float* dy,
                          float* dx, float* dw, float* db) {
  const int pixels = s.n * s.out_h() * s.out_w(), patch = s.k * s.k * s.c;
  cols_.reserve(be_, size_t(pixels) * patch);
  be_.im2col(cols_.data(), x, s.n, s.h, s.w, s.c, s.k, s.pad());  // recomputed: no state kept
  be_.gemm(Trans::kYes, Trans::kNo, s.oc, patch, pixels, 1.0f, dy, cols_.data(), 1.0f, dw);
  be_.sum_rows(db, dy, pixels, s.oc, 1.0f);
  if (!dx) return;
  be_.gemm(Trans::kNo, Trans::kNo, pixels, patch, s.oc, 1.0f, dy, w, 0.0f, cols_.data());
  be_.col2im(dx, cols_.data(), s.n, s.h, s.w, s.c, s.k, s.pad());
}

}  // namespace fedpar
