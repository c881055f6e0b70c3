// TensorShard: one rank's slices of the dense pairs and its replicated layers.
#include "core/tensor_shard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "core/check.h"

namespace fedpar {
namespace {

bool is_dense(const Layer& l) { return l.describe().starts_with("dense"); }
bool is_relu(const Layer& l) { return l.describe() == "relu"; }

// Per layer: 'c' column half of a pair, 'r' its row half, 'l' a ReLU inside a pair (local),
// '.' replicated. Throws Error when the preset cannot split `ways` ways.
std::string roles(const ModelSpec& spec, const LayerStack& s, int ways) {
  if (ways < 1) throw Error(fmt::format("tensor parallelism needs ways >= 1, got {}", ways));
  std::string role(s.layers.size(), '.');
  std::vector<size_t> dense;
  for (size_t i = 0; i < s.layers.size(); ++i)
    if (is_dense(*s.layers[i])) dense.push_back(i);
  if (dense.size() < 2)
    throw Error(
        fmt::format("model '{}' has no pair of dense layers for tensor parallelism to "
                    "split (it splits a column-parallel layer and the row-parallel next)",
                    spec.name));
  int every = 0;  // the gcd of the pairs' widths: the ways that split all of them divide it
  for (size_t k = 0; k + 1 < dense.size(); k += 2)
    every = std::gcd(every, s.layers[dense[k]]->output_shape().c);
  std::vector<int> fit;  // those ways, up to 16
  for (int w = 2; w <= std::min(every, 16); ++w)
    if (every % w == 0) fit.push_back(w);
  for (size_t k = 0; k + 1 < dense.size(); k += 2) {
    const size_t c = dense[k], r = dense[k + 1];
    for (size_t i = c + 1; i < r; ++i) {
      if (!is_relu(*s.layers[i]))
        throw Error(fmt::format("model '{}': between {} and {} comes '{}', not a ReLU", spec.name,
                                s.names[c], s.names[r], s.layers[i]->describe()));
      role[i] = 'l';
    }
    const int width = s.layers[c]->output_shape().c;
    if (width % ways != 0)
      throw Error(fmt::format(
          "tensor parallelism splits {}'s {} outputs {} ways: it needs a multiple of {} (the "
          "ways are processes / grid.data; {})",
          s.names[c], width, ways, ways,
          fit.empty() ? std::string("no number of ways from 2 to 16 splits every pair")
                      : fmt::format("ways that split every pair: {}", fmt::join(fit, ", "))));
    role[c] = 'c', role[r] = 'r';
  }
  return role;
}

}  // namespace

std::string tensor_split_summary(const ModelSpec& spec, Shape input, int classes, int ways) {
  std::string out;
  for (const std::string& line : tensor_split(spec, input, classes, ways)) out += line + "\n";
  return out;
}

std::vector<std::string> tensor_split(const ModelSpec& spec, Shape input, int classes, int ways) {
  const LayerStack s = build_layer_stack(spec, input, classes);
  const std::string role = roles(spec, s, ways);
  std::vector<std::string> out;
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const std::string& name = s.names[i].empty() ? s.layers[i]->describe() : s.names[i];
    const int in = int(s.inputs[i].size()), o = int(s.layers[i]->output_shape().size());
    if (role[i] == 'c')
      out.push_back(fmt::format("{} column-parallel {}->{} of {}", name, in, o / ways, o));
    else if (role[i] == 'r')
      out.push_back(fmt::format("{} row-parallel {}->{} of {} inputs, then all-reduce", name,
                                in / ways, o, in));
    else if (role[i] == 'l')
      out.push_back(fmt::format("{} on the local {} of {}", name, o / ways, o));
    else
      out.push_back(fmt::format("{} replicated", name));
  }
  return out;
}

