// What CUDA this build and this machine offer. Callable from plain C++ in every build; without
// CUDA (or without a device) the answers say so instead of failing.
#pragma once

#include <string>
#include <vector>

namespace fedpar {

bool cuda_compiled();     // built with nvcc
int cuda_device_count();  // 0 when not compiled, no driver or no device
std::string cuda_describe();  // one line: "CUDA 13.0, 1 device: NVIDIA H200 (sm_90)" or why none

// y += a * x computed on device 0 (the first kernel; its CPU reference is axpy_ref).
// Throws Error when no device is available.
void axpy_on_device(std::vector<float>& y, const std::vector<float>& x, float a);
void axpy_ref(float* y, const float* x, float a, size_t n);

}  // namespace fedpar
