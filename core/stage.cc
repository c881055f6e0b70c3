// Pipeline stages: splitting a preset into contiguous slices, and running one slice per slot.
#include "core/stage.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "core/check.h"

namespace fedpar {

namespace {

std::string starts_text(const LayerStack& stack, const std::vector<size_t>& starts) {
  std::vector<std::string> names;
  for (size_t s : starts) names.push_back(stack.names[s]);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::vector<LayerRange> ranges_from(const std::vector<size_t>& cuts, size_t layers) {
  std::vector<LayerRange> r;
  for (size_t i = 0; i < cuts.size(); ++i)
    r.push_back({cuts[i], i + 1 < cuts.size() ? cuts[i + 1] : layers});
  return r;
}

}  // namespace

std::vector<size_t> stage_starts(const LayerStack& stack) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < stack.layers.size(); ++i)
    if (i == 0 || !stack.names[i].empty()) starts.push_back(i);
  return starts;
}

std::string describe_stages(const ModelSpec& spec, Shape input, int classes,
                            const std::vector<LayerRange>& ranges) {
  const LayerStack stack = build_layer_stack(spec, input, classes);
  std::vector<std::string> stages;
  for (const LayerRange& r : ranges) {
    std::vector<std::string> named;
    for (size_t i = r.first; i < r.last; ++i)
      if (!stack.names[i].empty()) named.push_back(stack.names[i]);
    stages.push_back(fmt::format("{}", fmt::join(named, " ")));
  }
  return fmt::format("{}", fmt::join(stages, " | "));
}

std::vector<LayerRange> split_by_params(const ModelSpec& spec, Shape input, int classes,
                                        int stages) {
  LayerStack stack = build_layer_stack(spec, input, classes);
  const std::vector<size_t> starts = stage_starts(stack);
  const size_t k = starts.size();
  if (stages < 1 || size_t(stages) > k)
    throw Error(fmt::format(
        "model '{}' splits into 1 to {} stages (a stage starts at a layer with parameters: {}), "
        "not {}",
        spec.name, k, starts_text(stack, starts), stages));
  const std::vector<size_t> per_layer = layer_param_counts(stack);
  // weight[a][b]: parameters of the layers from starts[a] up to starts[b] (b == k: the end).
  std::vector<size_t> prefix(stack.layers.size() + 1, 0);
  for (size_t i = 0; i < per_layer.size(); ++i) prefix[i + 1] = prefix[i] + per_layer[i];
  auto at = [&](size_t b) { return b == k ? stack.layers.size() : starts[b]; };
  auto weight = [&](size_t a, size_t b) { return prefix[at(b)] - prefix[at(a)]; };
  // best[s][a]: the smallest largest stage when starts[a].. is split into s stages.
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<std::vector<size_t>> best(size_t(stages) + 1, std::vector<size_t>(k + 1, kNone));
  for (size_t a = 0; a < k; ++a) best[1][a] = weight(a, k);
  for (size_t s = 2; s <= size_t(stages); ++s)
    for (size_t a = 0; a < k; ++a)
      for (size_t b = a + 1; b < k; ++b)
        if (best[s - 1][b] != kNone)
          best[s][a] = std::min(best[s][a], std::max(weight(a, b), best[s - 1][b]));
  // The earliest cut that keeps the optimum, stage after stage.
  std::vector<size_t> cuts{0};
  size_t a = 0;
  for (size_t s = size_t(stages); s > 1; --s) {
    const size_t goal = best[s][a];
    size_t b = a + 1;
    while (!(best[s - 1][b] != kNone && std::max(weight(a, b), best[s - 1][b]) == goal)) ++b;
    cuts.push_back(starts[b]);
    a = b;
  }
  return ranges_from(cuts, stack.layers.size());
}

