// Full-batch gradient descent in float64 for the dense ReLU networks (logreg, 2nn, mlp) with
// softmax cross-entropy, from the float32 model's init: the trajectory exact arithmetic follows,
// up to float64's rounding (about 1e-16 a step against float32's 6e-8). The distance of a float32
// run to it is that run's rounding error, so runs that differ only in how they round can be
// compared with centralized float32's own error (the equivalence experiment).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/dataset.h"
#include "core/model.h"

namespace fedpar {

// `init` is the float32 model's parameters (Model::layout() order: each dense layer's
// weight (out, in) row-major, then its bias); `lr` the float32 run's rate (its exact value is
// used). Returns the parameters after `rounds` steps of params -= lr * mean-loss gradient over
// all of `train`, or nullopt for a model with other layers or another loss (no reference).
std::optional<std::vector<double>> float64_gradient_descent(const ModelSpec& spec,
                                                            std::span<const float> init,
                                                            const Dataset& train, int64_t rounds,
                                                            float lr);

}  // namespace fedpar
