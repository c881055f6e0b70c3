// Loss kernels, one thread per row (rows are samples; classes are few): the per-row loss goes to
// a double buffer that `sum` reduces in a fixed order, and the gradient is written in place.
// Numerically stable softmax: exponents of z - max(z), sums in double, as in the CPU backend.
#include "kernels/grid.cuh"
#include "kernels/launch.h"

namespace fedpar::cuda {
namespace {

__global__ void softmax_xent_k(double* row_loss, float* dlogits, const float* logits,
                               const int32_t* labels, int rows, int classes, float grad_scale) {
  FEDPAR_GRID_LOOP(r, size_t(rows)) {
    const float* z = logits + r * classes;
    float zmax = z[0];
    for (int c = 1; c < classes; ++c) zmax = fmaxf(zmax, z[c]);
    double sum = 0.0;
    for (int c = 0; c < classes; ++c) sum += exp(double(z[c] - zmax));
    const int y = labels[r];
    row_loss[r] = log(sum) - double(z[y] - zmax);
    if (dlogits) {
      float* d = dlogits + r * classes;
      const double inv = 1.0 / sum;
      for (int c = 0; c < classes; ++c) {
        const double p = exp(double(z[c] - zmax)) * inv;
        d[c] = grad_scale * float(p - (c == y ? 1.0 : 0.0));
      }
    }
  }
}

__global__ void squared_error_k(double* row_loss, float* dpred, const float* pred,
                                const int32_t* labels, int rows, int outputs, float grad_scale) {
  FEDPAR_GRID_LOOP(r, size_t(rows)) {
    double total = 0.0;
    for (int c = 0; c < outputs; ++c) {
      const float e = pred[r * outputs + c] - (c == labels[r] ? 1.0f : 0.0f);
      total += 0.5 * double(e) * double(e);
      if (dpred) dpred[r * outputs + c] = grad_scale * e;
    }
    row_loss[r] = total;
  }
}

// 1 when the row's first maximum is at its label.
__global__ void correct_k(double* row_correct, const float* scores, const int32_t* labels, int rows,
                          int classes) {
  FEDPAR_GRID_LOOP(r, size_t(rows)) {
    const float* s = scores + r * classes;
    int best = 0;
    for (int c = 1; c < classes; ++c)
      if (s[c] > s[best]) best = c;
    row_correct[r] = best == labels[r] ? 1.0 : 0.0;
  }
}

}  // namespace

void softmax_xent_rows(double* row_loss, float* dlogits, const float* logits, const int32_t* labels,
                       int rows, int classes, float grad_scale, cudaStream_t s) {
  if (rows > 0)
    softmax_xent_k<<<blocks_for(size_t(rows)), kThreads, 0, s>>>(row_loss, dlogits, logits, labels,
                                                                 rows, classes, grad_scale);
}

void squared_error_rows(double* row_loss, float* dpred, const float* pred, const int32_t* labels,
                        int rows, int outputs, float grad_scale, cudaStream_t s) {
  if (rows > 0)
    squared_error_k<<<blocks_for(size_t(rows)), kThreads, 0, s>>>(row_loss, dpred, pred, labels,
                                                                  rows, outputs, grad_scale);
}

void correct_rows(double* row_correct, const float* scores, const int32_t* labels, int rows,
                  int classes, cudaStream_t s) {
  if (rows > 0)
    correct_k<<<blocks_for(size_t(rows)), kThreads, 0, s>>>(row_correct, scores, labels, rows,
                                                            classes);
}

}  // namespace fedpar::cuda
