// SGD; see optimizer.h.
#include "core/optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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
  if (it == c.f32.end()) return sgd_.reset();  // as before the first step
  sgd_ = std::make_unique<Sgd>(*be_, it->second.size(), opts_);
  sgd_->set_velocity(it->second);
}

std::vector<float> HostSgd::velocity() const {
  Checkpoint c;
  save_state(c, "sgd");
  const auto it = c.f32.find("sgd.velocity");
  return it == c.f32.end() ? std::vector<float>{} : it->second;
}

void HostSgd::set_velocity(std::span<const float> v) {
  Checkpoint c;
  if (!v.empty()) c.f32["sgd.velocity"].assign(v.begin(), v.end());
  load_state(c, "sgd");
}

HostSgd::HostSgd(SgdOptions opts) : opts_(opts), be_(make_backend("cpu")) {}
HostSgd::~HostSgd() = default;

void HostSgd::step(std::span<float> params, std::span<const float> gradient, float lr) {
  FEDPAR_CHECK(gradient.size() == params.size()) << "gradient and params differ in size";
  if (!sgd_) sgd_ = std::make_unique<Sgd>(*be_, params.size(), opts_);
  sgd_->step(params.data(), gradient.data(), lr);  // the CPU backend: host pointers
}

}  // namespace fedpar