std::vector<LayerRange> split_at(const ModelSpec& spec, Shape input, int classes,
                                 const std::vector<std::string>& names) {
  const LayerStack stack = build_layer_stack(spec, input, classes);
  const std::vector<size_t> starts = stage_starts(stack);
  std::vector<size_t> cuts{0};
  for (const std::string& name : names) {
    auto it = std::find_if(starts.begin() + 1, starts.end(),
                           [&](size_t s) { return stack.names[s] == name; });
    if (it == starts.end())
      throw Error(fmt::format("model '{}': a stage cannot start at '{}' (it may start at: {})",
                              spec.name, name,
                              starts_text(stack, {starts.begin() + 1, starts.end()})));
    if (*it <= cuts.back())
      throw Error(
          fmt::format("model '{}': stage starts must follow the layers' order; '{}' comes "
                      "too early",
                      spec.name, name));
    cuts.push_back(*it);
  }
  return ranges_from(cuts, stack.layers.size());
}

std::vector<LayerRange> pipeline_split(const ModelSpec& spec, Shape input, int classes, int stages,
                                       const std::vector<std::string>& split) {
  if (split.empty()) return split_by_params(spec, input, classes, stages);
  std::vector<LayerRange> r = split_at(spec, input, classes, split);
  if (int(r.size()) != stages)
    throw Error(
        fmt::format("pipeline.split makes {} stages; the run has {} processes, one per "
                    "stage",
                    r.size(), stages));
  return r;
}

std::vector<ParamSlice> stage_slices(const ModelSpec& spec, Shape input, int classes,
                                     const std::vector<LayerRange>& ranges) {
  LayerStack stack = build_layer_stack(spec, input, classes);
  const std::vector<size_t> per_layer = layer_param_counts(stack);
  std::vector<ParamSlice> out;
  size_t at = 0;
  for (const LayerRange& r : ranges) {
    size_t n = 0;
    for (size_t i = r.first; i < r.last; ++i) n += per_layer[i];
    out.push_back({at, n});
    at += n;
  }
  return out;
}

Stage::Stage(Backend& be, const ModelSpec& spec, Shape input, int classes, LayerRange range,
             int slots)
    : be_(be), range_(range), classes_(classes) {
  LayerStack whole = build_layer_stack(spec, input, classes);
  const size_t n = whole.layers.size();
  const std::vector<size_t> starts = stage_starts(whole);
  if (range.first >= range.last || range.last > n ||
      std::find(starts.begin(), starts.end(), range.first) == starts.end())
    throw Error(
        fmt::format("model '{}': layers [{}, {}) are not a stage (it has {} layers; a "
                    "stage starts at a layer with parameters)",
                    spec.name, range.first, range.last, n));
  FEDPAR_CHECK(slots >= 1) << "a stage needs at least one slot";
  last_ = range.last == n;
  loss_ = whole.loss;
  input_ = whole.inputs[range.first];
  output_ = whole.layers[range.last - 1]->output_shape();
  ParamLayout before;
  for (size_t i = 0; i < range.first; ++i)
    if (!whole.names[i].empty()) whole.layers[i]->declare(before, whole.names[i]);
  model_offset_ = before.total();
  for (size_t i = range.first; i < range.last; ++i) init_ids_.push_back(uint32_t(i));

  slots_.resize(size_t(slots));
  for (size_t k = 0; k < slots_.size(); ++k) {
    LayerStack fresh = k == 0 ? std::move(whole) : build_layer_stack(spec, input, classes);
    ParamLayout copy;  // every slot's layers point at the same offsets
    ParamLayout& layout = k == 0 ? layout_ : copy;
    for (size_t i = range.first; i < range.last; ++i) {
      if (!fresh.names[i].empty()) fresh.layers[i]->declare(layout, fresh.names[i]);
      slots_[k].layers.push_back(std::move(fresh.layers[i]));
    }
  }
  params_ = DeviceArray<float>(be_, layout_.total());
  grads_ = DeviceArray<float>(be_, layout_.total());
  be_.fill(params_.data(), 0.0f, layout_.total());
  zero_grads();
}

std::string Stage::summary() const {
  std::string out =
      fmt::format("  layers [{}, {}): {}x{}x{} -> {}x{}x{}\n", range_.first, range_.last, input_.h,
                  input_.w, input_.c, output_.h, output_.w, output_.c);
  for (const auto& l : slots_[0].layers) out += fmt::format("  {}\n", l->describe());
  out += fmt::format("  total: {} parameters", layout_.total());
  return out;
}

