// The CUDA entry points of a CPU-only build: they report that CUDA is absent.
#include "core/backend.h"
#include "core/check.h"
#include "kernels/cuda_info.h"

namespace fedpar {

bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_describe() { return "CUDA: not compiled in (nvcc was not found at build time)"; }
std::unique_ptr<Backend> make_cuda_backend() { return make_backend("cuda"); }  // says why it cannot

}  // namespace fedpar
