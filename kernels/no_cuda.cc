// The CUDA entry points of a CPU-only build: they report that CUDA is absent.
#include "core/check.h"
#include "kernels/cuda_info.h"

namespace fedpar {

bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_describe() { return "CUDA: not compiled in (nvcc was not found at build time)"; }
void axpy_on_device(std::vector<float>&, const std::vector<float>&, float) {
  throw Error("this build has no CUDA support");
}

}  // namespace fedpar
