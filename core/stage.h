// A pipeline stage: a contiguous slice of a model preset's layers holding only their parameters
// (its share of memory is its share of the parameters, not a full replica), with one set of
// activations per micro-batch in flight ("slot"): GPipe keeps m of them, 1F1B at most p. Running
// every stage's slice in turn performs exactly the whole model's operations, so one micro-batch
// through p stages gives the same gradients bit for bit as Model::forward_backward.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/layer_stack.h"
#include "core/model.h"
#include "core/params.h"

namespace fedpar {

struct LayerRange {
  size_t first = 0, last = 0;  // layers [first, last) of the preset's stack
  bool operator==(const LayerRange&) const = default;
};

// Where a stage may start: at a layer that holds parameters, so no stage is parameter-free and
// what crosses a boundary is a nonlinearity's (or pooling's) output. Layer 0 is always one.
std::vector<size_t> stage_starts(const LayerStack& stack);

// `stages` contiguous ranges over the allowed starts with the largest stage's parameter count as
// small as it can be (ties: the earlier cut). Throws Error naming how many stages the model allows.
std::vector<LayerRange> split_by_params(const ModelSpec& spec, Shape input, int classes,
                                        int stages);
// Stages starting at the named parameter layers (e.g. {"fc2", "fc3"}: three stages). Throws
// Error for unknown names, names out of order, or layers where a stage may not start.
std::vector<LayerRange> split_at(const ModelSpec& spec, Shape input, int classes,
                                 const std::vector<std::string>& starts);

// The pipeline topology's split: at the named layers when `split` is given (it must make
// `stages` stages), else balanced by parameter count. Every process resolves it this one way.
std::vector<LayerRange> pipeline_split(const ModelSpec& spec, Shape input, int classes, int stages,
                                       const std::vector<std::string>& split);

// The layers with parameters each stage holds, stages split by " | ": "conv1 | conv2 | fc1 | fc2".
std::string describe_stages(const ModelSpec& spec, Shape input, int classes,
                            const std::vector<LayerRange>& ranges);

// Where each stage's parameters sit in the whole model's flat vector.
struct ParamSlice {
  size_t offset = 0, size = 0;
};
std::vector<ParamSlice> stage_slices(const ModelSpec& spec, Shape input, int classes,
                                     const std::vector<LayerRange>& ranges);

class Stage {
 public:
  // `slots`: the most micro-batches this stage holds between their forward and backward.
  Stage(Backend& be, const ModelSpec& spec, Shape input, int classes, LayerRange range, int slots);

  Backend& backend() { return be_; }
  bool is_first() const { return range_.first == 0; }
  bool is_last() const { return last_; }
  LayerRange range() const { return range_; }
  Shape input_shape() const { return input_; }
  Shape output_shape() const { return output_; }
  int classes() const { return classes_; }
  int slots() const { return int(slots_.size()); }
  // This stage's tensors, named as in the whole model, offsets from the stage's first float.
  const ParamLayout& layout() const { return layout_; }
  // Where this stage's floats start in the whole model's flat vector (stages are contiguous).
  size_t model_offset() const { return model_offset_; }
  size_t num_params() const { return layout_.total(); }
  std::string summary() const;

  float* params() { return params_.data(); }
  float* grads() { return grads_.data(); }
  // The whole model's init(seed), restricted to this stage's layers.
  void init(uint64_t seed);
  std::vector<float> params_host() const { return params_.download(); }
  std::vector<float> grads_host() const { return grads_.download(); }
  void set_params_host(std::span<const float> host);
  void zero_grads();

  // Forward of one micro-batch of `batch` samples into `slot`: keeps a copy of x and every
  // activation until the slot's backward. Returns the output (batch, output size), valid until
  // the slot's next forward.
  const float* forward(int slot, const float* x, int batch);
  // Last stage only: the loss of the slot's logits against labels y; ADDS scale * d(loss sum)
  // /d(params) into grads() and writes d/d(input) into dx unless this is also the first stage.
  BatchStats loss_backward(int slot, const int32_t* y, float scale, float* dx);
  // Other stages: given dy of the slot's output, ADDS the parameter gradients and writes dx
  // (batch, input size) unless this is the first stage (then dx may be null).
  void backward(int slot, const float* dy, float* dx);

  // Bytes the backend allocated for this stage's slots (inputs, activations, their gradients,
  // layer scratch), measured: what the micro-batches in flight cost.
  size_t activation_bytes_held() const { return activation_bytes_held_; }
  size_t parameter_bytes() const { return (params_.size() + grads_.size()) * sizeof(float); }

 private:
  struct Slot {
    std::vector<std::unique_ptr<Layer>> layers;  // own instances: layers keep per-pass scratch
    DeviceArray<float> input;
    std::vector<DeviceArray<float>> acts;
    int batch = 0;  // of the forward it holds (0: none)
  };
  Slot& slot(int i);
  void backpropagate(Slot& s, float* dy, float* dx);

  Backend& be_;
  LayerRange range_;
  bool last_;
  Shape input_, output_;
  int classes_;
  LossKind loss_;
  ParamLayout layout_;
  size_t model_offset_ = 0;
  std::vector<uint32_t> init_ids_;  // each layer's index in the whole stack (its init stream)
  std::vector<Slot> slots_;
  DeviceArray<float> params_, grads_;
  // the backward's gradient ping-pong, one pair for the stage whatever its slots (it runs one
  // backward at a time), each the widest of its layers' outputs for a micro-batch: the first
  // layer's input gradient goes to the caller's buffer
  DeviceArray<float> grad_a_, grad_b_;
  size_t activation_bytes_held_ = 0;
};

}  // namespace fedpar
