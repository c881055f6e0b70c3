// The convolution any backend can run on its own ops: im2col, one matrix product, and col2im for
// the input gradient. The CPU backend uses it when built without oneDNN (and tests use it as the
// reference the oneDNN path is checked against).
#pragma once

#include "core/backend.h"

namespace fedpar {

class Im2colConv {
 public:
  explicit Im2colConv(Backend& be) : be_(be) {}
  void forward(const ConvShape& s, const float* x, const float* weights, const float* bias,
               float* y);
  void backward(const ConvShape& s, const float* x, const float* weights, const float* dy,
                float* dx, float* dweights, float* dbias);

 private:
  Backend& be_;
  DeviceArray<float> cols_;  // (n*oh*ow, k*k*c) patch matrix, reused across calls
};

}  // namespace fedpar
