#include "experiments/compare_seeds.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace fedpar {

SeedGroups seed_groups(const std::vector<SeedRun>& runs, const std::string& metric, double target,
                       const std::function<std::string(double)>& value) {
  std::vector<std::vector<const SeedRun*>> groups;
  std::map<std::map<std::string, std::string>, size_t> at;  // settings but the seed -> group
  for (const SeedRun& r : runs) {
    if (!r.settings) continue;
    auto but_seed = *r.settings;
    but_seed.erase("seed");
    const auto [it, fresh] = at.emplace(but_seed, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(&r);
  }
  SeedGroups out;
  std::string rows;
  for (const auto& g : groups) {
    // runs of one seed (a rerun, another build) are no spread over seeds: the seed's value is in
    // the settings only where it differs among the runs compared
    std::set<std::string> seeds;
    for (const SeedRun* r : g)
      seeds.insert(r->settings->count("seed") ? r->settings->at("seed") : "");
    if (seeds.size() < 2) continue;
    std::vector<double> finals, bests, rounds;
    std::vector<std::string> labels;
    for (const SeedRun* r : g) {
      finals.push_back(r->final), bests.push_back(r->best), labels.push_back(r->label);
      if (r->target_round) rounds.push_back(*r->target_round);
    }
    const auto mean = [](const std::vector<double>& v) {
      return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    };
    const double m = mean(finals);
    double var = 0;
    for (double f : finals) var += (f - m) * (f - m);
    const double sd = std::sqrt(var / double(finals.size() - 1));
    const auto [lo, hi] = std::ranges::minmax(finals);
    rows +=
        fmt::format("| {} | {} | {} | {} | {} .. {} | {} |", fmt::join(labels, ", "),
                    seeds.size() == g.size() ? std::to_string(g.size())
                                             : fmt::format("{} ({} runs)", seeds.size(), g.size()),
                    value(m), value(sd), value(lo), value(hi), value(mean(bests)));
    if (target > 0)
      rows += fmt::format(" {} of {} | {} |", rounds.size(), g.size(),
                          rounds.empty() ? std::string("-") : fmt::format("{:.1f}", mean(rounds)));
    rows += "\n";
    nlohmann::json j = {{"runs", labels},          {"seeds", seeds.size()}, {"final_mean", m},
                        {"final_std", sd},         {"final_min", lo},       {"final_max", hi},
                        {"best_mean", mean(bests)}};
    if (target > 0) {
      j["reached_target"] = rounds.size();
      j["target_round_mean"] = rounds.empty() ? nlohmann::json() : nlohmann::json(mean(rounds));
    }
    out.json.push_back(std::move(j));
  }
  if (rows.empty()) return out;
  out.table = fmt::format(
      "| runs alike but for their seed | seeds | final {0}: mean | std | min .. max | best {0}: "
      "mean |{1}\n|---|---|---|---|---|---|{2}\n",
      metric, target > 0 ? " reached the target | their mean first round |" : "",
      target > 0 ? "---|---|" : "");
  out.table += rows;
  return out;
}

}  // namespace fedpar
