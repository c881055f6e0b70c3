// Suite report tables and plots; see suite_report.h.
#include "experiments/suite_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "core/median.h"
#include "experiments/epsilon_column.h"
#include "experiments/plot.h"

namespace fedpar {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

double best_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}
double last_of(const std::vector<double>& v) { return v.empty() ? 0 : v.back(); }

using Column = std::function<const std::vector<double>&(const SuiteRun&)>;

// Groups in the order the suite lists them; seeds of one run share a group.
std::vector<std::vector<const SuiteRun*>> groups(const std::vector<SuiteRun>& runs) {
  std::vector<std::vector<const SuiteRun*>> g;
  std::map<std::string, size_t> at;
  for (const auto& r : runs) {
    auto [it, fresh] = at.emplace(r.group, g.size());
    if (fresh) g.emplace_back();
    g[it->second].push_back(&r);
  }
  return g;
}

// One series per group: the mean over its runs, with the min..max band when there are several.
Series group_series(const std::vector<const SuiteRun*>& members, const Column& x, const Column& y) {
  Series s{members.front()->group, {}, {}, {}, {}};
  size_t n = SIZE_MAX;
  for (const auto* m : members) n = std::min({n, x(*m).size(), y(*m).size()});
  for (size_t i = 0; i < n; ++i) {
    double sx = 0, sy = 0, lo = 1e300, hi = -1e300;
    for (const auto* m : members) {
      sx += x(*m)[i];
      sy += y(*m)[i];
      lo = std::min(lo, y(*m)[i]);
      hi = std::max(hi, y(*m)[i]);
    }
    s.x.push_back(sx / double(members.size()));
    s.y.push_back(sy / double(members.size()));
    if (members.size() > 1) s.lo.push_back(lo), s.hi.push_back(hi);
  }
  return s;
}

}  // namespace

int rounds_to(const RunCurves& c, double target) {
  for (size_t k = 0; k < c.accuracy.size() && target > 0; ++k)
    if (c.accuracy[k] >= target) return int(c.round[k]);
  return 0;
}

std::string results_table(const std::vector<SuiteRun>& runs, double target) {
  std::ostringstream t;
  t << "| run | overrides | clients | median EMD | final accuracy | best accuracy | "
    << (target > 0 ? fmt::format("rounds to {0}% | seconds to {0}% | MB to {0}% | ", target) : "")
    << "MB communicated | round time (s) |\n|---|---|---|---|---|---|---|---|"
    << (target > 0 ? "---|---|---|" : "") << "\n";
  // the clock most runs count; a seconds cell on another clock says which
  std::map<std::string, int> clocks;
  for (const auto& r : runs) ++clocks[r.curves.clock];
  const std::string usual =
      clocks.empty() ? "" : std::max_element(clocks.begin(), clocks.end(), [](auto& a, auto& b) {
                              return a.second < b.second;
                            })->first;
  // " (elapsed time)": a cell on another clock than most runs' says which
  const auto other_clock = [&](const SuiteRun& r) {
    return r.curves.clock == usual ? "" : " (" + r.curves.clock + " time)";
  };
  for (const auto& r : runs) {
    std::string target_cell;
    if (target > 0) {
      const int k = rounds_to(r.curves, target);
      double secs = 0, mb = 0;
      for (size_t i = 0; i < r.curves.round.size(); ++i)
        if (int(r.curves.round[i]) == k && i < r.curves.seconds.size())
          secs = r.curves.seconds[i], mb = r.curves.mb[i];
      target_cell = k ? fmt::format("{} | {:.1f}{} | {:.1f} | ", k, secs, other_clock(r), mb)
                      : fmt::format("not in {} | - | - | ", int(last_of(r.curves.round)));
    }
    const bool evaluated = !r.curves.accuracy.empty();  // a diverged run may end before any
    const std::string final_cell = r.diverged_at_round
                                       ? fmt::format("diverged at round {}", *r.diverged_at_round)
                                       : fmt::format("{:.2f}%", last_of(r.curves.accuracy));
    t << fmt::format("| {} | `{}` | {} | {:.3f} | {} | {} | {}{} | {:.3f}{} |\n", r.label,
                     r.overrides.empty() ? "(the suite's base config)" : joined(r.overrides),
                     r.clients, r.median_emd, final_cell,
                     evaluated ? fmt::format("{:.2f}%", best_of(r.curves.accuracy)) : "-",
                     target_cell, evaluated ? fmt::format("{:.1f}", last_of(r.curves.mb)) : "-",
                     r.curves.round_seconds, other_clock(r));
  }
  return t.str();
}