TensorShard::TensorShard(Backend& be, const ModelSpec& spec, Shape input, int classes, int rank,
                         int ways)
    : be_(be), rank_(rank), ways_(ways), classes_(classes), input_(input) {
  LayerStack s = build_layer_stack(spec, input, classes);
  const std::string role = roles(spec, s, ways);
  FEDPAR_CHECK(rank >= 0 && rank < ways) << "rank " << rank << " of " << ways;
  loss_ = s.loss;
  const ParamLayout whole = model_layout(spec, input, classes);
  auto piece = [&](const ParamView& local, size_t whole_start, size_t len, size_t count,
                   size_t stride) {
    pieces_.push_back({local.offset, whole_start, len, count, stride});
  };
  for (size_t i = 0; i < s.layers.size(); ++i) {
    Op op{.kind = Kind::kReplicated};
    const size_t in = s.inputs[i].size(), out = s.layers[i]->output_shape().size();
    op.needs_dx = i > 0;
    if (role[i] == 'c' || role[i] == 'r') {
      const ParamView& w = whole.find(s.names[i] + ".weight");
      const ParamView& b = whole.find(s.names[i] + ".bias");
      const bool col = role[i] == 'c';
      op.kind = col ? Kind::kColumn : Kind::kRow;
      op.in = int(col ? in : in / size_t(ways));
      op.out = int(col ? out / size_t(ways) : out);
      layout_.add(s.names[i] + ".weight", {op.out, op.in});
      op.w = layout_.views().back();
      layout_.add(s.names[i] + ".bias", {op.out});
      op.b = layout_.views().back();
      if (col) {  // rows [rank * out/t, (rank+1) * out/t) of W and b
        piece(op.w, w.offset + size_t(rank) * op.w.size, op.w.size, 1, 0);
        piece(op.b, b.offset + size_t(rank) * size_t(op.out), size_t(op.out), 1, 0);
      } else {  // columns [rank * in/t, ...) of every row of W; the bias whole
        piece(op.w, w.offset + size_t(rank) * size_t(op.in), size_t(op.in), size_t(op.out), in);
        piece(op.b, b.offset, b.size, 1, 0);
      }
    } else if (role[i] == 'l') {
      op.kind = Kind::kLocalRelu;
      op.out = int(out / size_t(ways));
    } else {
      const size_t before = layout_.views().size();
      if (!s.names[i].empty()) s.layers[i]->declare(layout_, s.names[i]);
      for (size_t v = before; v < layout_.views().size(); ++v) {
        const ParamView& mine = layout_.views()[v];
        piece(mine, whole.find(mine.name).offset, mine.size, 1, 0);
      }
      op.layer = std::move(s.layers[i]);
    }
    widths_.push_back(op.kind == Kind::kReplicated ? out : size_t(op.out));
    ops_.push_back(std::move(op));
  }
  params_ = DeviceArray<float>(be_, layout_.total());
  grads_ = DeviceArray<float>(be_, layout_.total());
  be_.fill(params_.data(), 0.0f, layout_.total());
  zero_grads();
}

void TensorShard::set_params_host(std::span<const float> host) {
  FEDPAR_CHECK(host.size() == layout_.total())
      << "a shard vector of " << host.size() << " floats, this rank holds " << layout_.total();
  params_.upload(host.data(), host.size());
}

std::vector<float> TensorShard::part_of_whole(std::span<const float> whole) const {
  std::vector<float> mine(layout_.total());
  for (const Piece& p : pieces_)
    for (size_t k = 0; k < p.count; ++k)
      std::copy_n(whole.begin() + long(p.whole_start + k * p.stride), p.len,
                  mine.begin() + long(p.shard_offset + k * p.len));
  return mine;
}

void TensorShard::set_params_from_whole(std::span<const float> whole) {
  set_params_host(part_of_whole(whole));
}

void TensorShard::place_in_whole(std::span<const float> shard, std::span<float> whole) const {
  for (const Piece& p : pieces_)
    for (size_t k = 0; k < p.count; ++k)
      std::copy_n(shard.begin() + long(p.shard_offset + k * p.len), p.len,
                  whole.begin() + long(p.whole_start + k * p.stride));
}

void TensorShard::zero_grads() { be_.fill(grads_.data(), 0.0f, layout_.total()); }