void Stage::init(uint64_t seed) {
  std::vector<float> host(layout_.total());
  for (size_t i = 0; i < slots_[0].layers.size(); ++i)
    slots_[0].layers[i]->init(host, seed, init_ids_[i]);
  set_params_host(host);
}

void Stage::set_params_host(std::span<const float> host) {
  FEDPAR_CHECK(host.size() == layout_.total())
      << "parameter vector has " << host.size() << " floats, the stage has " << layout_.total();
  params_.upload(host.data(), host.size());
}

void Stage::zero_grads() { be_.fill(grads_.data(), 0.0f, layout_.total()); }

Stage::Slot& Stage::slot(int i) {
  FEDPAR_CHECK(i >= 0 && size_t(i) < slots_.size())
      << "slot " << i << " of a stage with " << slots_.size();
  return slots_[size_t(i)];
}

const float* Stage::forward(int i, const float* x, int batch) {
  Slot& s = slot(i);
  FEDPAR_CHECK(s.batch == 0) << "slot " << i << " still holds a micro-batch awaiting backward";
  FEDPAR_CHECK(batch > 0) << "a micro-batch needs samples";
  const size_t live = be_.live_bytes();
  size_t widest = 0;  // of the layers' outputs: the first layer's dx goes to the caller's buffer
  s.acts.resize(s.layers.size());
  for (size_t l = 0; l < s.layers.size(); ++l) {
    s.acts[l].reserve(be_, size_t(batch) * s.layers[l]->output_shape().size());
    widest = std::max(widest, s.layers[l]->output_shape().size());
  }
  s.input.reserve(be_, size_t(batch) * input_.size());
  grad_a_.reserve(be_, size_t(batch) * widest);
  grad_b_.reserve(be_, size_t(batch) * widest);
  be_.copy(s.input.data(), x, size_t(batch) * input_.size() * sizeof(float));
  const float* in = s.input.data();
  for (size_t l = 0; l < s.layers.size(); ++l) {
    s.layers[l]->forward(be_, params_.data(), in, s.acts[l].data(), batch);
    in = s.acts[l].data();
  }
  s.batch = batch;
  if (be_.live_bytes() > live) activation_bytes_held_ += be_.live_bytes() - live;
  return in;
}

BatchStats Stage::loss_backward(int i, const int32_t* y, float scale, float* dx) {
  FEDPAR_CHECK(last_) << "only the last stage takes the loss";
  Slot& s = slot(i);
  FEDPAR_CHECK(s.batch > 0) << "loss of slot " << i << " before its forward";
  const float* logits = s.acts.back().data();
  const int b = s.batch;
  BatchStats st{0.0, be_.count_correct(logits, y, b, classes_), b};
  st.loss_sum = loss_ == LossKind::kSoftmaxCrossEntropy
                    ? be_.softmax_xent(grad_a_.data(), logits, y, b, classes_, scale)
                    : be_.squared_error(grad_a_.data(), logits, y, b, classes_, scale);
  backpropagate(s, grad_a_.data(), dx);
  return st;
}

void Stage::backward(int i, const float* dy, float* dx) {
  FEDPAR_CHECK(!last_) << "the last stage's backward starts from the loss (loss_backward)";
  Slot& s = slot(i);
  FEDPAR_CHECK(s.batch > 0) << "backward of slot " << i << " before its forward";
  be_.copy(grad_a_.data(), dy, size_t(s.batch) * output_.size() * sizeof(float));
  backpropagate(s, grad_a_.data(), dx);
}

// From dy (in grad_a) back through the slot's layers; the first layer writes `dx_out`.
void Stage::backpropagate(Slot& s, float* dy, float* dx_out) {
  float* dx = grad_b_.data();
  for (size_t l = s.layers.size(); l-- > 0;) {
    const float* in = l == 0 ? s.input.data() : s.acts[l - 1].data();
    s.layers[l]->backward(be_, params_.data(), grads_.data(), in, s.acts[l].data(), dy,
                          l == 0 ? (is_first() ? nullptr : dx_out) : dx, s.batch);
    std::swap(dy, dx);
  }
  s.batch = 0;
}

}  // namespace fedpar
