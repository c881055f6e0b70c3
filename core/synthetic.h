// FedProx's Synthetic(alpha, beta) (Li et al., MLSys 2020, after Shamir et al. 2014): 30 devices,
// x in R^60, 10 classes, each device with its own softmax-linear labeller. See docs/datasets.md.
#pragma once

#include "core/dataset.h"

namespace fedpar {

struct SyntheticOptions {
  double alpha = 0.0;  // spread of the devices' models (std of u_k)
  double beta = 0.0;   // spread of the devices' feature means (std of B_k)
  bool iid = false;    // one shared model, feature mean B_k * 1 (the paper's Synthetic-IID)
  int devices = 30;
  int dim = 60;
  int classes = 10;
  double train_fraction = 0.9;  // per device, as in the published generator
  uint64_t seed = 1;
};

// Every sample carries its device as user id, in train and test.
TrainTest generate_synthetic(const SyntheticOptions& opts);

}  // namespace fedpar
