// FedOpt; see fedopt.h.
#include "core/fedopt.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"
#include "core/named_choices.h"

namespace fedpar {

namespace {
constexpr NamedChoice<FedOptKind> kKinds[] = {{FedOptKind::kSgd, "sgd"},
                                              {FedOptKind::kAvgM, "avgm"},
                                              {FedOptKind::kAdagrad, "adagrad"},
                                              {FedOptKind::kAdam, "adam"},
                                              {FedOptKind::kYogi, "yogi"}};
}  // namespace

FedOptKind parse_fedopt(const std::string& name) {
  return parse_choice<FedOptKind>(kKinds, name, "server optimizer");
}

const char* fedopt_name(FedOptKind k) { return choice_name<FedOptKind>(kKinds, k); }

FedOpt::FedOpt(FedOptOptions o) : o_(o) {
  if (!(o.lr > 0) || !(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1) ||
      !(o.tau > 0))
    throw Error(fmt::format(
        "server optimizer: lr must be > 0, beta1 and beta2 in [0, 1), tau > 0 (local.server_lr, "
        "server_optimizer.beta1, beta2, tau: got {}, {}, {}, {})",
        o.lr, o.beta1, o.beta2, o.tau));
}

void FedOpt::save_state(Checkpoint& c, const std::string& prefix) const {
  if (m_.empty()) return;
  c.f64[prefix + ".m"] = m_;
  c.f64[prefix + ".v"] = v_;
}

void FedOpt::load_state(const Checkpoint& c, const std::string& prefix) {
  if (!c.f64.count(prefix + ".m")) return;
  m_ = c.doubles(prefix + ".m");
  v_ = c.doubles(prefix + ".v");
  FEDPAR_CHECK(m_.size() == v_.size()) << "moments of " << m_.size() << " and " << v_.size();
}

void FedOpt::step(std::span<float> params, std::span<const float> delta) {
  FEDPAR_CHECK(delta.size() == params.size()) << "delta and params differ in size";
  const size_t n = params.size();
  if (o_.kind == FedOptKind::kSgd) {
    const auto lr = float(o_.lr);  // in float, as FedAvg always stepped
    for (size_t i = 0; i < n; ++i) params[i] += lr * delta[i];
    return;
  }
  if (m_.size() != n) {
    m_.assign(n, 0.0);
    v_.assign(n, o_.tau * o_.tau);
  }
  if (o_.kind == FedOptKind::kAvgM) {
    for (size_t i = 0; i < n; ++i) {
      m_[i] = o_.beta1 * m_[i] + double(delta[i]);
      params[i] += float(o_.lr * m_[i]);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const double d = delta[i], d2 = d * d;
    m_[i] = o_.beta1 * m_[i] + (1 - o_.beta1) * d;
    switch (o_.kind) {
      case FedOptKind::kAdagrad:
        v_[i] += d2;
        break;
      case FedOptKind::kAdam:
        v_[i] = o_.beta2 * v_[i] + (1 - o_.beta2) * d2;
        break;
      default:  // yogi
        v_[i] -= (1 - o_.beta2) * d2 * double((v_[i] > d2) - (v_[i] < d2));
        break;
    }
    params[i] += float(o_.lr * m_[i] / (std::sqrt(v_[i]) + o_.tau));
  }
}

}  // namespace fedpar
