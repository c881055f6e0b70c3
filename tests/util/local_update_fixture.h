// A small model and shard for checking local training against steps computed by hand (FedProx,
// SCAFFOLD): a 60-16-10 MLP on 40 synthetic samples, its initial parameters, and the full-batch
// gradient of the shard's mean loss at any parameters.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "core/backend.h"
#include "core/local_update.h"
#include "core/synthetic.h"

namespace fedpar::testing {

class LocalUpdateFixture : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> be = make_backend("cpu");
  TrainTest data = generate_synthetic({.iid = true, .seed = 5});
  Model model{*be, {"mlp", {16}}, data.train.shape, 10};
  std::vector<uint32_t> shard = std::vector<uint32_t>(40);
  std::vector<float> w0;
  void SetUp() override {
    std::iota(shard.begin(), shard.end(), 0u);
    model.init(3);
    w0 = model.params_host();
  }
  std::vector<float> grad(const std::vector<float>& w) {
    return compute_update(model, data.train, shard, w, {.kind = LocalWork::kGradient}, 1, 0).values;
  }
};

}  // namespace fedpar::testing
