// SGD and learning-rate schedules; see optimizer.h.
#include "core/optimizer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"

namespace fedpar {

Sgd::Sgd(Backend& be, size_t num_params, SgdOptions opts) : be_(be), n_(num_params), opts_(opts) {
  if (opts_.momentum != 0.0f) {
    velocity_ = DeviceArray<float>(be_, n_);
    be_.fill(velocity_.data(), 0.0f, n_);
  }
}

void Sgd::step(float* params, const float* grads, float lr, float* applied) {
  be_.sgd_step(params, velocity_.data(), grads, lr, opts_.momentum, opts_.weight_decay,
               opts_.nesterov, n_, applied);
}

std::vector<float> Sgd::velocity_host() const {
  std::vector<float> v(velocity_.size());
  if (!v.empty()) be_.download(v.data(), velocity_.data(), v.size() * sizeof(float));
  return v;
}

void Sgd::set_velocity(std::span<const float> v) {
  FEDPAR_CHECK(v.size() == velocity_.size())
      << "a momentum buffer of " << v.size() << " values for " << velocity_.size();
  if (!v.empty()) be_.upload(velocity_.data(), v.data(), v.size() * sizeof(float));
}

void HostSgd::save_state(Checkpoint& c, const std::string& prefix) const {
  if (sgd_ && opts_.momentum != 0.0f) c.f32[prefix + ".velocity"] = sgd_->velocity_host();
}

void HostSgd::load_state(const Checkpoint& c, const std::string& prefix) {
  const auto it = c.f32.find(prefix + ".velocity");
  if (it == c.f32.end()) return;
  sgd_ = std::make_unique<Sgd>(*be_, it->second.size(), opts_);
  sgd_->set_velocity(it->second);
}

std::vector<std::string> lr_schedule_names() { return {"constant", "step", "cosine"}; }

HostSgd::HostSgd(SgdOptions opts) : opts_(opts), be_(make_backend("cpu")) {}
HostSgd::~HostSgd() = default;

void HostSgd::step(std::span<float> params, std::span<const float> gradient, float lr) {
  FEDPAR_CHECK(gradient.size() == params.size()) << "gradient and params differ in size";
  if (!sgd_) sgd_ = std::make_unique<Sgd>(*be_, params.size(), opts_);
  sgd_->step(params.data(), gradient.data(), lr);  // the CPU backend: host pointers
}

void LrSchedule::validate() const {
  const auto names = lr_schedule_names();
  if (std::find(names.begin(), names.end(), kind) == names.end())
    throw Error(fmt::format("unknown lr schedule '{}' (valid: {})", kind, fmt::join(names, ", ")));
  if (!(base_lr > 0.0f) || !std::isfinite(base_lr))
    throw Error(fmt::format("lr must be a positive number, got {}", base_lr));
  if (warmup_steps < 0) throw Error("warmup steps must be >= 0");
  if (kind == "step" && step_size < 1) throw Error("lr step size must be >= 1");
  if (kind == "cosine" && total_steps < 1) throw Error("cosine schedule needs total steps >= 1");
}

float LrSchedule::at(int64_t step) const {
  if (step < warmup_steps) return base_lr * float(step + 1) / float(warmup_steps);
  const int64_t t = step - warmup_steps;
  if (kind == "step") {
    const int64_t decays = t / step_size;  // whole periods completed
    return base_lr * std::pow(gamma, float(decays));
  }
  if (kind == "cosine") {
    const int64_t span = std::max<int64_t>(1, total_steps - warmup_steps);
    const double frac = std::min(1.0, double(t) / double(span));
    return min_lr + 0.5f * (base_lr - min_lr) * float(1.0 + std::cos(std::numbers::pi * frac));
  }
  return base_lr;
}

}  // namespace fedpar
