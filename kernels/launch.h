// Launchers of fedpar's CUDA kernels, callable from host C++ (the CUDA backend in cuda_backend.cc).
// Each kernel's contract is the CPU backend's op of the same name (core/backend.h): that op is the
// reference the kernel tests compare against. Every launcher enqueues on `stream` and returns
// without waiting; reductions whose result the host needs write it to device memory, and the
// backend copies it back. Reductions use a fixed tree (no atomics), so results are the same bits
// on every run. This header is C++17 (nvcc compiles the .cu files; the backend includes it too).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fedpar::cuda {

// ---- elementwise (kernels/elementwise.cu) ----
void fill(float* x, float value, size_t n, cudaStream_t s);
void relu_forward(float* y, const float* x, size_t n, cudaStream_t s);
void relu_backward(float* dx, const float* dy, const float* y, size_t n, cudaStream_t s);
void axpy(float* y, const float* x, float a, size_t n, cudaStream_t s);
void scale(float* x, float a, size_t n, cudaStream_t s);
void add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t s);
void sgd_step(float* w, float* v, const float* g, float lr, float momentum, float wd, bool nesterov,
              size_t n, float* applied, cudaStream_t s);

// ---- reductions (kernels/reduce.cu) ----
// out(cols) = beta * out + column sums of x(rows, cols); one thread per column, rows in order.
void sum_rows(float* out, const float* x, int rows, int cols, float beta, cudaStream_t s);
// *result = sum_i x[i] * y[i] in double. `scratch` holds reduce_scratch_doubles(n) doubles.
size_t reduce_scratch_doubles(size_t n);
void dot(double* result, const float* x, const float* y, size_t n, double* scratch, cudaStream_t s);
// *result = sum of n doubles (a fixed tree); `scratch` as above.
void sum(double* result, const double* x, size_t n, double* scratch, cudaStream_t s);

// ---- losses (kernels/loss.cu): per-row values into row_out (n = rows), summed by `sum` ----
void softmax_xent_rows(double* row_loss, float* dlogits, const float* logits, const int32_t* labels,
                       int rows, int classes, float grad_scale, cudaStream_t s);
void squared_error_rows(double* row_loss, float* dpred, const float* pred, const int32_t* labels,
                        int rows, int outputs, float grad_scale, cudaStream_t s);
void correct_rows(double* row_correct, const float* scores, const int32_t* labels, int rows,
                  int classes, cudaStream_t s);

// ---- convolution helpers and pooling (kernels/conv.cu), NHWC ----
void im2col(float* cols, const float* x, int n, int h, int w, int c, int k, int pad,
            cudaStream_t s);
// Gathers, per input pixel, the taps that read it (no scatter, no atomics).
void col2im(float* dx, const float* dcols, int n, int h, int w, int c, int k, int pad,
            cudaStream_t s);
void maxpool2_forward(float* y, int32_t* argmax, const float* x, int n, int h, int w, int c,
                      cudaStream_t s);
void maxpool2_backward(float* dx, const float* dy, const int32_t* argmax, int n, int h, int w,
                       int c, cudaStream_t s);

// ---- precision (kernels/convert.cu): n floats to 16-bit bf16 / fp16 values in `out` ----
void to_bf16(void* out, const float* x, size_t n, cudaStream_t s);
void to_f16(void* out, const float* x, size_t n, cudaStream_t s);

}  // namespace fedpar::cuda
