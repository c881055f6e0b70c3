// The lr-scaling suite's section; see lr_scaling_report.h.
#include "experiments/lr_scaling_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "core/check.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "experiments/plot.h"
#include "experiments/run_metrics.h"

namespace fedpar {
namespace {

const std::vector<std::string> kRules = {"none", "linear", "sqrt"};

// The rates of a grid are written in decimal and compared as the optimizer holds them (float).
bool same_rate(double a, double b) { return float(a) == float(b); }

// A run trains when it did not diverge and ends at or above `trains_at` percent.
bool trains(const LrRun& r, double trains_at) {
  return r.diverged_at == 0 && r.accuracy >= trains_at;
}

// A run's accuracy cell: a diverged run says where.
std::string outcome(const LrRun& r) {
  return r.diverged_at ? fmt::format("diverged at step {}", r.diverged_at)
                       : fmt::format("{:.2f}%", r.accuracy);
}

// One column of the tables: a rule with or without warm-up.
struct Column {
  std::string rule;
  bool warmup = false;
  std::string name() const { return warmup ? rule + " + warm-up" : rule; }
  bool holds(const LrRun& r) const { return r.rule == rule && (r.warmup_steps > 0) == warmup; }
};

std::vector<Column> columns_present(const std::vector<LrRun>& runs) {
  std::vector<Column> cols;
  for (const bool w : {false, true})
    for (const auto& rule : kRules) {
      const Column c{rule, w};
      if (std::any_of(runs.begin(), runs.end(), [&](const LrRun& r) { return c.holds(r); }))
        cols.push_back(c);
    }
  return cols;
}

std::vector<int64_t> workers_present(const std::vector<LrRun>& runs) {
  std::set<int64_t> n;
  for (const auto& r : runs) n.insert(r.workers);
  return {n.begin(), n.end()};
}

// The runs of one cell (N workers, a column), by rate as written.
std::vector<const LrRun*> cell(const std::vector<LrRun>& runs, int64_t n, const Column& c) {
  std::vector<const LrRun*> out;
  for (const auto& r : runs)
    if (r.workers == n && c.holds(r)) out.push_back(&r);
  std::sort(out.begin(), out.end(),
            [](const LrRun* a, const LrRun* b) { return a->base_lr < b->base_lr; });
  return out;
}

// The best final accuracy of a cell (the smaller rate on a tie; a diverged run last).
const LrRun* best_of(const std::vector<const LrRun*>& c) {
  const auto score = [](const LrRun* r) { return r->diverged_at ? -1.0 : r->accuracy; };
  const LrRun* best = nullptr;
  for (const LrRun* r : c)
    if (!best || score(r) > score(best)) best = r;
  return best;
}

// The largest rate of a cell whose run trains.
const LrRun* largest_training(const std::vector<const LrRun*>& c, double trains_at) {
  const LrRun* top = nullptr;
  for (const LrRun* r : c)
    if (trains(*r, trains_at)) top = r;
  return top;
}

const LrRun* at_rate(const std::vector<const LrRun*>& c, double base_lr) {
  for (const LrRun* r : c)
    if (same_rate(r->base_lr, base_lr)) return r;
  return nullptr;
}

std::string rate(double v) { return fmt::format("{:.4g}", v); }

std::string table(const std::vector<LrRun>& runs, const std::vector<Column>& cols,
                  const std::function<std::string(const std::vector<const LrRun*>&)>& show) {
  std::ostringstream md;
  md << "| N | global batch | steps |";
  for (const auto& c : cols) md << " " << c.name() << " |";
  md << "\n|---|---|---|";
  for (size_t k = 0; k < cols.size(); ++k) md << "---|";
  md << "\n";
  for (const int64_t n : workers_present(runs)) {
    const auto any =
        std::find_if(runs.begin(), runs.end(), [&](const LrRun& r) { return r.workers == n; });
    md << fmt::format("| {} | {} | {} |", n, any->global_batch, any->steps);
    for (const auto& c : cols) {
      const auto runs_here = cell(runs, n, c);
      md << " " << (runs_here.empty() ? "-" : show(runs_here)) << " |";
    }
    md << "\n";
  }
  return md.str();
}

// The claim: the same N, warm-up and effective rate give the same model, whatever rule set it.
// Returns the number of coincident groups checked; failures go to `failed`.
int check_rules_only_set_the_rate(const std::vector<LrRun>& runs,
                                  std::vector<std::string>* failed) {
  std::map<std::tuple<int64_t, int64_t, float>, std::vector<const LrRun*>> same;
  for (const auto& r : runs) same[{r.workers, r.warmup_steps, float(r.lr)}].push_back(&r);
  int checked = 0;
  for (const auto& [key, group] : same) {
    if (group.size() < 2) continue;
    ++checked;
    for (const LrRun* r : group)
      if (r->model_hash != group[0]->model_hash)
        failed->push_back(fmt::format(
            "runs '{}' and '{}' train at the same N = {}, warm-up and rate {} but end with "
            "different models ({} vs {}): the scaling rule changed more than the rate",
            group[0]->label, r->label, r->workers, rate(r->lr), group[0]->model_hash,
            r->model_hash));
  }
  return checked;
}

// Accuracy against the effective rate, one series per (N, warm-up): the rules only move along it.
LinePlot rate_plot(const std::vector<LrRun>& runs) {
  LinePlot p{.title =
                 "Final test accuracy against the effective learning rate\n(every rule's "
                 "runs on one curve per N: a rule only chooses the rate; diverged runs left out)",
             .xlabel = "effective learning rate (after the scaling rule)",
             .ylabel = "final test accuracy (%)",
             .log_x = true};
  for (const int64_t n : workers_present(runs))
    for (const bool w : {false, true}) {
      std::map<float, double> points;
      for (const auto& r : runs)
        if (r.workers == n && (r.warmup_steps > 0) == w && !r.diverged_at)
          points[float(r.lr)] = r.accuracy;
      if (points.empty()) continue;
      Series s{.label = fmt::format("N = {}{}", n, w ? ", warm-up" : "")};
      for (const auto& [x, y] : points) s.x.push_back(x), s.y.push_back(y);
      p.series.push_back(std::move(s));
    }
  return p;
}

// Accuracy against N when the single worker's best rate is carried over by each rule.
LinePlot carried_plot(const std::vector<LrRun>& runs, const std::vector<Column>& cols,
                      double reference) {
  LinePlot p{.title = fmt::format("Final test accuracy with the single worker's best rate ({}) "
                                  "carried over by each rule\n(diverged runs left out)",
                                  rate(reference)),
             .xlabel = "workers N (50 samples each per step)",
             .ylabel = "final test accuracy (%)",
             .log_x = true};
  for (const auto& c : cols) {
    Series s{.label = c.name()};
    for (const int64_t n : workers_present(runs))
      if (const LrRun* r = at_rate(cell(runs, n, c), reference); r && !r->diverged_at)
        s.x.push_back(double(n)), s.y.push_back(r->accuracy);
    if (!s.x.empty()) p.series.push_back(std::move(s));
  }
  return p;
}

std::string draw(const std::filesystem::path& dir, const std::string& file, const LinePlot& p) {
  std::string why;
  if (draw_line_plot(dir / "plots" / file, p, &why))
    return fmt::format("![{}](plots/{})\n\n", p.title.substr(0, p.title.find('\n')), file);
  return fmt::format("(plot {} not drawn: {})\n\n", file, why);
}

}  // namespace

std::optional<std::string> lr_run_refusal(const RunSpec& s) {
  if (s.regime != Regime::kModel) return std::nullopt;
  return "the lr-scaling section (suite.lr_scaling = true) compares data-parallel steps "
         "(regime = \"gradient\")";
}

LrRun read_lr_run(const std::filesystem::path& dir, const std::string& label) {
  const RunSpec s = read_run_spec(dir);
  if (const auto why = lr_run_refusal(s)) throw Error(fmt::format("run '{}': {}", label, *why));
  const RunSummary summary = read_run_summary(dir);
  if (!summary.final || !summary.final->test_accuracy)
    throw Error(fmt::format("run '{}' has no final test accuracy in summary.json", label));
  LrRun r{.label = label,
          .workers = clients_per_round(s),
          .steps = s.rounds,
          .rule = lr_scaling_name(s.optimizer.scaling),
          .warmup_steps = s.optimizer.lr.warmup_steps,
          .base_lr = s.optimizer.configured_lr,
          .lr = s.optimizer.lr.base_lr,
          .accuracy = 100 * *summary.final->test_accuracy,
          .diverged_at = summary.diverged_at_round.value_or(0),
          .model_hash = summary.model_hash};
  r.global_batch = r.workers * s.sgd_batch;
  return r;
}

LrScalingSection lr_scaling_section(const std::vector<LrRun>& runs, double trains_at,
                                    const std::filesystem::path& dir) {
  LrScalingSection out;
  if (runs.empty()) return out;
  const auto cols = columns_present(runs);
  const auto ns = workers_present(runs);
  // The single worker's best rate (the fewest workers, no warm-up where there is such a run).
  const Column base_col =
      std::any_of(runs.begin(), runs.end(),
                  [&](const LrRun& r) { return r.workers == ns.front() && r.warmup_steps == 0; })
          ? Column{"none", false}
          : Column{"none", true};
  const auto base_cell = cell(runs, ns.front(), base_col);
  if (base_cell.empty())
    throw Error(
        fmt::format("the lr-scaling section needs runs with N = {} and optimizer.scaling = "
                    "\"none\" (the single worker's rate): add them to suite.only",
                    ns.front()));
  const LrRun& reference = *best_of(base_cell);
  const int checked = check_rules_only_set_the_rate(runs, &out.failed);

  std::ostringstream md;
  md << "### Learning-rate scaling\n\n";
  const int64_t samples = reference.steps * reference.global_batch;
  const bool same_samples = std::all_of(runs.begin(), runs.end(), [&](const LrRun& r) {
    return r.steps * r.global_batch == samples;
  });
  md << fmt::format(
      "Each run: N workers, each step {} samples per worker; {}. The rate as written "
      "(optimizer.lr) becomes the step's rate by the rule: none, linear (x B / reference_batch) "
      "or sqrt (x sqrt(B / reference_batch)), B the global batch; warm-up ramps it linearly over "
      "the first steps (each run's optimizer.warmup_steps). Accuracy is on the test set after the "
      "last step. The single worker's best rate is **{}** ({:.2f}% at N = {}).\n\n",
      reference.global_batch / reference.workers,
      same_samples
          ? fmt::format("every run sees {} samples, so N workers take 1/N of the steps", samples)
          : std::string("the runs see different numbers of samples (steps x global "
                        "batch): compare their accuracies with care"),
      rate(reference.base_lr), reference.accuracy, reference.workers);
  if (!out.failed.empty()) {
    md << "**Claim failed**:\n\n";
    for (const auto& f : out.failed) md << "- " << f << "\n";
    md << "\n";
  }
  md << fmt::format(
      "**Claim** (checked on {} group(s) of runs at the same N, warm-up and "
      "effective rate): a rule only sets the rate, so such runs end with the same "
      "model bytes: {}.\n\n",
      checked,
      checked == 0         ? "not tested (no two runs shared a rate)"
      : out.failed.empty() ? "**holds**"
                           : "**fails**");
  md << fmt::format(
      "#### The single worker's rate ({}) carried over by each rule\n\n"
      "Final test accuracy (the effective rate in brackets).\n\n",
      rate(reference.base_lr));
  md << table(runs, cols, [&](const std::vector<const LrRun*>& c) {
    const LrRun* r = at_rate(c, reference.base_lr);
    return r ? fmt::format("{} ({})", outcome(*r), rate(r->lr)) : std::string("-");
  }) << "\n";
  md << fmt::format(
      "#### The largest rate that still trains (final accuracy >= {:g}%)\n\n"
      "The rate as written, the effective rate in brackets; `none` when no rate "
      "of the grid trained; `>=` when the grid's largest rate trained (the "
      "limit lies beyond it).\n\n",
      trains_at);
  md << table(runs, cols, [&](const std::vector<const LrRun*>& c) {
    const LrRun* r = largest_training(c, trains_at);
    if (!r) return std::string("none");
    return fmt::format("{}{} ({})", r == c.back() ? ">= " : "", rate(r->base_lr), rate(r->lr));
  }) << "\n";
  md << "#### The best rate of each grid\n\nFinal test accuracy at the best rate as written "
        "(effective rate in brackets).\n\n";
  md << table(runs, cols, [&](const std::vector<const LrRun*>& c) {
    const LrRun* r = best_of(c);
    return fmt::format("{} at {} ({})", outcome(*r), rate(r->base_lr), rate(r->lr));
  }) << "\n";

  // What the tables say, computed: the limit on the effective rate per N and warm-up, and how
  // it grows with the batch against what the rules assume.
  md << "#### What the runs say\n\n";
  for (const bool w : {false, true}) {
    if (std::none_of(runs.begin(), runs.end(),
                     [&](const LrRun& r) { return (r.warmup_steps > 0) == w; }))
      continue;
    std::vector<std::string> limits;
    std::map<int64_t, double> limit;
    for (const int64_t n : ns) {
      for (const auto& r : runs)
        if (r.workers == n && (r.warmup_steps > 0) == w && trains(r, trains_at))
          limit[n] = std::max(limit[n], r.lr);
      limits.push_back(limit.count(n) ? fmt::format("N = {}: {}", n, rate(limit[n]))
                                      : fmt::format("N = {}: none", n));
    }
    md << fmt::format("- The largest effective rate that trained, {} warm-up: {}.",
                      w ? "with" : "without", fmt::join(limits, "; "));
    if (limit.count(ns.front()) && limit.count(ns.back()) && ns.back() > ns.front()) {
      const double grew = limit[ns.back()] / limit[ns.front()];
      const double batch = double(ns.back()) / double(ns.front());
      // within a factor sqrt 2 (one step of a doubling grid, either side) of each rule's growth
      const auto near = [](double a, double b) {
        return a >= b / std::sqrt(2.0) && a <= b * std::sqrt(2.0);
      };
      const std::string verdict =
          near(grew, batch) ? "as the batch grows: the linear rule's assumption"
          : near(grew, std::sqrt(batch))
              ? "as the square root of the batch: the sqrt rule's assumption"
          : grew < std::sqrt(batch) / std::sqrt(2.0)
              ? "less than the square root of the batch: neither rule's assumption holds here"
          : grew > batch * std::sqrt(2.0) ? "faster than the batch"
                                          : "between the square root of the batch and the batch";
      md << fmt::format(" From N = {} to N = {} (a {:g}x larger batch) the limit grew {:.2f}x, {}.",
                        ns.front(), ns.back(), batch, grew, verdict);
    }
    md << "\n";
  }
  const int64_t n_max = ns.back();
  for (const auto& c : cols) {
    // from the fewest workers' run with the same warm-up (the rules agree at N = 1)
    const auto start = cell(runs, ns.front(), Column{"none", c.warmup});
    const LrRun* one = at_rate(start.empty() ? base_cell : start, reference.base_lr);
    const LrRun* many = at_rate(cell(runs, n_max, c), reference.base_lr);
    if (!one || !many || n_max == ns.front()) continue;
    if (many->diverged_at) {
      md << fmt::format(
          "- {}: at N = {} the carried-over rate (effective {}) diverges at step {}.\n", c.name(),
          n_max, rate(many->lr), many->diverged_at);
      continue;
    }
    const double change = many->accuracy - one->accuracy;
    md << fmt::format(
        "- {}: from N = {} to N = {} the carried-over rate (effective {} at N = {}) {} "
        "({:.2f}% -> {:.2f}%).\n",
        c.name(), ns.front(), n_max, rate(many->lr), n_max,
        change >= -1 ? "keeps the accuracy within 1 point"
                     : fmt::format("loses {:.2f} points", -change),
        one->accuracy, many->accuracy);
  }
  md << "\n";
  md << draw(dir, "lr-scaling-rate.svg", rate_plot(runs));
  md << draw(dir, "lr-scaling-carried.svg", carried_plot(runs, cols, reference.base_lr));
  out.markdown = md.str();

  out.json = {{"reference_lr", reference.base_lr},
              {"trains_at", trains_at},
              {"same_rate_groups_checked", checked},
              {"failed", out.failed}};
  for (const auto& r : runs)
    out.json["runs"].push_back({{"label", r.label},
                                {"workers", r.workers},
                                {"global_batch", r.global_batch},
                                {"steps", r.steps},
                                {"rule", r.rule},
                                {"warmup_steps", r.warmup_steps},
                                {"lr", r.base_lr},
                                {"effective_lr", r.lr},
                                {"accuracy", r.accuracy},
                                {"diverged_at_step", r.diverged_at},
                                {"model_hash", r.model_hash}});
  return out;
}

}  // namespace fedpar
