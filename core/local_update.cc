// compute_update; see local_update.h.
#include "core/local_update.h"

#include <algorithm>
#include <optional>

#include "core/batch_buffer.h"
#include "core/check.h"
#include "core/rng.h"

namespace fedpar {

namespace {

// b rows of the shard drawn without replacement from `rng` (the whole shard in order when b
// covers it): a gradient task's batch, and each independent local step's, one draw after another.
void draw_batch(Rng& rng, std::span<const uint32_t> shard, size_t b, std::vector<uint32_t>& out) {
  out.assign(shard.begin(), shard.end());
  if (b >= out.size()) return;
  rng.choose(std::span(out), b);
  out.resize(b);
}

}  // namespace

std::vector<uint32_t> gradient_batch(std::span<const uint32_t> shard, int64_t batch, uint64_t seed,
                                     uint32_t client, uint64_t round) {
  const size_t b = batch <= 0 ? shard.size() : std::min<size_t>(size_t(batch), shard.size());
  Rng rng(seed, "batch", client, uint32_t(round));
  std::vector<uint32_t> v;
  draw_batch(rng, shard, b, v);
  return v;
}

int64_t local_steps_taken(const Task& task, size_t shard_size, uint64_t seed, uint32_t client) {
  const bool epochs = task.local_epochs > 0;
  const int64_t lo = epochs ? task.local_epochs : task.local_steps;
  const int64_t hi = epochs ? task.local_epochs_max : task.local_steps_max;
  const int64_t work = hi <= lo ? lo
                                : lo + int64_t(Rng(seed, "local-work", client, uint32_t(task.round))
                                                   .below(uint64_t(hi - lo + 1)));
  if (!epochs) return work;
  const size_t b = task.batch <= 0 ? shard_size : std::min<size_t>(size_t(task.batch), shard_size);
  return int64_t((shard_size + b - 1) / b) * work;  // batches per pass (the last may be short)
}

namespace {

// model.grads() = the mean-loss gradient of the `take` rows in `buf`, in task.accumulate
// micro-batches, loss-scaled when the task has a scaler (again at a lower scale on overflow).
BatchStats batch_gradient(Model& model, BatchBuffer& buf, size_t take, const Task& task) {
  const size_t micro = (take + size_t(task.accumulate) - 1) / size_t(task.accumulate);
  for (int tries = 0;; ++tries) {
    model.zero_grads();
    const float scale = task.scaler ? task.scaler->scale() : 1.0f;
    BatchStats st;
    for (size_t m0 = 0; m0 < take; m0 += micro)
      st += model.forward_backward(buf.x_at(m0), buf.y_at(m0), int(std::min(micro, take - m0)),
                                   scale / float(take));
    if (!task.scaler || task.scaler->unscale(model.backend(), model.grads(), model.num_params()))
      return st;
    if (tries == 100) throw Error("fp16 gradients overflow at every loss scale");
  }
}

}  // namespace

LocalResult compute_update(Model& model, const Dataset& data, std::span<const uint32_t> shard,
                           std::span<const float> params, const Task& task, uint64_t seed,
                           uint32_t client, BatchBuffer* buffer) {
  FEDPAR_CHECK(!shard.empty()) << "client " << client << " has no samples";
  Backend& be = model.backend();
  model.set_params_host(params);
  std::optional<BatchBuffer> own;
  if (!buffer) buffer = &own.emplace(be, data.dim());
  BatchBuffer& buf = *buffer;
  LocalResult out;
  const size_t n = shard.size();
  const size_t b = task.batch <= 0 ? n : std::min<size_t>(size_t(task.batch), n);

  if (task.kind == LocalWork::kGradient) {
    const std::vector<uint32_t> idx = gradient_batch(shard, task.batch, seed, client, task.round);
    buf.load(data, idx);
    const BatchStats st = batch_gradient(model, buf, b, task);
    out.values = model.grads_host();
    out.num_samples = b;
    out.loss_sum = st.loss_sum;
    out.samples_processed = int64_t(b);
    return out;
  }

  Sgd sgd(be, model.num_params(), task.sgd);
  const bool independent = task.independent_batches && b < n;
  Rng rng(seed, independent ? "batch" : "local-shuffle", client, uint32_t(task.round));
  std::vector<uint32_t> order(shard.begin(), shard.end());
  const int64_t total_steps = local_steps_taken(task, n, seed, client);
  FEDPAR_CHECK(total_steps >= 1) << "local training needs at least one step";
  // The delta is the sum of the applied steps rather than w_K - w_0: for K = 1 it is exactly the
  // step centralized GD takes, without the extra rounding of w_1 to float.
  DeviceArray<float> delta(be, model.num_params());
  be.fill(delta.data(), 0.0f, delta.size());
  DeviceArray<float> anchor, pull;  // FedProx: the sent model, and w - w_sent
  if (task.prox_mu != 0) {
    anchor = DeviceArray<float>(be, model.num_params());
    pull = DeviceArray<float>(be, model.num_params());
    anchor.upload(params.data(), params.size());
  }
  DeviceArray<float> correction;  // SCAFFOLD: c - c_i
  if (!task.correction.empty()) {
    FEDPAR_CHECK(task.correction.size() == model.num_params())
        << "a correction of " << task.correction.size() << " values";
    correction = DeviceArray<float>(be, model.num_params());
    correction.upload(task.correction.data(), task.correction.size());
  }
  size_t cursor = n;  // forces a reshuffle before the first step
  for (int64_t s = 0; s < total_steps; ++s) {
    if (independent) {  // gradient_batch's draw, continued on the same stream
      draw_batch(rng, shard, b, order);
      cursor = 0;
    } else if (cursor >= n) {
      if (b < n) rng.shuffle(std::span(order));  // full batch: order does not matter
      cursor = 0;
    }
    const size_t take = std::min(b, n - cursor);
    buf.load(data, std::span(order).subspan(cursor, take));
    cursor += take;
    const BatchStats st = batch_gradient(model, buf, take, task);
    if (task.prox_mu != 0) {  // g += mu (w - w_sent)
      be.copy(pull.data(), model.params(), pull.size() * sizeof(float));
      be.axpy(pull.data(), anchor.data(), -1.0f, pull.size());
      be.axpy(model.grads(), pull.data(), task.prox_mu, pull.size());
    }
    const bool after = task.correction_after_step;
    if (!task.correction.empty() && !after)
      be.axpy(model.grads(), correction.data(), 1.0f, correction.size());
    sgd.step(model.params(), model.grads(), task.lr, delta.data());
    if (!task.correction.empty() && after) {  // w -= lr (c - c_i), counted in the delta too
      be.axpy(model.params(), correction.data(), -task.lr, correction.size());
      be.axpy(delta.data(), correction.data(), -task.lr, correction.size());
    }
    if (s == 0 && task.drift) {
      out.linear.resize(delta.size());
      be.download(out.linear.data(), delta.data(), delta.size() * sizeof(float));
      for (float& v : out.linear) v *= float(total_steps);
    }
    out.loss_sum += st.loss_sum;
    out.samples_processed += int64_t(take);
  }
  out.values.resize(delta.size());
  be.download(out.values.data(), delta.data(), delta.size() * sizeof(float));
  out.num_samples = n;
  out.local_steps = total_steps;
  return out;
}

}  // namespace fedpar
