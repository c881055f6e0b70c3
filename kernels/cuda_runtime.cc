// Device discovery for a CUDA build (host code; compiled by the C++ compiler).
#include <fmt/format.h>

#include <algorithm>

#include "kernels/cuda_check.h"
#include "kernels/cuda_info.h"

namespace fedpar {

bool cuda_compiled() { return true; }

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string cuda_describe() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  const int n = cuda_device_count();
  std::string out =
      fmt::format("CUDA runtime {}.{}, {} device(s)", runtime / 1000, (runtime % 1000) / 10, n);
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) == cudaSuccess)
      out += fmt::format("; {}: {} (sm_{}{})", i, p.name, p.major, p.minor);
  }
  return out;
}

}  // namespace fedpar
