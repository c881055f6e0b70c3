// CPU references of the CUDA kernels (always built; they define what the kernels compute).
#include "kernels/cuda_info.h"

namespace fedpar {

void axpy_ref(float* y, const float* x, float a, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace fedpar
