// axpy_kernel: y += a * x, grid-stride. Defined by axpy_ref in cuda_info.cc.

#include <algorithm>

#include "kernels/cuda_check.h"
#include "kernels/cuda_info.h"

namespace fedpar {

namespace {
__global__ void axpy_kernel(float* y, const float* x, float a, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(blockDim.x) * gridDim.x)
    y[i] += a * x[i];
}

// Minimal owner of a device allocation (the full RAII set comes with the CUDA backend).
struct DeviceFloats {
  float* p = nullptr;
  explicit DeviceFloats(size_t n) { CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(float))); }
  ~DeviceFloats() { cudaFree(p); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
};
}  // namespace

void axpy_on_device(std::vector<float>& y, const std::vector<float>& x, float a) {
  FEDPAR_CHECK(x.size() == y.size()) << "size mismatch";
  if (cuda_device_count() == 0) throw Error("no CUDA device");
  const size_t n = y.size();
  DeviceFloats dy(n), dx(n);
  CUDA_CHECK(cudaMemcpy(dy.p, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dx.p, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const int threads = 256;
  const int blocks = int(std::min<size_t>((n + threads - 1) / threads + 1, 4096));
  axpy_kernel<<<blocks, threads>>>(dy.p, dx.p, a, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpy(y.data(), dy.p, n * sizeof(float), cudaMemcpyDeviceToHost));
}

}  // namespace fedpar
