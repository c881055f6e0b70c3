// Convolutions on oneDNN's JIT kernels (direct convolution in blocked layouts), behind the CPU
// backend. fedpar keeps activations NHWC and weights OHWI; this class reorders into the layouts
// oneDNN picks and back, caching one set of primitives per shape.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/backend.h"

namespace fedpar {

class OneDnnConv {
 public:
  OneDnnConv();
  ~OneDnnConv();
  void forward(const ConvShape& s, const float* x, const float* weights, const float* bias,
               float* y);
  // Adds into dweights / dbias; overwrites dx unless null.
  void backward(const ConvShape& s, const float* x, const float* weights, const float* dy,
                float* dx, float* dweights, float* dbias);
  // "oneDNN 2.6.3 (jit:avx2)" once a convolution has run, else the version alone.
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fedpar