namespace {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

// One run's seeds together: the diverged (or unevaluated) count, and of the others the final and
// best accuracies and the rounds to `target` of those that reached it.
struct OverSeeds {
  size_t seeds = 0, diverged = 0;
  std::vector<double> finals, bests, rounds;
};

OverSeeds over_seeds(const std::vector<const SuiteRun*>& group, double target) {
  OverSeeds o{.seeds = group.size()};
  for (const SuiteRun* r : group) {
    if (r->diverged_at_round || r->curves.accuracy.empty()) {
      ++o.diverged;  // no final accuracy to average
      continue;
    }
    o.finals.push_back(last_of(r->curves.accuracy));
    o.bests.push_back(best_of(r->curves.accuracy));
    if (const int k = rounds_to(r->curves, target)) o.rounds.push_back(k);
  }
  return o;
}

}  // namespace

std::string seed_means_table(const std::vector<SuiteRun>& runs, double target) {
  const auto all = groups(runs);
  if (std::none_of(all.begin(), all.end(), [](const auto& g) { return g.size() > 1; })) return "";
  std::ostringstream t;
  t << "| run | seeds | final accuracy: mean | std | min .. max | best accuracy: mean |"
    << (target > 0 ? fmt::format(" seeds at {0}% | their mean rounds to {0}% |", target) : "")
    << "\n|---|---|---|---|---|---|" << (target > 0 ? "---|---|" : "") << "\n";
  for (const auto& g : all) {
    const OverSeeds o = over_seeds(g, target);
    const size_t diverged = o.diverged;
    const auto &finals = o.finals, &bests = o.bests, &rounds = o.rounds;
    const double m = mean(finals);
    double var = 0;
    for (double x : finals) var += (x - m) * (x - m);
    const std::string seeds =
        diverged ? fmt::format("{} ({} diverged or unevaluated)", g.size(), diverged)
                 : std::to_string(g.size());
    if (finals.empty()) {
      t << fmt::format("| {} | {} | - | - | - | - |{}\n", g.front()->group, seeds,
                       target > 0 ? " 0 | - |" : "");
      continue;
    }
    t << fmt::format(
        "| {} | {} | {:.2f}% | {} | {:.2f} .. {:.2f}% | {:.2f}% |", g.front()->group, seeds, m,
        finals.size() > 1 ? fmt::format("{:.2f}", std::sqrt(var / double(finals.size() - 1)))
                          : std::string("-"),
        *std::min_element(finals.begin(), finals.end()),
        *std::max_element(finals.begin(), finals.end()), mean(bests));
    if (target > 0)
      t << fmt::format(" {} of {} | {} |", rounds.size(), g.size(),
                       rounds.empty() ? std::string("-") : fmt::format("{:.1f}", mean(rounds)));
    t << "\n";
  }
  return t.str();
}

std::string privacy_table(const std::vector<SuiteRun>& runs) {
  std::vector<std::string> names;
  std::vector<std::optional<double>> epsilons;
  std::vector<double> deltas, clipped_shares;
  for (const auto& g : groups(runs)) {
    uint64_t clipped = 0, aggregated = 0;
    std::optional<double> epsilon;  // the same for every seed: q, z and the rounds set it
    for (const SuiteRun* r : g) {
      clipped += r->curves.clipped, aggregated += r->curves.aggregated;
      if (r->curves.epsilon) epsilon = std::max(epsilon.value_or(0), *r->curves.epsilon);
    }
    if (aggregated == 0) continue;
    names.push_back(g.front()->group);
    epsilons.push_back(epsilon);
    deltas.push_back(g.front()->privacy_delta);
    clipped_shares.push_back(100.0 * double(clipped) / double(aggregated));
  }
  if (names.empty()) return "";
  EpsilonColumn column = epsilon_column(epsilons, deltas);
  if (column.header.empty())  // clipped without noise: no guarantee in any row
    column = {.header = "epsilon",
              .cells = std::vector<std::string>(names.size(), "none (no noise)")};
  std::string t = fmt::format("| run | {} | updates clipped |\n|---|---|---|\n", column.header);
  for (size_t i = 0; i < names.size(); ++i)
    t += fmt::format("| {} | {} | {:.1f}% |\n", names[i], column.cells[i], clipped_shares[i]);
  return t;
}

