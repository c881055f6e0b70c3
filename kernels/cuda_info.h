// What CUDA this build and this machine offer. Callable from plain C++ in every build; without
// CUDA (or without a device) the answers say so instead of failing.
#pragma once

#include <memory>
#include <string>

namespace fedpar {

class Backend;

bool cuda_compiled();         // built with nvcc
int cuda_device_count();      // 0 when not compiled, no driver or no device
std::string cuda_describe();  // one line: "CUDA 13.0, 1 device: NVIDIA H200 (sm_90)" or why none

// The CUDA backend on device 0 (kernels/cuda_backend.cc). Throws Error, saying why, when this
// build has no CUDA or the machine no device.
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace fedpar
