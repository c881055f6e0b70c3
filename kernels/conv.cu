// Convolution helpers (im2col / col2im, NHWC, stride 1, zero padding) and 2x2 max-pooling. Every
// output element is computed by one thread from its inputs (gathers, never scatter-adds), so the
// results are deterministic and match the CPU backend's order of summation.
#include "kernels/grid.cuh"
#include "kernels/launch.h"

namespace fedpar::cuda {
namespace {

// cols(n*oh*ow, k*k*c): element (output pixel p, tap (ky, kx), channel ch) = x at
// (p + (ky, kx) - pad) or 0; oh = h + 2 pad - k + 1, ow alike.
__global__ void im2col_k(float* cols, const float* x, int n, int h, int w, int c, int k, int pad) {
  const size_t patch = size_t(k) * k * c;
  const int oh = h + 2 * pad - k + 1, ow = w + 2 * pad - k + 1;
  FEDPAR_GRID_LOOP(i, size_t(n) * oh * ow * patch) {
    const size_t pixel = i / patch, t = i % patch;
    const int ch = int(t % c), kx = int(t / c % k), ky = int(t / c / k);
    const int ox = int(pixel % ow), oy = int(pixel / ow % oh);
    const size_t b = pixel / (size_t(ow) * oh);
    const int iy = oy + ky - pad, ix = ox + kx - pad;
    cols[i] = iy >= 0 && iy < h && ix >= 0 && ix < w ? x[((b * h + iy) * w + ix) * c + ch] : 0.0f;
  }
}

// dx at input pixel (iy, ix), channel ch = sum over the taps (ky, kx) that read it, from output
// pixel (iy - ky + pad, ix - kx + pad), in the CPU backend's order (output pixels row-major).
__global__ void col2im_k(float* dx, const float* dcols, int n, int h, int w, int c, int k,
                         int pad) {
  const size_t patch = size_t(k) * k * c;
  const int oh = h + 2 * pad - k + 1, ow = w + 2 * pad - k + 1;
  FEDPAR_GRID_LOOP(i, size_t(n) * h * w * c) {
    const int ch = int(i % c), ix = int(i / c % w), iy = int(i / c / w % h);
    const size_t b = i / (size_t(c) * w * h);
    float acc = 0.0f;
    for (int ky = k - 1; ky >= 0; --ky) {
      const int oy = iy - ky + pad;
      if (oy < 0 || oy >= oh) continue;
      for (int kx = k - 1; kx >= 0; --kx) {
        const int ox = ix - kx + pad;
        if (ox < 0 || ox >= ow) continue;
        acc += dcols[((b * oh + oy) * ow + ox) * patch + (size_t(ky) * k + kx) * c + ch];
      }
    }
    dx[i] = acc;
  }
}

__global__ void maxpool2_forward_k(float* y, int32_t* argmax, const float* x, int n, int h, int w,
                                   int c) {
  const int oh = h / 2, ow = w / 2;
  FEDPAR_GRID_LOOP(o, size_t(n) * oh * ow * c) {
    const int ch = int(o % c), ox = int(o / c % ow), oy = int(o / c / ow % oh);
    const size_t b = o / (size_t(c) * ow * oh);
    auto at = [&](int win) {
      return ((b * h + 2 * size_t(oy) + win / 2) * w + 2 * size_t(ox) + win % 2) * c + ch;
    };
    int32_t best = 0;
    for (int32_t win = 1; win < 4; ++win)
      if (x[at(win)] > x[at(best)]) best = win;  // the first maximum wins ties
    y[o] = x[at(best)];
    argmax[o] = best;
  }
}

// Windows do not overlap: each input element belongs to one window and receives dy there or 0.
__global__ void maxpool2_backward_k(float* dx, const float* dy, const int32_t* argmax, int n, int h,
                                    int w, int c) {
  const int oh = h / 2, ow = w / 2;
  FEDPAR_GRID_LOOP(i, size_t(n) * h * w * c) {
    const int ch = int(i % c), ix = int(i / c % w), iy = int(i / c / w % h);
    const size_t b = i / (size_t(c) * w * h);
    const int oy = iy / 2, ox = ix / 2;
    float v = 0.0f;
    if (oy < oh && ox < ow) {
      const size_t o = ((b * oh + oy) * ow + ox) * c + ch;
      if (argmax[o] == (iy % 2) * 2 + ix % 2) v = dy[o];
    }
    dx[i] = v;
  }
}

}  // namespace

void im2col(float* cols, const float* x, int n, int h, int w, int c, int k, int pad,
            cudaStream_t s) {
  const size_t total =
      size_t(n) * (h + 2 * pad - k + 1) * (w + 2 * pad - k + 1) * size_t(k) * k * c;
  if (total) im2col_k<<<blocks_for(total), kThreads, 0, s>>>(cols, x, n, h, w, c, k, pad);
}

void col2im(float* dx, const float* dcols, int n, int h, int w, int c, int k, int pad,
            cudaStream_t s) {
  const size_t total = size_t(n) * h * w * c;
  if (total) col2im_k<<<blocks_for(total), kThreads, 0, s>>>(dx, dcols, n, h, w, c, k, pad);
}

void maxpool2_forward(float* y, int32_t* argmax, const float* x, int n, int h, int w, int c,
                      cudaStream_t s) {
  const size_t total = size_t(n) * (h / 2) * (w / 2) * c;
  if (total) maxpool2_forward_k<<<blocks_for(total), kThreads, 0, s>>>(y, argmax, x, n, h, w, c);
}

void maxpool2_backward(float* dx, const float* dy, const int32_t* argmax, int n, int h, int w,
                       int c, cudaStream_t s) {
  const size_t total = size_t(n) * h * w * c;
  if (total) maxpool2_backward_k<<<blocks_for(total), kThreads, 0, s>>>(dx, dy, argmax, n, h, w, c);
}

}  // namespace fedpar::cuda