std::string accounting_table(const std::vector<SuiteRun>& runs) {
  if (std::none_of(runs.begin(), runs.end(),
                   [](const SuiteRun& r) { return r.accounting.clients > 0; }))
    return "";  // no run with per-client updates: no rows
  std::ostringstream t;
  t << "| run | clients per round | parameters per client (MB) | activations per client (MB) | "
       "down per client (MB) | up per client (MB) | client compute (ms) | broadcast (ms) | "
       "exchange (ms) | aggregation (ms) |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& g :
       groups(runs)) {  // one row per run (the first seed: memory and bytes do not vary)
    const RunAccounting& a = g.front()->accounting;
    if (a.clients == 0)
      continue;  // master, allreduce, async: no per-client updates (traffic table)
    t << fmt::format(
        "| {} | {:.0f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.2f} | {:.3f} | {:.2f} | {:.2f} |\n",
        g.front()->group, a.clients, a.parameter_mb, a.activation_mb, a.down_mb, a.up_mb,
        a.compute_ms, a.broadcast_ms, a.exchange_ms, a.aggregate_ms);
  }
  return t.str();
}

std::string traffic_table(const std::vector<SuiteRun>& runs) {
  bool any = false;
  for (const auto& r : runs)
    any |= r.traffic.topology == "master" || r.traffic.topology == "allreduce" ||
           r.traffic.topology == "async";
  if (!any) return "";
  std::ostringstream t;
  t << "| run | topology | workers | step (ms) | server sent (MB) | server received (MB) | busiest "
       "worker sent (MB) "
       "| busiest worker received (MB) | all-reduce (ms) | busbw (GB/s) "
       "|\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& g : groups(runs)) {
    const RunTraffic& x = g.front()->traffic;
    t << fmt::format("| {} | {} | {} | {:.2f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {} | {} |\n",
                     g.front()->group, x.topology, x.workers, x.step_ms, x.server_mb_sent,
                     x.server_mb_received, x.worker_mb_sent, x.worker_mb_received,
                     x.allreduce_ms > 0 ? fmt::format("{:.2f}", x.allreduce_ms) : "-",
                     x.busbw_gbps > 0 ? fmt::format("{:.3f}", x.busbw_gbps) : "-");
  }
  return t.str();
}

