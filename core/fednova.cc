// FedNova's normalised averaging; see fednova.h.
#include "core/fednova.h"

#include <cmath>

#include "core/check.h"
#include "core/local_update.h"

namespace fedpar {

int64_t fednova_steps(const RunSpec& s, size_t shard_size, uint32_t client, uint64_t round) {
  const Task task{.kind = LocalWork::kLocalTrain,
                  .round = round,
                  .batch = s.local_batch,
                  .local_steps = s.local_steps,
                  .local_epochs = s.local_epochs,
                  .local_steps_max = s.local_steps_max,
                  .local_epochs_max = s.local_epochs_max};
  return local_steps_taken(task, shard_size, s.seed, client);
}

std::optional<int64_t> fednova_equal_steps(const RunSpec& s, std::span<const size_t> shard_sizes) {
  const bool drawn =
      s.local_epochs > 0 ? s.local_epochs_max > s.local_epochs : s.local_steps_max > s.local_steps;
  if (drawn || shard_sizes.empty()) return std::nullopt;
  const int64_t first = fednova_steps(s, shard_sizes[0], 0, 1);
  for (size_t k = 1; k < shard_sizes.size(); ++k)
    if (fednova_steps(s, shard_sizes[k], uint32_t(k), 1) != first) return std::nullopt;
  return first;
}

double fednova_work(int64_t steps, double momentum) {
  FEDPAR_CHECK(steps >= 1 && momentum >= 0 && momentum < 1)
      << "FedNova's work needs steps >= 1 and 0 <= momentum < 1";
  if (momentum == 0) return double(steps);
  const double tau = double(steps), rho = momentum;
  return (tau - rho * (1 - std::pow(rho, tau)) / (1 - rho)) / (1 - rho);
}

std::vector<std::vector<float>> fednova_normalize(std::span<const ClientUpdate> updates,
                                                  std::span<const double> work, Weighting w) {
  FEDPAR_CHECK(updates.size() == work.size() && !updates.empty())
      << updates.size() << " updates, " << work.size() << " amounts of work";
  double total = 0, tau_eff = 0;
  for (size_t k = 0; k < updates.size(); ++k) {
    FEDPAR_CHECK(work[k] > 0) << "client " << updates[k].client << " did no work";
    const double p = raw_weight(w, updates[k].num_samples);
    total += p;
    tau_eff += p * work[k];
  }
  // kSum weights are already parts of one mean; the others normalise over the participants
  if (w != Weighting::kSum) tau_eff /= total;
  std::vector<std::vector<float>> out(updates.size());
  for (size_t k = 0; k < updates.size(); ++k) {
    const double f = tau_eff / work[k];
    out[k].resize(updates[k].values.size());
    for (size_t i = 0; i < out[k].size(); ++i) out[k][i] = float(double(updates[k].values[i]) * f);
  }
  return out;
}

}  // namespace fedpar
