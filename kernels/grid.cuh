// Launch geometry shared by the kernels: grid-stride loops over n items, 256 threads a block.
#pragma once

#include <algorithm>
#include <cstddef>

namespace fedpar::cuda {

constexpr unsigned kThreads = 256;

// Enough blocks to cover n items once (grid-stride loops handle the rest); n > 0.
inline unsigned blocks_for(size_t n) {
  return unsigned(std::min<size_t>((n + kThreads - 1) / kThreads, size_t(1) << 16));
}

// for (i : [0, n)) in a grid-stride loop.
#define FEDPAR_GRID_LOOP(i, n)                                            \
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < (n); \
       i += size_t(blockDim.x) * gridDim.x)

}  // namespace fedpar::cuda
