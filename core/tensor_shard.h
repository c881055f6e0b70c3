// Tensor parallelism (Megatron-LM's split of dense layers): rank r of t holds, for each pair of
// dense layers, a column slice of the first (out/t of its outputs: W rows and bias) and the
// matching row slice of the second (in/t of its inputs: W columns; its bias whole). A pair then
// costs one all-reduce forward (the second layer's partial outputs) and one backward (the
// gradient of the first layer's input, unless it is the model's first layer). ReLU between them
// acts on the local slice. Layers outside pairs (the CNN's convolutions, a last unpaired dense
// layer) are replicated: every rank computes them whole, with the same bits.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/layer_stack.h"
#include "core/model.h"

namespace fedpar {

// Sums `v` across the t ranks in place, leaving the same bits on every rank.
using AllReduceFn = std::function<void(std::span<float> v)>;

// How a preset splits t ways, one entry per layer ("fc1 column-parallel 784->100 of 200"); throws
// Error when it cannot (a pair's width not a multiple of t, no dense pair).
std::vector<std::string> tensor_split(const ModelSpec& spec, Shape input, int classes, int ways);
// The same as one line per layer.
std::string tensor_split_summary(const ModelSpec& spec, Shape input, int classes, int ways);

class TensorShard {
 public:
  TensorShard(Backend& be, const ModelSpec& spec, Shape input, int classes, int rank, int ways);

  int rank() const { return rank_; }
  size_t num_params() const { return layout_.total(); }
  const ParamLayout& layout() const { return layout_; }  // local shapes, the model's names
  // This rank's parameters from the whole model's flat vector, and back (its slices in place;
  // replicated tensors whole).
  void set_params_from_whole(std::span<const float> whole);
  // This rank's part of any vector laid out as the whole model (its velocity, say).
  std::vector<float> part_of_whole(std::span<const float> whole) const;
  void place_in_whole(std::span<const float> shard, std::span<float> whole) const;
  std::vector<float> params_host() const { return params_.download(); }
  std::vector<float> grads_host() const { return grads_.download(); }
  void set_params_host(std::span<const float> host);
  void zero_grads();

  // Forward and backward of x(batch, input) with labels y on every rank (the data is
  // replicated); ADDS grad_scale * d(loss sum)/d(this rank's params) into grads(). `allreduce`
  // is called in the same order on every rank.
  BatchStats forward_backward(const float* x, const int32_t* y, int batch, float grad_scale,
                              const AllReduceFn& allreduce);

  size_t parameter_bytes() const { return (params_.size() + grads_.size()) * sizeof(float); }
  size_t activation_bytes_held() const { return activation_bytes_held_; }
  // Floats this rank all-reduces per sample in one forward_backward (both directions).
  size_t allreduce_floats_per_sample() const;

 private:
  enum class Kind { kReplicated, kColumn, kRow, kLocalRelu };
  struct Op {
    Kind kind;
    std::unique_ptr<Layer> layer;  // kReplicated
    int in = 0, out = 0;           // kColumn / kRow: local sizes; kLocalRelu: width
    ParamView w, b;                // kColumn / kRow, in this rank's layout
    bool needs_dx = true;          // false for the model's first layer
  };
  // A tensor's part on this rank: `count` runs of `len` floats, whole[start + i * stride].
  struct Piece {
    size_t shard_offset, whole_start, len, count, stride;
  };
  void reserve(int batch);
  void host_allreduce(float* v, size_t n, const AllReduceFn& allreduce);

  Backend& be_;
  int rank_, ways_;
  int classes_;
  LossKind loss_;
  Shape input_;
  std::vector<Op> ops_;
  std::vector<size_t> widths_;  // each op's output width per sample
  ParamLayout layout_;
  std::vector<Piece> pieces_;
  DeviceArray<float> params_, grads_;
  std::vector<DeviceArray<float>> acts_;
  DeviceArray<float> grad_a_, grad_b_;
  std::vector<float> host_;  // all-reduce staging
  int reserved_ = 0;
  size_t activation_bytes_held_ = 0;
};

}  // namespace fedpar
