// FedNova's normalised averaging; see fednova.h.
#include "core/fednova.h"

#include <cmath>

#include "core/check.h"

namespace fedpar {

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
