// Model presets as layer stacks.
#include "core/layer_stack.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/check.h"

namespace fedpar {

namespace {

struct Builder {
  LayerStack& s;
  Shape at;
  void add(std::unique_ptr<Layer> l, std::string name = "") {
    s.inputs.push_back(at);
    at = l->output_shape();
    s.layers.push_back(std::move(l));
    s.names.push_back(std::move(name));
  }
};

// Dense layers with ReLU between them: in -> hidden... -> classes.
void build_mlp(Builder& s, const std::vector<int>& hidden, int classes) {
  int i = 1;
  for (int width : hidden) {
    FEDPAR_CHECK(width > 0) << "hidden width must be positive";
    s.add(make_dense(s.at, width), fmt::format("fc{}", i++));
    s.add(make_relu(s.at));
  }
  s.add(make_dense(s.at, classes), fmt::format("fc{}", i));
}

}  // namespace

LayerStack build_layer_stack(const ModelSpec& spec, Shape input, int classes) {
  if (classes < 2) throw Error(fmt::format("a model needs at least 2 classes, got {}", classes));
  LayerStack stack;
  Builder s{stack, input};
  const std::string& n = spec.name;
  if (n != "mlp" && !spec.hidden.empty())
    throw Error(fmt::format("model '{}' takes no hidden sizes (only 'mlp' does)", n));
  if (n == "logreg") {
    build_mlp(s, {}, classes);
  } else if (n == "linreg") {
    build_mlp(s, {}, classes);
    stack.loss = LossKind::kSquaredError;
  } else if (n == "mlp") {
    if (spec.hidden.empty())
      throw Error(
          "model 'mlp' needs hidden sizes: --set model.hidden=[200,200] (fedpar train: "
          "--hidden 200,200)");
    build_mlp(s, spec.hidden, classes);
  } else if (n == "2nn") {
    build_mlp(s, {200, 200}, classes);
  } else if (n == "cnn") {
    if (input.h != 28 || input.w != 28 || input.c != 1)
      throw Error(fmt::format("model 'cnn' needs 28x28x1 images; this dataset has {}x{}x{}",
                              input.h, input.w, input.c));
    s.add(make_conv2d(s.at, 32, 5), "conv1");
    s.add(make_relu(s.at));
    s.add(make_maxpool2(s.at));
    s.add(make_conv2d(s.at, 64, 5), "conv2");
    s.add(make_relu(s.at));
    s.add(make_maxpool2(s.at));
    s.add(make_dense(s.at, 512), "fc1");
    s.add(make_relu(s.at));
    s.add(make_dense(s.at, classes), "fc2");
  } else if (n == "lenet") {  // NIID-Bench's simple CNN for MNIST: LeNet-5's shape, ReLU, max-pool
    // two valid 5x5 convolutions, each followed by a 2x2 pool: sides of 16, 20, 24, 28, ...
    const auto fits = [](int side) { return side >= 16 && side % 4 == 0; };
    if (!fits(input.h) || !fits(input.w))
      throw Error(fmt::format(
          "model 'lenet' needs image sides of at least 16 and divisible by 4 (MNIST's 28x28); "
          "this dataset has {}x{}",
          input.h, input.w));
    s.add(make_conv2d(s.at, 6, 5, /*valid=*/true), "conv1");
    s.add(make_relu(s.at));
    s.add(make_maxpool2(s.at));
    s.add(make_conv2d(s.at, 16, 5, /*valid=*/true), "conv2");
    s.add(make_relu(s.at));
    s.add(make_maxpool2(s.at));
    build_mlp(s, {120, 84}, classes);
  } else {
    throw Error(
        fmt::format("unknown model '{}' (valid models: {})", n, fmt::join(model_names(), ", ")));
  }
  return stack;
}

std::vector<size_t> layer_param_counts(LayerStack& stack) {
  ParamLayout scratch;
  std::vector<size_t> n(stack.layers.size(), 0);
  for (size_t i = 0; i < stack.layers.size(); ++i) {
    const size_t before = scratch.total();
    if (!stack.names[i].empty()) stack.layers[i]->declare(scratch, stack.names[i]);
    n[i] = scratch.total() - before;
  }
  return n;
}

ParamLayout model_layout(const ModelSpec& spec, Shape input, int classes) {
  LayerStack stack = build_layer_stack(spec, input, classes);
  ParamLayout layout;
  for (size_t i = 0; i < stack.layers.size(); ++i)
    if (!stack.names[i].empty()) stack.layers[i]->declare(layout, stack.names[i]);
  return layout;
}

size_t widest_activation(const ModelSpec& spec, Shape input, int classes) {
  size_t widest = size_t(classes);
  for (const Shape& s : build_layer_stack(spec, input, classes).inputs)
    widest = std::max(widest, s.size());
  return widest;
}

}  // namespace fedpar
