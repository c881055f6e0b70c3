// Gradient averaging and model averaging; see strategy.h.
#include "server/strategy.h"

#include <fmt/format.h>

#include "core/check.h"
#include "core/gaussian_mechanism.h"

namespace fedpar {

void Strategy::apply_noise_only(uint64_t, std::span<float>) {
  FEDPAR_CHECK(false) << name() << " adds no noise to an empty round";
}

void Strategy::set_clip_and_noise(double, double) {
  FEDPAR_CHECK(false) << name() << " has no clip to move";
}

namespace {

// Gradient and model averaging: the updates' weighted average (or robust aggregate), with
// [privacy]'s clip and noise where set, handed to the optimizer step each one takes.
class Averaging : public Strategy {
 public:
  Averaging(Weighting w, RobustOptions robust, AggregateNoise noise)
      : w_(w), robust_(robust), noise_(noise) {}
  void apply(std::span<const ClientUpdate> updates, std::span<float> params) override {
    aggregate_and_step(updates, updates[0].round, params);
  }
  void apply_noise_only(uint64_t round, std::span<float> params) override {
    aggregate_and_step({}, round, params);
  }
  void set_clip_and_noise(double clip_norm, double noise_stddev) override {
    robust_.clip_norm = clip_norm;
    noise_.stddev = noise_stddev;
  }

 protected:
  // params <- the optimizer's step with the round's aggregate
  virtual void step(std::span<const float> aggregate, uint64_t round, std::span<float> params) = 0;

 private:
  // The round's aggregate of `updates` (none: zeros) with the noise, if any, added, then the step.
  void aggregate_and_step(std::span<const ClientUpdate> updates, uint64_t round,
                          std::span<float> params) {
    if (updates.empty()) {
      FEDPAR_CHECK(noise_.stddev > 0) << "a round without updates has nothing to aggregate";
      mean_.assign(params.size(), 0.0f);
    } else {
      robust_aggregate(updates, w_, robust_, mean_);
    }
    if (noise_.stddev > 0) add_gaussian_noise(mean_, noise_.stddev, noise_.seed, round);
    step(mean_, round, params);
  }

  Weighting w_;
  RobustOptions robust_;
  AggregateNoise noise_;
  std::vector<float> mean_;  // kept across rounds: one buffer, not a fresh mapping per round
};

class GradientAveraging final : public Averaging {
 public:
  GradientAveraging(Weighting w, LrSchedule lr, SgdOptions sgd, RobustOptions robust,
                    AggregateNoise noise)
      : Averaging(w, robust, noise), lr_(lr), sgd_(sgd) {}
  std::string_view name() const override { return "gradient"; }
  void save_state(Checkpoint& c) const override { sgd_.save_state(c, "server_sgd"); }
  void load_state(const Checkpoint& c) override { sgd_.load_state(c, "server_sgd"); }

 private:
  void step(std::span<const float> mean, uint64_t round, std::span<float> params) override {
    sgd_.step(params, mean, lr_.at(int64_t(round)));
  }

  LrSchedule lr_;
  HostSgd sgd_;
};

class MajorityVote final : public Strategy {
 public:
  MajorityVote(LrSchedule lr, SgdOptions sgd) : lr_(lr), sgd_(sgd) {}
  std::string_view name() const override { return "majority"; }
  void apply(std::span<const ClientUpdate> updates, std::span<float> params) override {
    const size_t n = params.size();
    votes_.assign(n, 0);
    for (const auto& u : updates) {
      FEDPAR_CHECK(u.values.size() == n)
          << "client " << u.client << " sent " << u.values.size() << " values, expected " << n;
      for (size_t i = 0; i < n; ++i) votes_[i] += (u.values[i] > 0) - (u.values[i] < 0);
    }
    direction_.resize(n);
    for (size_t i = 0; i < n; ++i) direction_[i] = float((votes_[i] > 0) - (votes_[i] < 0));
    sgd_.step(params, direction_, lr_.at(int64_t(updates[0].round)));
  }

  void save_state(Checkpoint& c) const override { sgd_.save_state(c, "server_sgd"); }
  void load_state(const Checkpoint& c) override { sgd_.load_state(c, "server_sgd"); }

 private:
  LrSchedule lr_;
  HostSgd sgd_;
  std::vector<int32_t> votes_;
  std::vector<float> direction_;
};

class ModelAveraging final : public Averaging {
 public:
  ModelAveraging(Weighting w, FedOptOptions opt, RobustOptions robust, AggregateNoise noise)
      : Averaging(w, robust, noise), opt_(opt) {}
  std::string_view name() const override { return "model"; }
  void save_state(Checkpoint& c) const override { opt_.save_state(c, "server_optimizer"); }
  void load_state(const Checkpoint& c) override { opt_.load_state(c, "server_optimizer"); }

 private:
  // params <- params + the server optimizer's step with the mean delta
  void step(std::span<const float> mean, uint64_t, std::span<float> params) override {
    opt_.step(params, mean);
  }

  FedOpt opt_;
};

}  // namespace

std::unique_ptr<Strategy> make_gradient_averaging(Weighting w, LrSchedule lr, SgdOptions sgd,
                                                  RobustOptions robust, AggregateNoise noise) {
  lr.validate();
  return std::make_unique<GradientAveraging>(w, lr, sgd, robust, noise);
}

std::unique_ptr<Strategy> make_majority_vote(LrSchedule lr, SgdOptions sgd) {
  lr.validate();
  return std::make_unique<MajorityVote>(lr, sgd);
}

std::unique_ptr<Strategy> make_model_averaging(Weighting w, FedOptOptions opt, RobustOptions robust,
                                               AggregateNoise noise) {
  return std::make_unique<ModelAveraging>(w, opt, robust, noise);
}

}  // namespace fedpar
