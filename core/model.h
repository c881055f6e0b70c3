// Model: a sequential stack of layers, a loss, and the flat parameter / gradient vectors.
// Presets: logreg, linreg, mlp (hidden sizes), 2nn (784-200-200-10), cnn (the FedAvg CNN).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.h"
#include "core/layer_stack.h"
#include "core/layers.h"
#include "core/params.h"

namespace fedpar {

// Loss and count of correct predictions, summed over the samples of a batch.
struct BatchStats {
  double loss_sum = 0.0;
  int64_t correct = 0;
  int64_t samples = 0;
  BatchStats& operator+=(const BatchStats& o) {
    loss_sum += o.loss_sum;
    correct += o.correct;
    samples += o.samples;
    return *this;
  }
};

class Model {
 public:
  // Throws Error for unknown names or shapes the preset cannot take (cnn needs 28x28x1).
  Model(Backend& be, const ModelSpec& spec, Shape input, int classes);

  Backend& backend() { return be_; }
  const ParamLayout& layout() const { return layout_; }
  size_t num_params() const { return layout_.total(); }
  LossKind loss() const { return loss_; }
  int classes() const { return classes_; }
  Shape input_shape() const { return input_; }
  std::string summary() const;  // one line per layer with its parameter count

  float* params() { return params_.data(); }
  float* grads() { return grads_.data(); }
  // Deterministic init from `seed`: layer i draws from stream (seed, "init", i).
  void init(uint64_t seed);
  std::vector<float> params_host() const { return params_.download(); }
  std::vector<float> grads_host() const { return grads_.download(); }
  void set_params_host(std::span<const float> host);

  void zero_grads();
  // Forward only: loss and correct count over x(batch, input) with labels y (device pointers).
  BatchStats evaluate(const float* x, const int32_t* y, int batch);
  // Forward and backward. ADDS grad_scale * d(sum of sample losses)/d(params) into grads(), so
  // micro-batches with grad_scale = 1/B accumulate exactly the mean-loss gradient of a batch B.
  BatchStats forward_backward(const float* x, const int32_t* y, int batch, float grad_scale);
  // The two halves of forward_backward, for schemes that take the loss elsewhere (the master of
  // the `master` topology gathers every worker's logits): forward() returns the logits (batch,
  // classes), valid until the next pass; backward() then ADDS the parameter gradients for the
  // given dlogits of the same x.
  const float* forward(const float* x, int batch);
  void backward(const float* x, const float* dlogits, int batch);
  // The loss summed over `batch` rows of logits with labels y; when dlogits is given, also
  // writes scale * d(that sum)/d(logits) there (the master's half of a split pass).
  double loss_sum(float* dlogits, const float* logits, const int32_t* y, int batch, float scale);
  // Bytes of activations and scratch held for a batch of `batch` samples.
  size_t activation_bytes(int batch) const;
  // Bytes the backend allocated for activations, their gradients and layer scratch in this
  // model's forward/backward passes so far (measured, not computed: the largest batch seen).
  size_t activation_bytes_held() const { return activation_bytes_held_; }
  // Bytes of the parameter and gradient vectors (2m floats).
  size_t parameter_bytes() const { return (params_.size() + grads_.size()) * sizeof(float); }

 private:
  void reserve(int batch);
  const float* run_forward(const float* x, int batch);
  void backpropagate(const float* x, int batch);

  Backend& be_;
  Shape input_;
  int classes_;
  LossKind loss_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::string> names_;  // each layer's parameter prefix ("" for parameter-free ones)
  ParamLayout layout_;
  DeviceArray<float> params_, grads_;
  std::vector<DeviceArray<float>> acts_;  // output of each layer
  DeviceArray<float> grad_a_, grad_b_;    // ping-pong buffers for activation gradients
  int reserved_batch_ = 0;
  size_t activation_bytes_held_ = 0;
};

}  // namespace fedpar
