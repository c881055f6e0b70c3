// The CPU backend: small matrix products on Eigen, large ones on OpenBLAS (when built with it),
// convolutions on oneDNN (when built with it; im2col + products otherwise), everything else as
// plain loops the compiler vectorizes, split over threads only when that pays. It is the
// reference every other backend is checked against.
#pragma once

#include <memory>

#include "core/backend.h"

namespace fedpar {

// Products with fewer multiply-adds than this run on Eigen, single-threaded: at these sizes
// Eigen's kernels win and threads cost more than they save (docs/benchmarks.md, bench_gemm).
constexpr double kBlasMinMacs = double(1 << 21);

std::unique_ptr<Backend> make_cpu_backend(int threads);

}  // namespace fedpar
