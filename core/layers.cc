// Dense, ReLU, convolution and max-pool layers over the Backend interface.
#include "core/layers.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace fedpar {
namespace {

// PyTorch's default for Linear and Conv2d: kaiming_uniform(a=sqrt(5)) for weights, which is
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the same bound for biases.
void init_uniform_fan_in(std::span<float> host, const ParamView& w, const ParamView& b,
                         size_t fan_in, uint64_t seed, uint32_t rng_id) {
  const float bound = float(1.0 / std::sqrt(double(fan_in)));
  Rng rng(seed, "init", rng_id);
  for (size_t i = 0; i < w.size; ++i) host[w.offset + i] = rng.uniform(-bound, bound);
  for (size_t i = 0; i < b.size; ++i) host[b.offset + i] = rng.uniform(-bound, bound);
}

// Registers weight and bias, returning their views.
std::pair<ParamView, ParamView> declare_weight_bias(ParamLayout& layout, const std::string& prefix,
                                                    std::vector<int64_t> weight_shape,
                                                    int64_t bias_size) {
  layout.add(prefix + ".weight", std::move(weight_shape));
  ParamView w = layout.views().back();
  layout.add(prefix + ".bias", {bias_size});
  return {w, layout.views().back()};
}

class Dense final : public Layer {
 public:
  Dense(Shape in, int out) : in_(int(in.size())), out_(out) {}
  std::string describe() const override { return fmt::format("dense {}->{}", in_, out_); }
  Shape output_shape() const override { return {1, 1, out_}; }
  void declare(ParamLayout& layout, const std::string& prefix) override {
    std::tie(w_, b_) = declare_weight_bias(layout, prefix, {out_, in_}, out_);
  }
  void init(std::span<float> host, uint64_t seed, uint32_t id) const override {
    init_uniform_fan_in(host, w_, b_, size_t(in_), seed, id);
  }
  void forward(Backend& be, const float* p, const float* x, float* y, int batch) override {
    be.gemm(Trans::kNo, Trans::kYes, batch, out_, in_, 1.0f, x, p + w_.offset, 0.0f, y);
    be.add_bias(y, p + b_.offset, batch, out_);
  }
  void backward(Backend& be, const float* p, float* g, const float* x, const float*,
                const float* dy, float* dx, int batch) override {
    be.gemm(Trans::kYes, Trans::kNo, out_, in_, batch, 1.0f, dy, x, 1.0f, g + w_.offset);
    be.sum_rows(g + b_.offset, dy, batch, out_, 1.0f);
    if (dx) be.gemm(Trans::kNo, Trans::kNo, batch, in_, out_, 1.0f, dy, p + w_.offset, 0.0f, dx);
  }

 private:
  int in_, out_;
  ParamView w_, b_;
};

class Relu final : public Layer {
 public:
  explicit Relu(Shape in) : shape_(in) {}
  std::string describe() const override { return "relu"; }
  Shape output_shape() const override { return shape_; }
  void forward(Backend& be, const float*, const float* x, float* y, int batch) override {
    be.relu_forward(y, x, size_t(batch) * shape_.size());
  }
  void backward(Backend& be, const float*, float*, const float*, const float* y, const float* dy,
                float* dx, int batch) override {
    if (dx) be.relu_backward(dx, dy, y, size_t(batch) * shape_.size());
  }

 private:
  Shape shape_;
};

class Conv2d final : public Layer {
 public:
  Conv2d(Shape in, int out, int k, bool valid) : in_(in), out_(out), k_(k), valid_(valid) {
    FEDPAR_CHECK(valid || k % 2 == 1) << "conv kernel must be odd for 'same' padding, got " << k;
    FEDPAR_CHECK(!valid || (k <= in.h && k <= in.w))
        << "a 'valid' " << k << "x" << k << " conv needs an input of at least that size, got "
        << in.h << "x" << in.w;
  }
  std::string describe() const override {
    return fmt::format("conv{}x{}{} {}->{} ({}x{})", k_, k_, valid_ ? " valid" : "", in_.c, out_,
                       in_.h, in_.w);
  }
  Shape output_shape() const override {
    const ConvShape s = shape(1);
    return {s.out_h(), s.out_w(), out_};
  }
  void declare(ParamLayout& layout, const std::string& prefix) override {
    std::tie(w_, b_) = declare_weight_bias(layout, prefix, {out_, k_, k_, in_.c}, out_);
  }
  void init(std::span<float> host, uint64_t seed, uint32_t id) const override {
    init_uniform_fan_in(host, w_, b_, size_t(k_) * k_ * in_.c, seed, id);
  }
  void forward(Backend& be, const float* p, const float* x, float* y, int batch) override {
    be.conv2d_forward(shape(batch), x, p + w_.offset, p + b_.offset, y);
  }
  void backward(Backend& be, const float* p, float* g, const float* x, const float*,
                const float* dy, float* dx, int batch) override {
    be.conv2d_backward(shape(batch), x, p + w_.offset, dy, dx, g + w_.offset, g + b_.offset);
  }
  size_t scratch_bytes(int batch) const override {
    // The im2col path's patch matrix; oneDNN keeps less (its layouts of x, y and weights).
    const ConvShape s = shape(batch);
    return size_t(batch) * s.out_h() * s.out_w() * patch() * sizeof(float);
  }

 private:
  int patch() const { return k_ * k_ * in_.c; }
  ConvShape shape(int batch) const { return {batch, in_.h, in_.w, in_.c, out_, k_, valid_}; }
  Shape in_;
  int out_, k_;
  bool valid_;
  ParamView w_, b_;
};

class MaxPool2 final : public Layer {
 public:
  explicit MaxPool2(Shape in) : in_(in) {
    FEDPAR_CHECK(in.h % 2 == 0 && in.w % 2 == 0) << "maxpool2 needs even sizes";
  }
  std::string describe() const override { return "maxpool 2x2"; }
  Shape output_shape() const override { return {in_.h / 2, in_.w / 2, in_.c}; }
  void forward(Backend& be, const float*, const float* x, float* y, int batch) override {
    argmax_.reserve(be, size_t(batch) * output_shape().size());
    be.maxpool2_forward(y, argmax_.data(), x, batch, in_.h, in_.w, in_.c);
  }
  void backward(Backend& be, const float*, float*, const float*, const float*, const float* dy,
                float* dx, int batch) override {
    if (dx) be.maxpool2_backward(dx, dy, argmax_.data(), batch, in_.h, in_.w, in_.c);
  }
  size_t scratch_bytes(int batch) const override {
    return size_t(batch) * output_shape().size() * sizeof(int32_t);
  }

 private:
  Shape in_;
  DeviceArray<int32_t> argmax_;
};

}  // namespace

std::unique_ptr<Layer> make_dense(Shape in, int out) { return std::make_unique<Dense>(in, out); }
std::unique_ptr<Layer> make_relu(Shape in) { return std::make_unique<Relu>(in); }
std::unique_ptr<Layer> make_conv2d(Shape in, int out_channels, int k, bool valid) {
  return std::make_unique<Conv2d>(in, out_channels, k, valid);
}
std::unique_ptr<Layer> make_maxpool2(Shape in) { return std::make_unique<MaxPool2>(in); }

}  // namespace fedpar