std::string grid_table(const std::vector<SuiteRun>& runs, double target) {
  // name -> its values' seed groups (a value's seeds share a group, "name@value")
  std::map<std::string, std::vector<std::vector<const SuiteRun*>>> grid;
  std::vector<std::string> order;
  size_t seeds = 1;
  for (const auto& g : groups(runs)) {
    const size_t at = g.front()->group.find('@');
    if (at == std::string::npos) continue;
    const std::string name = g.front()->group.substr(0, at);
    if (!grid.count(name)) order.push_back(name);
    grid[name].push_back(g);
    seeds = std::max(seeds, g.size());
  }
  if (grid.empty()) return "";
  // A value over its seeds (one lucky seed must not pick it), by shares, not counts: a value may
  // have lost a seed's run (it failed, and the suite went on).
  const auto share = [](const OverSeeds& o, size_t k) { return double(k) / double(o.seeds); };
  const auto better = [&](const OverSeeds& a, const OverSeeds& b) {  // fewer diverged, more at
    if (share(a, a.diverged) != share(b, b.diverged))  // the target, in fewer rounds, accuracy
      return share(a, a.diverged) < share(b, b.diverged);
    if (share(a, a.rounds.size()) != share(b, b.rounds.size()))
      return share(a, a.rounds.size()) > share(b, b.rounds.size());
    if (mean(a.rounds) != mean(b.rounds)) return mean(a.rounds) < mean(b.rounds);
    return mean(a.bests) > mean(b.bests);
  };
  const std::string over = seeds > 1 ? " (mean over its seeds)" : "";
  std::ostringstream t;
  t << "| setting | values tried | best" << over << " | "
    << (target > 0 ? fmt::format("rounds to {}% | ", target) : "")
    << "best accuracy |\n|---|---|---|" << (target > 0 ? "---|" : "") << "---|\n";
  for (const auto& name : order) {
    const auto& values = grid[name];
    std::vector<std::string> tried;
    size_t best = 0;
    for (size_t k = 0; k < values.size(); ++k) {
      tried.push_back(values[k].front()->group.substr(name.size() + 1));
      if (better(over_seeds(values[k], target), over_seeds(values[best], target))) best = k;
    }
    const OverSeeds v = over_seeds(values[best], target);
    const std::string rounds = v.rounds.empty() ? "not reached | "
                               : seeds > 1      ? fmt::format("{:.1f} ({} of {} seeds) | ",
                                                              mean(v.rounds), v.rounds.size(), v.seeds)
                                                : fmt::format("{:.0f} | ", mean(v.rounds));
    // every seed of every value diverged: no accuracy to show (0.00% would read as measured)
    const std::string accuracy =
        v.diverged == v.seeds ? fmt::format("- (all {} diverged or unevaluated)", v.seeds)
        : v.diverged
            ? fmt::format("{:.2f}% ({} of {} diverged)", mean(v.bests), v.diverged, v.seeds)
            : fmt::format("{:.2f}%", mean(v.bests));
    t << fmt::format("| {} | {} | {} | {}{} |\n", name, joined(tried), tried[best],
                     target > 0 ? rounds : "", accuracy);
  }
  return t.str();
}

std::string divergence_table(const std::vector<SuiteRun>& runs) {
  const auto paired = [](const SuiteRun& r) {
    return !r.reference.empty() && !r.divergence.round.empty();
  };
  const bool drift = std::ranges::any_of(
      runs, [&](const SuiteRun& r) { return paired(r) && !r.curves.drift.empty(); });
  std::ostringstream t;
  for (const auto& r : runs) {
    const auto& d = r.divergence;
    if (!paired(r)) continue;
    if (t.tellp() == 0)
      t << (drift ? "| run | reference | median drift | first saved round | middle | last |\n"
                    "|---|---|---|---|---|---|\n"
                  : "| run | reference | first saved round | middle | last |\n"
                    "|---|---|---|---|---|\n");
    auto cell = [&](size_t i) {
      return fmt::format("{:.2e} (round {:.0f})", d.relative[i], d.round[i]);
    };
    const std::string drift_cell = !drift ? ""
                                   : r.curves.drift.empty()
                                       ? "- | "
                                       : fmt::format("{:.2e} | ", median(r.curves.drift));
    t << fmt::format("| {} | {} | {}{} | {} | {} |\n", r.label, r.reference, drift_cell, cell(0),
                     cell(d.round.size() / 2), cell(d.round.size() - 1));
  }
  return t.str();
}

std::string warnings_list(const std::vector<SuiteRun>& runs) {
  std::vector<std::pair<std::string, std::vector<std::string>>> warned;  // in the runs' order
  for (const auto& r : runs)
    for (const std::string& w : r.warnings) {
      auto at =
          std::find_if(warned.begin(), warned.end(), [&](const auto& e) { return e.first == w; });
      if (at == warned.end()) at = warned.insert(warned.end(), {w, {}});
      at->second.push_back(r.label);
    }
  std::string out;
  for (const auto& [w, labels] : warned)
    out += fmt::format("- {} ({} {})\n", w, labels.size() == 1 ? "run" : "runs",
                       fmt::join(labels, ", "));
  return out;
}

