// The [optimizer] section; see optimizer_config.h.
#include "core/optimizer_config.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"

namespace fedpar {

const char* const kOptimizerDefaults = R"(
[optimizer]              # every gradient step: fedpar train's, the gradient regime's server or workers,
                         # the model regime's clients (docs/optimizer.md)
lr = 0.1
momentum = 0.0
nesterov = false
weight_decay = 0.0       # L2, added to the gradient
schedule = "constant"    # constant | step | cosine, over global steps (train: steps; run: rounds,
                         # async: applied updates)
step_size = 1            # step: decay every step_size steps
gamma = 0.1              # step: multiply the rate by gamma at each decay
min_lr = 0.0             # cosine: the final rate
warmup_steps = 0         # linear warm-up from lr / warmup_steps to lr before the schedule
scaling = "none"         # none | linear | sqrt: lr x (global batch / reference_batch), or its root
reference_batch = 0      # the batch lr was tuned for (needed by linear and sqrt)
accumulate = 1           # micro-batches per gradient: the same gradient, a fraction of the activations
precision = "fp32"       # fp32 | bf16 | fp16: matrix products' inputs (fp32 master weights); fp16
                         # adds dynamic loss scaling
)";

const char* lr_scaling_name(LrScaling s) {
  return s == LrScaling::kLinear ? "linear" : s == LrScaling::kSqrt ? "sqrt" : "none";
}

float scaled_lr(float lr, LrScaling s, int64_t batch, int64_t reference) {
  if (s == LrScaling::kNone) return lr;
  FEDPAR_CHECK(batch >= 1 && reference >= 1)
      << "scaling needs batches, got " << batch << " / " << reference;
  const double ratio = double(batch) / double(reference);
  return float(double(lr) * (s == LrScaling::kLinear ? ratio : std::sqrt(ratio)));
}

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}
}  // namespace

OptimizerSpec resolve_optimizer(const Config& c, int64_t global_batch, int64_t total_steps) {
  OptimizerSpec o;
  o.configured_lr = float(c.get_float("optimizer.lr"));
  require(o.configured_lr > 0 && std::isfinite(o.configured_lr),
          fmt::format("optimizer.lr must be a positive number, got {}", o.configured_lr));
  o.sgd.momentum = float(c.get_float("optimizer.momentum"));
  o.sgd.nesterov = c.get_bool("optimizer.nesterov");
  o.sgd.weight_decay = float(c.get_float("optimizer.weight_decay"));
  require(o.sgd.momentum >= 0 && o.sgd.momentum < 1, "optimizer.momentum must be in [0, 1)");
  require(o.sgd.weight_decay >= 0, "optimizer.weight_decay must be >= 0");
  require(!o.sgd.nesterov || o.sgd.momentum > 0, "optimizer.nesterov needs optimizer.momentum > 0");

  const std::string scaling = c.get_string("optimizer.scaling");
  if (scaling == "linear")
    o.scaling = LrScaling::kLinear;
  else if (scaling == "sqrt")
    o.scaling = LrScaling::kSqrt;
  else
    require(scaling == "none",
            fmt::format("optimizer.scaling must be none, linear or sqrt, got '{}'", scaling));
  o.reference_batch = c.get_int("optimizer.reference_batch");
  if (o.scaling != LrScaling::kNone) {
    require(o.reference_batch >= 1,
            fmt::format("optimizer.scaling = \"{}\" needs optimizer.reference_batch, the batch "
                        "optimizer.lr was tuned for",
                        scaling));
    require(global_batch >= 1,
            fmt::format("optimizer.scaling = \"{}\" scales by the global batch, which this run "
                        "does not fix (full-batch steps): set the batch, or scaling = \"none\"",
                        scaling));
  }

  o.lr.kind = c.get_string("optimizer.schedule");
  o.lr.base_lr = scaled_lr(o.configured_lr, o.scaling, global_batch, o.reference_batch);
  o.lr.step_size = c.get_int("optimizer.step_size");
  o.lr.gamma = float(c.get_float("optimizer.gamma"));
  o.lr.min_lr = float(c.get_float("optimizer.min_lr"));
  require(o.lr.gamma > 0, fmt::format("optimizer.gamma must be > 0 (the step schedule multiplies "
                                      "the rate by it), got {}",
                                      o.lr.gamma));
  require(o.lr.min_lr >= 0, fmt::format("optimizer.min_lr must be >= 0, got {}", o.lr.min_lr));
  o.lr.warmup_steps = c.get_int("optimizer.warmup_steps");
  o.lr.total_steps = std::max<int64_t>(1, total_steps);  // validate() wants one for cosine
  o.lr.validate();
  o.lr.total_steps = total_steps;

  o.accumulate = c.get_int32("optimizer.accumulate");
  require(o.accumulate >= 1, "optimizer.accumulate must be >= 1");
  o.precision = parse_precision(c.get_string("optimizer.precision"));
  return o;
}

}  // namespace fedpar
