// The CPU backend: small matrix products on Eigen, large ones on OpenBLAS (when built with it),
// convolutions on oneDNN (when built with it; im2col + products otherwise), everything else as
// plain loops the compiler vectorizes, split over threads only when that pays. It is the
// reference every other backend is checked against.
#pragma once

#include <memory>

#include "core/backend.h"

namespace fedpar {

std::unique_ptr<Backend> make_cpu_backend(int threads);

}  // namespace fedpar
