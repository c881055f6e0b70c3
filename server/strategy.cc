// Gradient averaging and model averaging; see strategy.h.
#include "server/strategy.h"

#include <fmt/format.h>

#include "core/check.h"

namespace fedpar {

namespace {

class GradientAveraging final : public Strategy {
 public:
  GradientAveraging(Weighting w, LrSchedule lr, SgdOptions sgd) : w_(w), lr_(lr), sgd_(sgd) {}
  std::string_view name() const override { return "gradient"; }
  void apply(std::span<const ClientUpdate> updates, std::span<float> params) override {
    weighted_average(updates, w_, mean_);
    sgd_.step(params, mean_, lr_.at(int64_t(updates[0].round)));
  }

 private:
  Weighting w_;
  LrSchedule lr_;
  HostSgd sgd_;
  std::vector<float> mean_;  // kept across rounds: one buffer, not a fresh mapping per round
};

class ModelAveraging final : public Strategy {
 public:
  ModelAveraging(Weighting w, float server_lr) : w_(w), server_lr_(server_lr) {}
  std::string_view name() const override { return "model"; }
  void apply(std::span<const ClientUpdate> updates, std::span<float> params) override {
    weighted_average(updates, w_, mean_);
    FEDPAR_CHECK(mean_.size() == params.size()) << "delta and params differ in size";
    for (size_t i = 0; i < params.size(); ++i) params[i] += server_lr_ * mean_[i];
  }

 private:
  Weighting w_;
  float server_lr_;
  std::vector<float> mean_;  // the mean delta, kept across rounds
};

}  // namespace

std::unique_ptr<Strategy> make_gradient_averaging(Weighting w, LrSchedule lr, SgdOptions sgd) {
  lr.validate();
  return std::make_unique<GradientAveraging>(w, lr, sgd);
}

std::unique_ptr<Strategy> make_model_averaging(Weighting w, float server_lr) {
  return std::make_unique<ModelAveraging>(w, server_lr);
}

}  // namespace fedpar