std::string clients_table(const std::vector<SuiteRun>& runs) {
  std::ostringstream t;
  // which samples scored the clients, where some run held samples out (partition.holdout)
  const bool holdout = std::any_of(runs.begin(), runs.end(),
                                   [](const SuiteRun& r) { return r.client_holdout.has_value(); });
  for (const auto& r : runs) {
    const auto& c = r.curves;
    if (c.client_round.empty()) continue;
    if (t.tellp() == 0)
      t << fmt::format(
          "| run | median EMD |{} round | test accuracy | clients' mean | worst 10% | lowest | "
          "highest |\n|---|---|{}---|---|---|---|---|---|\n",
          holdout ? " scored on |" : "", holdout ? "---|" : "");
    // the test accuracy of the same round, where it was evaluated
    const auto at = std::find(c.round.begin(), c.round.end(), c.client_round.back());
    t << fmt::format(
        "| {} | {:.3f} |{} {:.0f} | {} | {:.2f}% | {:.2f}% | {:.2f}% | {:.2f}% |\n", r.label,
        r.median_emd,
        !holdout           ? ""
        : r.client_holdout ? fmt::format(" held-out {:g}% |", 100 * *r.client_holdout)
                           : " training shard |",
        c.client_round.back(),
        at == c.round.end() ? "-"
                            : fmt::format("{:.2f}%", c.accuracy[size_t(at - c.round.begin())]),
        c.client_mean.back(), c.client_worst10.back(), c.client_min.back(), c.client_max.back());
  }
  return t.str();
}

std::string draw_suite_plots(const std::vector<SuiteRun>& runs, const std::string& title,
                             const std::filesystem::path& dir) {
  const auto gs = groups(runs);
  bool seeds = false, drift = false, divergence = false, clients = false;
  for (const auto& g : gs) seeds |= g.size() > 1;
  for (const auto& r : runs)
    drift |= !r.curves.drift.empty(), divergence |= !r.divergence.round.empty(),
        clients |= !r.curves.client_round.empty();
  const Column round = [](const SuiteRun& r) -> const auto& { return r.curves.round; };
  const Column accuracy = [](const SuiteRun& r) -> const auto& { return r.curves.accuracy; };
  const Column mb = [](const SuiteRun& r) -> const auto& { return r.curves.mb; };
  const Column samples = [](const SuiteRun& r) -> const auto& { return r.curves.samples; };
  const Column seconds = [](const SuiteRun& r) -> const auto& { return r.curves.seconds; };
  const Column loss = [](const SuiteRun& r) -> const auto& { return r.curves.test_loss; };
  const Column cosine = [](const SuiteRun& r) -> const auto& { return r.curves.cosine; };
  const Column drifts = [](const SuiteRun& r) -> const auto& { return r.curves.drift; };
  const Column div_round = [](const SuiteRun& r) -> const auto& { return r.divergence.round; };
  const Column div = [](const SuiteRun& r) -> const auto& { return r.divergence.relative; };
  const Column client_round = [](const SuiteRun& r) -> const auto& {
    return r.curves.client_round;
  };
  const Column worst10 = [](const SuiteRun& r) -> const auto& { return r.curves.client_worst10; };
  const std::string band = seeds ? " (mean over seeds; band: min to max)" : "";

  struct Spec {
    const char* file;
    std::string title, xlabel, ylabel;
    Column x, y;
    bool log_y = false;
    std::string note;
  };
  std::vector<Spec> specs = {
      {"accuracy-vs-round.svg", "test accuracy per round" + band, "round", "test accuracy (%)",
       round, accuracy},
      {"accuracy-vs-samples.svg", "test accuracy per sample processed" + band,
       "samples processed by all clients (cumulative)", "test accuracy (%)", samples, accuracy},
      {"accuracy-vs-seconds.svg", "test accuracy per second of training" + band,
       "seconds (the server's rounds, or the network's simulated or emulated time; cumulative)",
       "test accuracy (%)", seconds, accuracy},
      {"accuracy-vs-bytes.svg", "test accuracy per MB communicated" + band,
       "MB sent + received at the server, and between workers (cumulative)", "test accuracy (%)",
       mb, accuracy},
      {"update-cosine-vs-round.svg", "agreement of client updates", "round",
       "mean pairwise cosine of client updates", round, cosine}};
  if (seeds)
    specs.push_back({"test-loss-vs-samples.svg", "test loss per sample processed" + band,
                     "samples processed by all clients (cumulative)",
                     "test loss (mean over the test set)", samples, loss});
  if (drift)
    specs.push_back(
        {"drift-vs-round.svg", "drift: averaged deltas vs K steps of the averaged gradient",
         "round", "||avg delta - avg K-step linear update|| / ||avg linear update||", round, drifts,
         true, "Runs without local drift (K = 1: exactly 0) are not drawn on the log scale."});
  if (clients)
    specs.push_back({"client-worst10-vs-round.svg",
                     "worst 10% of clients: their accuracy on their own samples" + band, "round",
                     "accuracy of the worst 10% of clients (%)", client_round, worst10});
  if (divergence)
    specs.push_back({"weight-divergence-vs-round.svg",
                     "weight divergence from the paired reference run", "round",
                     "||w_run - w_reference|| / ||w_reference||", div_round, div, true,
                     "Runs identical to their reference (0) are not drawn on the log scale."});

  std::ostringstream md;
  for (const auto& sp : specs) {
    LinePlot p{sp.title + "\n" + title, sp.xlabel, sp.ylabel, false, sp.log_y, {}};
    for (const auto& g : gs) {
      Series s = group_series(g, sp.x, sp.y);
      if (!s.x.empty()) p.series.push_back(std::move(s));
    }
    if (p.series.empty()) continue;
    std::string why;
    if (draw_line_plot(dir / "plots" / sp.file, p, &why))
      md << fmt::format("![{}: {}](plots/{})\n\n", title, sp.title, sp.file);
    else
      md << fmt::format("(plot {} not drawn: {})\n\n", sp.file, why);
    if (!sp.note.empty()) md << sp.note << "\n\n";
  }
  return md.str();
}