size_t TensorShard::allreduce_floats_per_sample() const {
  size_t n = 0;
  for (const Op& op : ops_) {
    if (op.kind == Kind::kRow) n += size_t(op.out);                   // forward: partial outputs
    if (op.kind == Kind::kColumn && op.needs_dx) n += size_t(op.in);  // backward: input grads
  }
  return n;
}

void TensorShard::reserve(int batch) {
  if (batch <= reserved_) return;
  const size_t live = be_.live_bytes();
  acts_.resize(ops_.size());
  size_t widest = input_.size();
  for (size_t k = 0; k < ops_.size(); ++k) {
    acts_[k].reserve(be_, size_t(batch) * widths_[k]);
    widest = std::max(widest, widths_[k]);
  }
  grad_a_.reserve(be_, size_t(batch) * widest);
  grad_b_.reserve(be_, size_t(batch) * widest);
  reserved_ = batch;
  if (be_.live_bytes() > live) activation_bytes_held_ += be_.live_bytes() - live;
}

void TensorShard::host_allreduce(float* v, size_t n, const AllReduceFn& allreduce) {
  host_.resize(n);
  be_.download(host_.data(), v, n * sizeof(float));
  allreduce(host_);
  be_.upload(v, host_.data(), n * sizeof(float));
}

BatchStats TensorShard::forward_backward(const float* x, const int32_t* y, int batch, float scale,
                                         const AllReduceFn& allreduce) {
  if (batch == 0) return {};
  reserve(batch);
  const float* p = params_.data();
  float* g = grads_.data();
  const float* in = x;
  for (size_t k = 0; k < ops_.size(); ++k) {
    Op& op = ops_[k];
    float* out = acts_[k].data();
    switch (op.kind) {
      case Kind::kReplicated:
        op.layer->forward(be_, p, in, out, batch);
        break;
      case Kind::kLocalRelu:
        be_.relu_forward(out, in, size_t(batch) * size_t(op.out));
        break;
      case Kind::kColumn:
      case Kind::kRow:
        be_.gemm(Trans::kNo, Trans::kYes, batch, op.out, op.in, 1.0f, in, p + op.w.offset, 0.0f,
                 out);
        if (op.kind == Kind::kRow) host_allreduce(out, size_t(batch) * size_t(op.out), allreduce);
        be_.add_bias(out, p + op.b.offset, batch, op.out);
        break;
    }
    in = out;
  }
  BatchStats st{0.0, be_.count_correct(in, y, batch, classes_), batch};
  st.loss_sum = loss_ == LossKind::kSoftmaxCrossEntropy
                    ? be_.softmax_xent(grad_a_.data(), in, y, batch, classes_, scale)
                    : be_.squared_error(grad_a_.data(), in, y, batch, classes_, scale);
  float* dy = grad_a_.data();
  float* dx = grad_b_.data();
  for (size_t k = ops_.size(); k-- > 0;) {
    Op& op = ops_[k];
    const float* op_in = k == 0 ? x : acts_[k - 1].data();
    float* dx_or_null = op.needs_dx ? dx : nullptr;
    switch (op.kind) {
      case Kind::kReplicated:
        op.layer->backward(be_, p, g, op_in, acts_[k].data(), dy, dx_or_null, batch);
        break;
      case Kind::kLocalRelu:
        be_.relu_backward(dx, dy, acts_[k].data(), size_t(batch) * size_t(op.out));
        break;
      case Kind::kColumn:
      case Kind::kRow:
        be_.gemm(Trans::kYes, Trans::kNo, op.out, op.in, batch, 1.0f, dy, op_in, 1.0f,
                 g + op.w.offset);
        be_.sum_rows(g + op.b.offset, dy, batch, op.out, 1.0f);
        if (op.needs_dx) {
          be_.gemm(Trans::kNo, Trans::kNo, batch, op.in, op.out, 1.0f, dy, p + op.w.offset, 0.0f,
                   dx);
          // A column slice sees all of x: its dx is a partial sum over the outputs it holds.
          if (op.kind == Kind::kColumn)
            host_allreduce(dx, size_t(batch) * size_t(op.in), allreduce);
        }
        break;
    }
    std::swap(dy, dx);
  }
  return st;
}

}  // namespace fedpar
