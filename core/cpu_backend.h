// The CPU backend: matrix products through Eigen, everything else as plain loops the compiler
// vectorizes. It is the reference every other backend is checked against.
#pragma once

#include <memory>

#include "core/backend.h"

namespace fedpar {

std::unique_ptr<Backend> make_cpu_backend(int threads);

}  // namespace fedpar
