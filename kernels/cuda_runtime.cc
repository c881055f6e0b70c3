// Device discovery for a CUDA build (host code; compiled by the C++ compiler).
#include <fmt/format.h>

#include <algorithm>

#include "kernels/cuda_check.h"
#include "kernels/cuda_info.h"

namespace fedpar {

bool cuda_compiled() { return true; }

namespace {
// Why cudaGetDeviceCount found no device (no driver, a driver older than the runtime ...): the
// reason a skipped GPU test and a refused `device = "cuda"` give.
std::string& count_error() {
  thread_local std::string why;  // cuda_describe reads what its own call just set
  return why;
}
}  // namespace

int cuda_device_count() {
  int n = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess) {
    count_error() = cudaGetErrorString(e);
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
  if (n == 0 && !count_error().empty()) out += fmt::format(": {}", count_error());
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) == cudaSuccess)
      out += fmt::format("; {}: {} (sm_{}{})", i, p.name, p.major, p.minor);
  }
  return out;
}

}  // namespace fedpar
