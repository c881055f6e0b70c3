// Centralized trainer; see trainer.h.
#include "core/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>

#include "core/batch_buffer.h"
#include "core/check.h"
#include "core/loss_scaler.h"
#include "core/rng.h"

namespace fedpar {

int64_t steps_per_epoch(size_t n, int64_t batch) {
  if (batch <= 0 || size_t(batch) >= n) return n > 0 ? 1 : 0;
  return int64_t((n + size_t(batch) - 1) / size_t(batch));
}

BatchStats evaluate(Model& model, const Dataset& data, int64_t batch) {
  std::vector<uint32_t> all(data.size());
  std::iota(all.begin(), all.end(), 0u);
  return evaluate(model, data, all, batch);
}

BatchStats evaluate(Model& model, const Dataset& data, std::span<const uint32_t> rows,
                    int64_t batch) {
  BatchBuffer buf(model.backend(), data.dim());
  BatchStats total;
  for (size_t start = 0; start < rows.size(); start += size_t(batch)) {
    const size_t n = std::min(size_t(batch), rows.size() - start);
    buf.load(data, rows.subspan(start, n));
    total += model.evaluate(buf.x(), buf.y(), int(n));
  }
  return total;
}

void train(Model& model, const Dataset& train_set, const Dataset& test_set, TrainOptions opts,
           const TrainCallbacks& cb, bool init) {
  FEDPAR_CHECK(train_set.size() > 0) << "empty training set";
  FEDPAR_CHECK(opts.accumulate >= 1) << "accumulate must be >= 1";
  const size_t n = train_set.size();
  const size_t batch = opts.batch <= 0 ? n : std::min<size_t>(size_t(opts.batch), n);
  const int64_t per_epoch = steps_per_epoch(n, opts.batch);
  const int64_t total_steps = per_epoch * opts.epochs;
  if (opts.lr.total_steps <= 0) opts.lr.total_steps = total_steps;
  opts.lr.validate();

  if (init) model.init(opts.seed);
  Backend& be = model.backend();
  be.set_precision(opts.precision);
  std::optional<LossScaler> scaler;  // fp16 gradients underflow without it
  if (opts.precision == Precision::kF16) scaler.emplace();
  Sgd sgd(be, model.num_params(), opts.sgd);
  BatchBuffer buf(be, train_set.dim());
  std::vector<uint32_t> order(n);
  int64_t step = 0, samples = 0;

  for (int epoch = 1; epoch <= opts.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    std::iota(order.begin(), order.end(), 0u);
    // A full batch is the same gradient in any order: shuffled, it would only be summed in
    // another order, and differ in the last bits from a run's full batch (its shard's order).
    if (opts.shuffle && batch < n)
      Rng(opts.seed, "shuffle", 0, uint32_t(epoch)).shuffle(std::span(order));
    EpochInfo ep{.epoch = epoch};
    for (size_t start = 0; start < n; start += batch) {
      const size_t b = std::min(batch, n - start);
      buf.load(train_set, std::span(order).subspan(start, b));
      model.zero_grads();
      // Micro-batches: each adds (1/b) * its summed gradient, so their total is the batch mean.
      const size_t micro = (b + size_t(opts.accumulate) - 1) / size_t(opts.accumulate);
      BatchStats st;
      for (size_t m0 = 0; m0 < b; m0 += micro) {
        const size_t mb = std::min(micro, b - m0);
        st += model.forward_backward(buf.x_at(m0), buf.y_at(m0), int(mb),
                                     (scaler ? scaler->scale() : 1.0f) / float(b));
      }
      const float lr = opts.lr.at(step);
      if (!scaler || scaler->unscale(be, model.grads(), model.num_params()))
        sgd.step(model.params(), model.grads(), lr);
      ++step;
      samples += int64_t(b);
      ep.train += st;
      if (cb.on_step) cb.on_step({epoch, step, total_steps, samples, lr, st});
    }
    ep.step = step;
    ep.skipped_steps = scaler ? scaler->skipped() : 0;
    ep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (test_set.size() > 0) ep.test = evaluate(model, test_set, opts.eval_batch);
    if (cb.on_epoch) cb.on_epoch(ep);
  }
}

}  // namespace fedpar
