// The layers of a model preset in order, before anything owns them: a Model takes them all, a
// pipeline Stage (core/stage.h) a contiguous slice. One builder, so both see the same layers,
// names and initial values.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/layers.h"
#include "core/params.h"

namespace fedpar {

enum class LossKind { kSoftmaxCrossEntropy, kSquaredError };

struct ModelSpec {
  std::string name = "2nn";  // one of model_names()
  std::vector<int> hidden;   // mlp only: hidden layer widths
  std::string init_from;     // saved parameters to start from (core/init_from.h); empty: seed
};

// Valid preset names, for help texts and error messages (inline: resolving a config, as the fuzzed
// config decoder does, needs the names and none of the layers).
inline std::vector<std::string> model_names() {
  return {"logreg", "linreg", "mlp", "2nn", "cnn", "lenet"};
}

struct LayerStack {
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<std::string> names;  // parameter prefix per layer ("" for parameter-free layers)
  std::vector<Shape> inputs;       // each layer's input shape
  LossKind loss = LossKind::kSoftmaxCrossEntropy;
};

// Throws Error for unknown names or shapes the preset cannot take (cnn needs 28x28x1).
LayerStack build_layer_stack(const ModelSpec& spec, Shape input, int classes);

// The parameters each layer of `stack` holds (0 for parameter-free layers); declares them into a
// scratch layout, so `stack` must not have been declared into another.
std::vector<size_t> layer_param_counts(LayerStack& stack);
// The preset's flat parameter layout (Model::layout()), without allocating its vectors.
ParamLayout model_layout(const ModelSpec& spec, Shape input, int classes);
// The most values one sample has at any layer boundary (the input and the logits included).
size_t widest_activation(const ModelSpec& spec, Shape input, int classes);

}  // namespace fedpar
