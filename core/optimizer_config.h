// The [optimizer] section that every way of training shares: fedpar train's steps, and in a run
// the gradient regime's server (or ring, pipeline and tensor workers) and the model regime's
// clients. One learning-rate schedule counted in global steps (a centralized step; a round of
// the synchronous regimes; an applied update of async), so a distributed run follows the
// centralized curve; a scaling rule that sets the rate from the global batch (Goyal et al. 2017's
// linear rule, or the square root); accumulation and mixed precision inside each gradient.
// docs/optimizer.md describes every key.
#pragma once

#include <cstdint>
#include <string>

#include "core/config.h"
#include "core/optimizer.h"
#include "core/precision.h"

namespace fedpar {

extern const char* const kOptimizerDefaults;

enum class LrScaling { kNone, kLinear, kSqrt };
const char* lr_scaling_name(LrScaling s);

struct OptimizerSpec {
  LrSchedule lr;  // base_lr is optimizer.lr after the scaling rule
  SgdOptions sgd;
  float configured_lr = 0.1f;  // optimizer.lr as written
  LrScaling scaling = LrScaling::kNone;
  int64_t reference_batch = 0;
  int accumulate = 1;  // micro-batches per gradient
  Precision precision = Precision::kF32;
};

// lr x (batch / reference), or x its square root; lr itself for kNone.
float scaled_lr(float lr, LrScaling s, int64_t batch, int64_t reference);

// Resolves [optimizer] for a run whose optimizer steps each cover `global_batch` samples (0: not
// known, e.g. full-batch steps; then scaling must be "none") and that takes `total_steps` steps
// (cosine decays over them). Throws Error naming the key and its fix.
OptimizerSpec resolve_optimizer(const Config& c, int64_t global_batch, int64_t total_steps);

}  // namespace fedpar
