// `fedpar privacy`: what DP-FedAvg's rounds cost before running them: the accountant's epsilon,
// round by round, for a noise multiplier, or the least noise multiplier that keeps a budget
// (docs/privacy.md). From a run config, or from flags that override it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>

#include "core/adaptive_clip.h"
#include "core/check.h"
#include "core/config.h"
#include "core/privacy_accountant.h"
#include "core/run_spec.h"
#include "experiments/cli/commands.h"

namespace fedpar {
namespace {

struct PrivacyFlags {
  std::string config;
  std::optional<int64_t> clients, rounds;
  std::optional<double> fraction, noise, epsilon, delta;
};

// The rounds a budget table shows: 1, an eighth, a quarter, a half, three quarters, all.
std::set<uint64_t> milestones(uint64_t rounds) {
  std::set<uint64_t> out{1, rounds};
  for (uint64_t eighths : {1, 2, 4, 6}) out.insert(std::max<uint64_t>(1, rounds * eighths / 8));
  return out;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}

int report(const PrivacyFlags& f) {
  RunSpec s;  // the config's, or the defaults'
  if (!f.config.empty()) {
    Config c = make_run_config();
    c.merge_file(f.config);
    s = resolve_run_spec(c);
  }
  require(!f.clients || *f.clients >= 1, "--clients must be >= 1");
  require(!f.noise || (*f.noise > 0 && std::isfinite(*f.noise)),
          "--noise must be a positive number (privacy.noise_multiplier)");
  require(!f.epsilon || (*f.epsilon > 0 && std::isfinite(*f.epsilon)),
          "--epsilon must be a positive number (the budget)");
  const int64_t clients = f.clients.value_or(s.partition.clients);
  const int64_t rounds = f.rounds.value_or(s.rounds);
  const double fraction = f.fraction.value_or(s.fraction);
  const double delta = f.delta.value_or(s.privacy.delta);
  require(clients >= 1, f.config.empty()
                            ? "how many clients? --clients N"
                            : "how many clients? --clients N (the config's partition.clients is "
                              "0: its partition counts them from the data)");
  require(rounds >= 1, "--rounds must be >= 1");
  require(fraction > 0 && fraction <= 1, "--fraction must be in (0, 1]");
  require(delta > 0 && delta < 1, "--delta must be in (0, 1)");
  require(!(f.noise && f.epsilon), "give --noise or --epsilon, not both");
  const double z = f.noise.value_or(s.privacy.noise_multiplier);
  require(z > 0 || f.epsilon,
          "which noise? --noise Z (privacy.noise_multiplier, 0 in the config: no guarantee), or "
          "--epsilon E for the least that keeps E");
  s.fraction = fraction;
  s.privacy.noise_multiplier = z;
  const size_t k = draws_per_round(s, size_t(clients));
  const double q = sampling_rate(s, size_t(clients));
  if (!f.config.empty() && !s.privacy.on())
    fmt::print(
        "note: {} sets no [privacy] (privacy.clip_norm = 0): its runs add no noise and have no "
        "guarantee; DP-FedAvg needs client_sampling = \"poisson\", weighting = \"uniform\", "
        "privacy.clip_norm and privacy.noise_multiplier (docs/privacy.md)\n",
        f.config);
  if (delta >= 1.0 / double(clients))
    fmt::print(
        "note: delta = {:g} is not below 1 / {} clients: a mechanism that published one client's "
        "data outright would meet it; take delta well below 1 / N\n",
        delta, clients);
  fmt::print(
      "DP-FedAvg: {} clients, each drawn with probability q = {:g} a round (K = {}), delta = "
      "{:g}\n",
      clients, q, k, delta);
  if (f.epsilon) {
    const double z = noise_for_epsilon(q, uint64_t(rounds), delta, *f.epsilon);
    const PrivacySpent p = privacy_spent(q, z, uint64_t(rounds), delta);
    fmt::print(
        "privacy.noise_multiplier = {:.4g} keeps epsilon at or below {:g} after {} rounds "
        "(epsilon {:.4g}, RDP order {}): the average's noise is {:.4g} x privacy.clip_norm a "
        "coordinate (z / K)\n",
        z, *f.epsilon, rounds, p.epsilon, p.order, z / double(k));
    return 0;
  }
  fmt::print(
      "noise multiplier z = {:g}: the average's noise is {:.4g} x privacy.clip_norm a "
      "coordinate\n\n",
      z, z / double(k));
  if (s.privacy.adaptive.on()) {  // the count's noise takes part of z (core/adaptive_clip.h)
    const double sigma_b = count_noise_std(s.privacy.adaptive, k);
    fmt::print(
        "(the config's adaptive clip: the updates' noise multiplier is {:.4g}, the clip's count "
        "noised with sigma_b = {:g}; together they cost what z does)\n\n",
        updates_noise_multiplier(s.privacy, k), sigma_b);
  }
  fmt::print("| after round | epsilon | RDP order |\n|---|---|---|\n");
  for (uint64_t r : milestones(uint64_t(rounds))) {
    const PrivacySpent p = privacy_spent(q, z, r, delta);
    fmt::print("| {} | {:.4g} | {} |\n", r, p.epsilon, p.order);
  }
  return 0;
}

}  // namespace

Action add_privacy_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "privacy",
      "DP-FedAvg's budget before a run: epsilon by round for a noise multiplier, or the least "
      "noise multiplier for an epsilon (docs/privacy.md)");
  auto f = std::make_shared<PrivacyFlags>();
  cmd->add_option("--config", f->config,
                  "a run config: its clients, fraction, rounds, noise, delta")
      ->check(CLI::ExistingFile);
  cmd->add_option("--clients", f->clients, "N, the clients [partition.clients]");
  cmd->add_option("--fraction", f->fraction,
                  "C: K = max(1, round(C N)) a round on average [fraction]");
  cmd->add_option("--rounds", f->rounds, "T [rounds]");
  cmd->add_option("--noise", f->noise, "z [privacy.noise_multiplier]");
  cmd->add_option("--epsilon", f->epsilon,
                  "a budget: print the least z that keeps it after T rounds");
  cmd->add_option("--delta", f->delta, "[privacy.delta]");
  return [f] { return report(*f); };
}

}  // namespace fedpar
