// Deterministic reductions: each block sums a fixed stretch of the input through a shared-memory
// tree, then one block sums the block partials the same way. No atomics, so the bits do not depend
// on scheduling. Partials are double, as in the CPU backend.
#include "kernels/grid.cuh"
#include "kernels/launch.h"

namespace fedpar::cuda {
namespace {

constexpr unsigned kMaxBlocks = 1024;  // partials the second pass sums in one block

unsigned reduce_blocks(size_t n) {
  return unsigned(std::min<size_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

// Sums a block's values in shared memory; thread 0 gets the total.
__device__ double block_sum(double v) {
  __shared__ double s[kThreads];
  s[threadIdx.x] = v;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
    __syncthreads();
  }
  return s[0];
}

// Block b sums items b, b + B, b + 2B ... per thread (a fixed assignment), then its tree.
template <typename Term>
__global__ void partial_k(double* partials, size_t n, Term term) {
  double v = 0.0;
  FEDPAR_GRID_LOOP(i, n) v += term(i);
  const double total = block_sum(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void final_k(double* result, const double* partials, unsigned blocks) {
  double v = 0.0;
  for (unsigned i = threadIdx.x; i < blocks; i += blockDim.x) v += partials[i];
  const double total = block_sum(v);
  if (threadIdx.x == 0) *result = total;
}

struct DotTerm {
  const float* x;
  const float* y;
  __device__ double operator()(size_t i) const { return double(x[i]) * double(y[i]); }
};
struct SumTerm {
  const double* x;
  __device__ double operator()(size_t i) const { return x[i]; }
};

template <typename Term>
void reduce(double* result, size_t n, Term term, double* scratch, cudaStream_t s) {
  const unsigned blocks = std::max(1u, reduce_blocks(n));
  partial_k<<<blocks, kThreads, 0, s>>>(scratch, n, term);
  final_k<<<1, kThreads, 0, s>>>(result, scratch, blocks);
}

__global__ void sum_rows_k(float* out, const float* x, int rows, int cols, float beta) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = beta == 0.0f ? 0.0f : beta * out[c];
  for (int r = 0; r < rows; ++r) acc += x[size_t(r) * cols + c];
  out[c] = acc;
}

}  // namespace

size_t reduce_scratch_doubles(size_t) { return kMaxBlocks; }

void dot(double* result, const float* x, const float* y, size_t n, double* scratch,
         cudaStream_t s) {
  reduce(result, n, DotTerm{x, y}, scratch, s);
}

void sum(double* result, const double* x, size_t n, double* scratch, cudaStream_t s) {
  reduce(result, n, SumTerm{x}, scratch, s);
}

void sum_rows(float* out, const float* x, int rows, int cols, float beta, cudaStream_t s) {
  if (cols > 0)
    sum_rows_k<<<(unsigned(cols) + kThreads - 1) / kThreads, kThreads, 0, s>>>(out, x, rows, cols,
                                                                               beta);
}

}  // namespace fedpar::cuda
