// Rounding fp32 to the 16-bit formats the reduced-precision products read (nearest, ties to even:
// round_to_bf16 / round_to_f16 in core/precision.h are the reference).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/grid.cuh"
#include "kernels/launch.h"

namespace fedpar::cuda {
namespace {

__global__ void to_bf16_k(__nv_bfloat16* out, const float* x, size_t n) {
  FEDPAR_GRID_LOOP(i, n) out[i] = __float2bfloat16_rn(x[i]);
}
__global__ void to_f16_k(__half* out, const float* x, size_t n) {
  FEDPAR_GRID_LOOP(i, n) out[i] = __float2half_rn(x[i]);
}

}  // namespace

void to_bf16(void* out, const float* x, size_t n, cudaStream_t s) {
  if (n) to_bf16_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(out), x, n);
}
void to_f16(void* out, const float* x, size_t n, cudaStream_t s) {
  if (n) to_f16_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__half*>(out), x, n);
}

}  // namespace fedpar::cuda