nlohmann::json run_json(const SuiteRun& r, double target) {
  const auto& c = r.curves;
  const auto& a = r.accounting;
  nlohmann::json j = {{"label", r.label},
                      {"group", r.group},
                      {"overrides", r.overrides},
                      {"clients", r.clients},
                      {"median_emd", r.median_emd},
                      {"final_accuracy", last_of(c.accuracy)},
                      {"best_accuracy", best_of(c.accuracy)},
                      {"rounds_to_target", rounds_to(c, target)},
                      {"round", c.round},
                      {"accuracy", c.accuracy},
                      {"test_loss", c.test_loss},
                      {"mb_communicated", c.mb},
                      {"samples_processed", c.samples},
                      {"mean_pairwise_cosine", c.cosine},
                      {"training_seconds", c.seconds},
                      {"seconds", r.seconds},
                      {"results", "runs/" + r.label},
                      {"accounting",
                       {{"clients_per_round", a.clients},
                        {"parameter_mb", a.parameter_mb},
                        {"activation_mb", a.activation_mb},
                        {"down_mb", a.down_mb},
                        {"up_mb", a.up_mb},
                        {"compute_ms", a.compute_ms},
                        {"broadcast_ms", a.broadcast_ms},
                        {"exchange_ms", a.exchange_ms},
                        {"aggregate_ms", a.aggregate_ms}}}};
  const auto& t = r.traffic;
  j["traffic"] = {{"topology", t.topology},
                  {"workers", t.workers},
                  {"step_ms", t.step_ms},
                  {"server_mb_sent", t.server_mb_sent},
                  {"server_mb_received", t.server_mb_received},
                  {"worker_mb_sent", t.worker_mb_sent},
                  {"worker_mb_received", t.worker_mb_received},
                  {"allreduce_ms", t.allreduce_ms},
                  {"busbw_gbps", t.busbw_gbps}};
  if (!c.drift.empty()) j["update_drift"] = c.drift;
  if (!c.client_round.empty())  // eval_clients, in percent
    j["clients_accuracy"] = {{"round", c.client_round},
                             {"mean", c.client_mean},
                             {"worst10", c.client_worst10},
                             {"lowest", c.client_min},
                             {"highest", c.client_max}};
  if (r.client_holdout) j["clients_accuracy"]["holdout"] = *r.client_holdout;
  if (!r.reference.empty())
    j["divergence"] = {{"reference", r.reference},
                       {"round", r.divergence.round},
                       {"relative", r.divergence.relative}};
  return j;
}

}  // namespace fedpar
