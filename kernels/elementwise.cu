// Elementwise kernels: the CPU backend's op of the same name, the same float expression per
// element (either compiler may contract a multiply-add into an FMA, so tests allow an ulp or two).
#include "kernels/grid.cuh"
#include "kernels/launch.h"

namespace fedpar::cuda {
namespace {

__global__ void fill_k(float* x, float value, size_t n) { FEDPAR_GRID_LOOP(i, n) x[i] = value; }

__global__ void relu_forward_k(float* y, const float* x, size_t n) {
  FEDPAR_GRID_LOOP(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void relu_backward_k(float* dx, const float* dy, const float* y, size_t n) {
  FEDPAR_GRID_LOOP(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void axpy_k(float* y, const float* x, float a, size_t n) {
  FEDPAR_GRID_LOOP(i, n) y[i] += a * x[i];
}

__global__ void scale_k(float* x, float a, size_t n) { FEDPAR_GRID_LOOP(i, n) x[i] *= a; }

__global__ void add_bias_k(float* y, const float* bias, size_t rows, size_t cols) {
  FEDPAR_GRID_LOOP(i, rows * cols) y[i] += bias[i % cols];
}

// d = g + wd w;  v = momentum v + d;  w -= lr (nesterov ? d + momentum v : v); applied -= the same.
__global__ void sgd_step_k(float* w, float* v, const float* g, float lr, float momentum, float wd,
                           bool nesterov, size_t n, float* applied) {
  FEDPAR_GRID_LOOP(i, n) {
    const float d = g[i] + wd * w[i];
    float u = d;
    if (momentum != 0.0f) {
      v[i] = momentum * v[i] + d;
      u = nesterov ? d + momentum * v[i] : v[i];
    }
    w[i] -= lr * u;
    if (applied) applied[i] -= lr * u;
  }
}

}  // namespace

void fill(float* x, float value, size_t n, cudaStream_t s) {
  if (n) fill_k<<<blocks_for(n), kThreads, 0, s>>>(x, value, n);
}
void relu_forward(float* y, const float* x, size_t n, cudaStream_t s) {
  if (n) relu_forward_k<<<blocks_for(n), kThreads, 0, s>>>(y, x, n);
}
void relu_backward(float* dx, const float* dy, const float* y, size_t n, cudaStream_t s) {
  if (n) relu_backward_k<<<blocks_for(n), kThreads, 0, s>>>(dx, dy, y, n);
}
void axpy(float* y, const float* x, float a, size_t n, cudaStream_t s) {
  if (n) axpy_k<<<blocks_for(n), kThreads, 0, s>>>(y, x, a, n);
}
void scale(float* x, float a, size_t n, cudaStream_t s) {
  if (n) scale_k<<<blocks_for(n), kThreads, 0, s>>>(x, a, n);
}
void add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t s) {
  const size_t n = size_t(rows) * size_t(cols);
  if (n) add_bias_k<<<blocks_for(n), kThreads, 0, s>>>(y, bias, size_t(rows), size_t(cols));
}
void sgd_step(float* w, float* v, const float* g, float lr, float momentum, float wd, bool nesterov,
              size_t n, float* applied, cudaStream_t s) {
  if (n)
    sgd_step_k<<<blocks_for(n), kThreads, 0, s>>>(w, v, g, lr, momentum, wd, nesterov, n, applied);
}

}  // namespace fedpar::cuda
