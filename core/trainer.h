// Centralized training: epochs of shuffled mini-batches (or full batch), gradient accumulation
// over micro-batches, SGD with a learning-rate schedule, evaluation after every epoch.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "core/dataset.h"
#include "core/model.h"
#include "core/optimizer.h"
#include "core/precision.h"

namespace fedpar {

struct TrainOptions {
  int epochs = 1;
  int64_t batch = 10;  // 0 = full batch
  int accumulate = 1;  // micro-batches per optimizer step (same update as one big batch)
  LrSchedule lr;       // total_steps is filled in by the trainer for cosine
  SgdOptions sgd;
  uint64_t seed =
      1;  // init stream (seed, "init", layer) and shuffle stream (seed, "shuffle", 0, epoch)
  bool shuffle = true;
  int64_t eval_batch = 1000;
  // Matrix products in bf16 / fp16 with fp32 master weights; fp16 adds dynamic loss scaling.
  Precision precision = Precision::kF32;
};

struct StepInfo {
  int epoch = 0;     // 1-based
  int64_t step = 0;  // optimizer steps done so far (1-based after the step)
  int64_t steps_total = 0;
  int64_t samples = 0;  // samples processed so far
  float lr = 0.0f;
  BatchStats batch;  // this step's loss / correct over its samples
};

struct EpochInfo {
  int epoch = 0;
  int64_t step = 0;
  BatchStats train;  // running totals over the epoch (loss at the parameters of each step)
  BatchStats test;
  double seconds = 0.0;       // wall time of the epoch's training, evaluation excluded
  int64_t skipped_steps = 0;  // fp16: steps whose gradients overflowed (not applied), so far
};

struct TrainCallbacks {
  std::function<void(const StepInfo&)> on_step;
  std::function<void(const EpochInfo&)> on_epoch;
};

// Mean loss and accuracy of `model` over all of `data`, in chunks of `batch`.
BatchStats evaluate(Model& model, const Dataset& data, int64_t batch = 1000);
// The same over the rows `rows` of `data` (a client's shard), in their order.
BatchStats evaluate(Model& model, const Dataset& data, std::span<const uint32_t> rows,
                    int64_t batch = 1000);

// Initializes the model from opts.seed unless `init` is false, then trains.
void train(Model& model, const Dataset& train_set, const Dataset& test_set, TrainOptions opts,
           const TrainCallbacks& callbacks = {}, bool init = true);

// Steps per epoch for n samples at batch b (0 = full).
int64_t steps_per_epoch(size_t n, int64_t batch);

}  // namespace fedpar
