// One client process as a worker of the `master` topology (the DataParallel scheme): for each
// virtual client it hosts, forward its slice of the batch to logits and, once the master sends
// back d(loss)/d(logits), backpropagate to parameter gradients. Each virtual client keeps its own
// model and batch between the two halves, since the backward pass needs that forward's
// activations.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "core/batch_buffer.h"
#include "core/dataset.h"
#include "core/model.h"

namespace fedpar {

class MasterWorker {
 public:
  MasterWorker(Backend& be, const ModelSpec& spec, const Dataset& data);

  // Logits (rows x classes, row-major) of `rows` of the training set under `params`.
  std::vector<float> forward(uint32_t client, std::span<const uint32_t> rows,
                             std::span<const float> params);
  // Parameter gradients for this client's last forward, given its dlogits (rows x classes).
  // Throws Error when no forward came first or the size differs.
  std::vector<float> backward(uint32_t client, std::span<const float> dlogits);
  size_t classes() const { return size_t(data_.num_classes); }

 private:
  struct Replica {
    Model model;
    BatchBuffer batch;
    int rows = -1;  // of the last forward; -1: none waiting for its backward
  };
  Backend& be_;
  const ModelSpec& spec_;
  const Dataset& data_;
  std::map<uint32_t, std::unique_ptr<Replica>> replicas_;
  DeviceArray<float> dlogits_;
};

}  // namespace fedpar
