// Layers of a sequential model. A layer owns no parameters: it records where its tensors sit in
// the model's flat vector and reads/accumulates through base pointers handed in on each call.
// Activations are NHWC, one sample after another: (batch, h, w, c).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/backend.h"
#include "core/params.h"

namespace fedpar {

struct Shape {
  int h = 1, w = 1, c = 1;
  size_t size() const { return size_t(h) * w * c; }
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string describe() const = 0;  // "dense 784->200"
  virtual Shape output_shape() const = 0;
  // Registers this layer's tensors in `layout` as "<prefix>.weight", "<prefix>.bias".
  virtual void declare(ParamLayout& /*layout*/, const std::string& /*prefix*/) {}
  // Writes initial values into `host_params` (the whole flat vector) from `rng_id`'s stream.
  virtual void init(std::span<float> /*host_params*/, uint64_t /*seed*/,
                    uint32_t /*rng_id*/) const {}
  // y(batch, out) from x(batch, in).
  virtual void forward(Backend& be, const float* params, const float* x, float* y, int batch) = 0;
  // Given dy, ACCUMULATES parameter gradients into `grads` (flat layout) and, when dx is not
  // null, overwrites dx. x and y are the forward input and output of the same batch.
  virtual void backward(Backend& be, const float* params, float* grads, const float* x,
                        const float* y, const float* dy, float* dx, int batch) = 0;
  // Bytes of scratch the layer holds for `batch` samples between forward and backward.
  virtual size_t scratch_bytes(int /*batch*/) const { return 0; }
};

// y = x W^T + b; W is (out, in) like PyTorch's nn.Linear.
std::unique_ptr<Layer> make_dense(Shape in, int out);
std::unique_ptr<Layer> make_relu(Shape in);
// Convolution, stride 1, square kernel k: 'same' (zero padding k / 2, odd k: the output keeps
// the input's size) or `valid` (no padding: h - k + 1); W is stored (out, k, k, in) (OHWI).
std::unique_ptr<Layer> make_conv2d(Shape in, int out_channels, int k, bool valid = false);
// 2x2 max-pool, stride 2.
std::unique_ptr<Layer> make_maxpool2(Shape in);

}  // namespace fedpar
