// Model presets and the sequential forward / backward pass.
#include "core/model.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"

namespace fedpar {

Model::Model(Backend& be, const ModelSpec& spec, Shape input, int classes)
    : be_(be), input_(input), classes_(classes) {
  LayerStack s = build_layer_stack(spec, input, classes);
  loss_ = s.loss;
  for (size_t i = 0; i < s.layers.size(); ++i)
    if (!s.names[i].empty()) s.layers[i]->declare(layout_, s.names[i]);
  layers_ = std::move(s.layers);
  names_ = std::move(s.names);
  params_ = DeviceArray<float>(be_, layout_.total());
  grads_ = DeviceArray<float>(be_, layout_.total());
  be_.fill(params_.data(), 0.0f, layout_.total());
  zero_grads();
}

std::string Model::summary() const {
  std::string out;
  Shape at = input_;
  for (size_t i = 0; i < layers_.size(); ++i) {
    at = layers_[i]->output_shape();
    out += fmt::format("  {:<6} {:<28} -> {}x{}x{}\n", names_[i], layers_[i]->describe(), at.h,
                       at.w, at.c);
  }
  for (const auto& v : layout_.views())
    out += fmt::format("  {:<28} {:>10} params\n", v.name, v.size);
  out += fmt::format("  total: {} parameters", layout_.total());
  return out;
}

void Model::init(uint64_t seed) {
  std::vector<float> host(layout_.total());
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->init(host, seed, uint32_t(i));
  set_params_host(host);
}

void Model::set_params_host(std::span<const float> host) {
  FEDPAR_CHECK(host.size() == layout_.total())
      << "parameter vector has " << host.size() << " floats, model has " << layout_.total();
  params_.upload(host.data(), host.size());
}

void Model::zero_grads() { be_.fill(grads_.data(), 0.0f, layout_.total()); }

namespace {

// Adds to `held` what the backend's live bytes grew by during its lifetime: the buffers a pass
// allocated and kept (activations grow and never shrink; temporaries are freed within the pass).
class HeldBytes {
 public:
  HeldBytes(const Backend& be, size_t& held) : be_(be), held_(held), before_(be.live_bytes()) {}
  ~HeldBytes() {
    const size_t now = be_.live_bytes();
    if (now > before_) held_ += now - before_;
  }

 private:
  const Backend& be_;
  size_t& held_;
  size_t before_;
};

}  // namespace

void Model::reserve(int batch) {
  if (batch <= reserved_batch_) return;
  acts_.resize(layers_.size());
  size_t widest = input_.size();
  for (size_t i = 0; i < layers_.size(); ++i) {
    const size_t n = size_t(batch) * layers_[i]->output_shape().size();
    acts_[i].reserve(be_, n);
    widest = std::max(widest, layers_[i]->output_shape().size());
  }
  grad_a_.reserve(be_, size_t(batch) * widest);
  grad_b_.reserve(be_, size_t(batch) * widest);
  reserved_batch_ = batch;
}

const float* Model::run_forward(const float* x, int batch) {
  reserve(batch);
  const float* in = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->forward(be_, params_.data(), in, acts_[i].data(), batch);
    in = acts_[i].data();
  }
  return in;
}

double Model::loss_sum(float* dlogits, const float* logits, const int32_t* y, int batch,
                       float scale) {
  return loss_ == LossKind::kSoftmaxCrossEntropy
             ? be_.softmax_xent(dlogits, logits, y, batch, classes_, scale)
             : be_.squared_error(dlogits, logits, y, batch, classes_, scale);
}

BatchStats Model::evaluate(const float* x, const int32_t* y, int batch) {
  if (batch == 0) return {};
  const HeldBytes held(be_, activation_bytes_held_);
  const float* logits = run_forward(x, batch);
  return {loss_sum(nullptr, logits, y, batch, 0.0f), be_.count_correct(logits, y, batch, classes_),
          batch};
}

BatchStats Model::forward_backward(const float* x, const int32_t* y, int batch, float scale) {
  if (batch == 0) return {};
  const HeldBytes held(be_, activation_bytes_held_);
  const float* logits = run_forward(x, batch);
  BatchStats st{0.0, be_.count_correct(logits, y, batch, classes_), batch};
  st.loss_sum = loss_sum(grad_a_.data(), logits, y, batch, scale);
  backpropagate(x, batch);
  return st;
}

const float* Model::forward(const float* x, int batch) {
  const HeldBytes held(be_, activation_bytes_held_);
  return run_forward(x, batch);
}

void Model::backward(const float* x, const float* dlogits, int batch) {
  if (batch == 0) return;
  FEDPAR_CHECK(batch <= reserved_batch_)
      << "backward of a batch of " << batch << " after a forward of " << reserved_batch_;
  be_.copy(grad_a_.data(), dlogits, size_t(batch) * size_t(classes_) * sizeof(float));
  backpropagate(x, batch);
}

// From the loss gradient in grad_a_ back through the layers, adding parameter gradients.
void Model::backpropagate(const float* x, int batch) {
  float* dy = grad_a_.data();
  float* dx = grad_b_.data();
  for (size_t i = layers_.size(); i-- > 0;) {
    const float* in = i == 0 ? x : acts_[i - 1].data();
    layers_[i]->backward(be_, params_.data(), grads_.data(), in, acts_[i].data(), dy,
                         i == 0 ? nullptr : dx, batch);
    std::swap(dy, dx);
  }
}

size_t Model::activation_bytes(int batch) const {
  size_t bytes = 0;
  size_t widest = input_.size();
  for (const auto& l : layers_) {
    bytes += size_t(batch) * l->output_shape().size() * sizeof(float) + l->scratch_bytes(batch);
    widest = std::max(widest, l->output_shape().size());
  }
  return bytes + 2 * size_t(batch) * widest * sizeof(float);
}

}  // namespace fedpar
