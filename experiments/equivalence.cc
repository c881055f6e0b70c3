// The equivalence experiment; see equivalence.h.
#include "experiments/equivalence.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <span>

#include "core/check.h"
#include "core/dataset.h"
#include "core/float64_reference.h"
#include "core/init_from.h"
#include "core/median.h"
#include "core/model.h"
#include "core/results_dir.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "core/safetensors.h"
#include "core/stop_signal.h"
#include "core/trainer.h"
#include "experiments/provenance.h"
#include "server/diagnostics.h"

namespace fedpar {
namespace {

constexpr const char* kSection = R"(
[equivalence]            # fedpar run on a config with this table runs variants (a)-(e) per model
models = ["logreg", "2nn"]
train_limits = [0, 6000] # training samples per model, in the same order (0 = all)
lr = 0.1                 # every variant's learning rate: centralized GD, server SGD, local SGD
local_steps = 5          # K of variant (d)
rounds = 0               # > 0: rounds of every variant (else the config's rounds)
uneven_scheme = "iid-quantity"  # variant (e): unequal shards, averaged with uniform weights
floor_orders = 4         # the floor: (a) again with its gradient summed in 2, 3, ... chunks
)";

struct Variant {
  std::string id, what;
  std::vector<std::string> sets;  // over the base config
};

std::vector<Variant> variants(const Config& c) {
  const std::string lr = fmt::format("{}", c.get_float("equivalence.lr"));
  const std::vector<std::string> one_step = {
      "regime=model",       "local.steps=1",        "local.epochs=0",    "local.batch=full",
      "optimizer.lr=" + lr, "optimizer.momentum=0", "local.server_lr=1", "weighting=samples"};
  auto with = [](std::vector<std::string> v, std::vector<std::string> more) {
    v.insert(v.end(), more.begin(), more.end());
    return v;
  };
  const int k = c.get_int32("equivalence.local_steps");
  return {
      {"b",
       "gradient averaging, full batch",
       {"regime=gradient", "sgd.batch=full", "optimizer.lr=" + lr, "optimizer.momentum=0",
        "weighting=samples"}},
      {"c", "model averaging, K=1, full batch", one_step},
      {"d", fmt::format("model averaging, K={}, full batch", k),
       with(one_step, {fmt::format("local.steps={}", k)})},
      {"e", "model averaging, K=1, unequal shards, uniform weights",
       with(one_step, {"partition.scheme=" + c.get_string("equivalence.uneven_scheme"),
                       "weighting=uniform"})},
  };
}

// The keys the experiment sets itself (run_equivalence per model, variants() per variant), and
// what to set instead.
const std::map<std::string, std::string>& overridden_keys() {
  static const std::map<std::string, std::string> keys = {
      {"model.name", "set equivalence.models"},
      {"data.train_limit", "set equivalence.train_limits, one per model"},
      {"optimizer.lr", "set equivalence.lr"},
      {"local.steps", "set equivalence.local_steps, (d)'s K"},
      {"fraction", "every client takes part in every round"},
      {"client_sampling", "every client takes part in every round, once"},
      {"eval_every", "the runs are evaluated at their end"},
      {"regime", "each variant sets its own"},
      {"sgd.batch", "every variant takes the full batch"},
      {"local.batch", "every variant takes the full batch"},
      {"local.epochs", "the model-averaging variants take local steps"},
      {"optimizer.momentum", "plain gradient descent: no momentum"},
      {"local.server_lr", "the server applies the average as it is"},
      {"weighting", "each variant sets its own"}};
  return keys;
}

// Full-batch gradient descent for `rounds` steps from the run's init; `accumulate` > 1 sums the
// gradient over that many micro-batches: the same update, another summation order.
std::vector<float> centralized(Model& m, const Dataset& train_set, const RunSpec& s, float lr,
                               int accumulate) {
  TrainOptions o{
      .epochs = s.rounds, .batch = 0, .accumulate = accumulate, .seed = s.seed, .shuffle = false};
  o.lr.base_lr = lr;
  TrainCallbacks stoppable;
  stoppable.on_step = [](const StepInfo&) { throw_if_stopped(); };
  train(m, train_set, {}, o, stoppable);
  return m.params_host();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string sci(double v) { return fmt::format("{:.2e}", v); }

// ||p - exact|| / ||exact||, in double.
double distance_to(const std::vector<double>& exact, std::span<const float> p) {
  FEDPAR_CHECK(exact.size() == p.size()) << "parameters of " << p.size() << " and " << exact.size();
  double num = 0, den = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double diff = double(p[i]) - exact[i];
    num += diff * diff;
    den += exact[i] * exact[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

bool is_equivalence_config(const std::filesystem::path& path) {
  try {
    const toml::table t = toml::parse_file(path.string());
    return t.contains("equivalence");
  } catch (const toml::parse_error&) {
    return false;  // the config reader reports syntax errors with line and column
  }
}

std::string equivalence_section() { return kSection; }

Config make_equivalence_config() {
  Config c = make_run_config(kSection);
  c.describe_keys_with("fedpar keys equivalence");
  return c;
}

const EquivalenceRow& EquivalenceCase::row(const std::string& id) const {
  for (const auto& r : rows)
    if (r.id == id) return r;
  throw Error(fmt::format("equivalence: {} has no row ({})", model, id));
}

double EquivalenceCase::x_float32(const std::string& id) const {
  const double e = row(id).exact.value_or(0);
  if (float32_exact > 0) return e / float32_exact;
  return e == 0 ? 0.0 : std::numeric_limits<double>::infinity();
}

double EquivalenceCase::orders_further(const std::string& id) const {
  return std::log10(row(id).relative / std::max(bc_worst, 1e-300));
}

std::vector<std::string> EquivalenceCase::failures() const {
  std::vector<std::string> out;
  for (const char* id : {"b", "c"}) {
    if (has_exact) {
      const double x = x_float32(id);
      if (x <= kFloorBound) continue;
      out.push_back(fmt::format(
          "({}) is {:.1f}x as far from exact (float64) arithmetic as centralized float32, above "
          "the {:g}x bound",
          id, x, kFloorBound));
      continue;
    }
    const double rel = row(id).relative;
    if (rel <= kFloorBound * floor_max) continue;
    out.push_back(floor_max > 0
                      ? fmt::format("({}) is {:.1f}x the largest reordering, above the {:g}x bound",
                                    id, rel / floor_max, kFloorBound)
                      : fmt::format("({}) is {:.2e} relative from (a) while reordering left no "
                                    "difference, above the {:g}x bound",
                                    id, rel, kFloorBound));
  }
  for (const char* id : {"d", "e"}) {
    const double o = orders_further(id);
    if (o >= kOrdersBound) continue;
    out.push_back(
        o > 0
            ? fmt::format("({}) is only {:.1f} orders of magnitude further from (a) than (b), (c), "
                          "below the {:g} claimed",
                          id, o, kOrdersBound)
            : fmt::format(
                  "({}) is no further from (a) than (b), (c) ({:.2e} against {:.2e} relative), "
                  "not the {:g} orders of magnitude claimed",
                  id, row(id).relative, bc_worst, kOrdersBound));
  }
  return out;
}

std::vector<std::string> EquivalenceResult::failures() const {
  std::vector<std::string> out;
  for (const auto& c : cases)
    for (const auto& f : c.failures()) out.push_back(c.model + ": " + f);
  return out;
}

namespace {

std::string render_table(const EquivalenceCase& c) {
  auto opt = [](std::optional<double> v) { return v ? sci(*v) : std::string("-"); };
  std::string t =
      "| variant | what | max abs diff to (a) | relative diff to (a) | x floor | relative diff "
      "to exact (float64) | x float32's | test accuracy |\n"
      "|---|---|---|---|---|---|---|---|\n";
  t += fmt::format(
      "| (a) | centralized full-batch GD | 0 | 0 | | {} | {} | {:.2f}% |\n",
      c.has_exact ? sci(c.a_exact) : "-",
      c.has_exact && c.float32_exact > 0 ? fmt::format("{:.3g}", c.a_exact / c.float32_exact) : "-",
      100 * c.a_test_accuracy);
  for (const auto& r : c.rows)
    t += fmt::format(
        "| ({}) | {} | {} | {} | {} | {} | {} | {} |\n", r.id, r.what, sci(r.max_abs),
        sci(r.relative), c.floor > 0 ? fmt::format("{:.3g}", r.relative / c.floor) : "-",
        opt(r.exact),
        r.exact && c.float32_exact > 0 ? fmt::format("{:.3g}", *r.exact / c.float32_exact) : "-",
        r.test_accuracy ? fmt::format("{:.2f}%", 100 * *r.test_accuracy) : "");
  return t;
}

// The title, table and verdicts of one model.
std::string render_case(const EquivalenceCase& c) {
  std::string s = fmt::format("### {}\n\n{}\n", c.title, c.table);
  s += fmt::format(
      "- the floor, (a) with its gradient summed in 2 .. {} chunks ({} orders): relative {:.2e} "
      "to (a) at least, {:.2e} median, {:.2e} at most\n",
      c.floor_orders + 1, c.floor_orders, c.floor_min, c.floor, c.floor_max);
  if (c.has_exact)
    s += fmt::format(
        "- (b), (c) as far from exact (float64) arithmetic as centralized float32 (at most "
        "{:g}x the {:.2e} of (a) and its reorderings, median): **{}** (worst {:.2f}x)\n",
        kFloorBound, c.float32_exact, c.bc_claim_holds ? "yes" : "NO", c.bc_exact_ratio);
  else
    s += fmt::format(
        "- (b), (c) within {:g}x the largest reordering (no float64 reference for {}): **{}** "
        "(worst {:.1f}x)\n",
        kFloorBound, c.model, c.bc_claim_holds ? "yes" : "NO",
        c.floor_max > 0 ? c.bc_worst / c.floor_max : 0.0);
  s += fmt::format("- (b), (c) below 1e-5 relative: **{}**{}\n", c.bc_below_1e5 ? "yes" : "no",
                   c.floor >= 1e-5
                       ? fmt::format(" (rounding alone, the floor, is {:.1e} here: in this "
                                     "model rounding differences grow over the rounds)",
                                     c.floor)
                       : "");
  s += fmt::format(
      "- (d), (e) further from (a) than (b), (c) by **{:.1f}** orders of magnitude{}\n\n",
      c.de_orders_further,
      c.de_orders_further >= kOrdersBound ? "" : " (FEWER than 2: the claim did not hold)");
  return s;
}

std::string render_cases(const EquivalenceResult& r) {
  std::string s;
  for (const auto& c : r.cases) s += render_case(c);
  return s;
}

// "**Claims that failed** ..." with one item per failure; empty when every claim held.
std::string failed_claims_note(const EquivalenceResult& r) {
  const auto f = r.failures();
  if (f.empty()) return "";
  std::string s =
      fmt::format("**Claims that failed** (`fedpar run` exits {}):\n\n", kClaimFailedExit);
  for (const auto& line : f) s += "- " + line + "\n";
  return s + "\n";
}

// "a", "a and b", "a, b and c".
std::string join_and(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
  return s;
}

// equivalence.json: the keys it has always had.
nlohmann::json to_json(const EquivalenceResult& r) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : r.cases) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : c.rows) {
      nlohmann::json j = {
          {"id", row.id}, {"what", row.what}, {"max_abs", row.max_abs}, {"relative", row.relative}};
      if (row.exact) j["exact"] = *row.exact;
      if (row.test_accuracy) {
        j["test_accuracy"] = *row.test_accuracy;
        j["seconds"] = row.seconds;
        j["results"] = row.results;
      }
      rows.push_back(std::move(j));
    }
    cases.push_back({{"model", c.model},
                     {"train_samples", c.train_samples},
                     {"rounds", c.rounds},
                     {"lr", c.lr},
                     {"processes", c.processes},
                     {"clients", c.clients},
                     {"rows", rows},
                     {"floor", c.floor},
                     {"floor_min", c.floor_min},
                     {"floor_max", c.floor_max},
                     {"floor_orders", c.floor_orders},
                     {"has_exact", c.has_exact},
                     {"a_exact", c.a_exact},
                     {"float32_exact", c.float32_exact},
                     {"bc_exact_ratio", c.bc_exact_ratio},
                     {"bc_claim_holds", c.bc_claim_holds},
                     {"bc_below_1e-5", c.bc_below_1e5},
                     {"de_orders_further", c.de_orders_further}});
  }
  return {{"cases", cases}, {"seconds", r.seconds}};
}

// The cases where a claim held, for one sentence about all of them: their measured values
// ("1.2x (logreg) and 1.0x (2nn)": the model named only when there are several) and the sentence's
// first words: `opening` when the claim held for every case, else "For logreg, " + its lower case.
struct Holding {
  std::string values, opening;
};
std::optional<Holding> holding(const EquivalenceResult& r, bool (*held)(const EquivalenceCase&),
                               std::string (*value)(const EquivalenceCase&), std::string opening) {
  std::vector<std::string> values, models;
  for (const auto& c : r.cases)
    if (held(c)) {
      values.push_back(r.cases.size() > 1 ? fmt::format("{} ({})", value(c), c.model) : value(c));
      models.push_back(c.model);
    }
  if (values.empty()) return std::nullopt;
  if (models.size() < r.cases.size()) {
    opening[0] = char(std::tolower(opening[0]));
    opening = fmt::format("For {}, {}", join_and(models), opening);
  }
  return Holding{join_and(values), opening};
}

// How far the worse of (b), (c) is, in the units of its claim.
std::string bc_measure(const EquivalenceCase& c) {
  return c.has_exact ? fmt::format("{:.2f}x", c.bc_exact_ratio)
                     : fmt::format("{:.1f}x", c.floor_max > 0 ? c.bc_worst / c.floor_max : 0.0);
}

// Where (a) itself ends far from exact arithmetic and its reorderings, (b) and (c) do not, every
// distance measured from (a) is (a)'s own rounding: said, so (b), (c) are not taken for culprits.
std::string a_strays(const EquivalenceCase& c) {
  if (!c.has_exact) return "";
  const auto& floor = c.row("a'").exact;
  const auto &b = c.row("b").exact, &cc = c.row("c").exact;
  if (!floor || !b || !cc || !(c.a_exact > 10 * std::max({*floor, *b, *cc}))) return "";
  return fmt::format(
      "; it is (a) that strays: it ended {:.1e} from exact (float64) arithmetic, where its "
      "reorderings ended {:.1e} (median), (b) {:.1e} and (c) {:.1e}, so the distances from (a) "
      "are (a)'s own rounding, and against float64, as the verdict measures, (b) and (c) are "
      "rounding",
      c.a_exact, *floor, *b, *cc);
}

std::string what_of(const std::string& id) {
  return id == "d" ? "several local steps (d)" : "uniform weights over unequal shards (e)";
}

}  // namespace

std::string equivalence_meaning(const EquivalenceResult& r) {
  const bool many = r.cases.size() > 1;
  auto for_model = [&](const EquivalenceCase& c) {
    return many ? fmt::format("For {}, ", c.model) : std::string();
  };
  std::vector<std::string> sentences;

  // (b), (c) against exact arithmetic (or the reorderings): one sentence for the models where
  // the claim held, one per model where it broke.
  const bool any_exact = std::any_of(r.cases.begin(), r.cases.end(),
                                     [](const EquivalenceCase& c) { return c.has_exact; });
  const auto near = holding(
      r, [](const EquivalenceCase& c) { return c.bc_claim_holds; }, bc_measure, "With");
  if (near)
    sentences.push_back(fmt::format(
        "{} full-batch gradients, n_k/n weights and one local step, gradient averaging (b) "
        "and model averaging (c) take centralized gradient descent's step (a) up to float "
        "rounding: {} at worst {} {}, within the 10x bound",
        near->opening,
        any_exact ? "they end as far from exact (float64) arithmetic as centralized float32 "
                    "itself,"
                  : "they end",
        near->values,
        any_exact ? "the distance of (a) and its reorderings from it (median)"
                  : "the largest distance that merely reordering the gradient's sum produces"));
  for (const auto& c : r.cases) {
    if (c.bc_claim_holds) continue;
    sentences.push_back(fmt::format(
        "{}his run does not show gradient averaging (b) and model averaging (c) matching "
        "centralized gradient descent (a) up to rounding: the worse of them ended {} {}, above "
        "the 10x bound",
        many ? fmt::format("For {}, t", c.model) : "T", bc_measure(c),
        c.has_exact ? "as far from exact (float64) arithmetic as centralized float32"
                    : "the largest distance that merely reordering the gradient's sum produces"));
  }
  for (const auto& c : r.cases)
    if (!c.bc_below_1e5)
      sentences.push_back(fmt::format(
          "{}(b), (c) are not below 1e-5 relative ({:.1e}){}{}", for_model(c), c.bc_worst,
          c.floor >= 1e-5
              ? fmt::format(", and neither is rounding alone, the floor ({:.1e})", c.floor)
              : "",
          a_strays(c)));

  // (d), (e) against (b), (c).
  const auto far = holding(
      r, [](const EquivalenceCase& c) { return c.de_orders_further >= kOrdersBound; },
      [](const EquivalenceCase& c) { return fmt::format("{:.1f}", c.de_orders_further); },
      "Several");
  if (far)
    sentences.push_back(fmt::format(
        "{} local steps (d) follow another path (each client descends its own shard's "
        "loss: client drift), and uniform weights over unequal shards (e) minimize another "
        "objective; both move away by orders of magnitude, not by rounding: at least {} orders "
        "further from (a) than (b), (c)",
        far->opening, far->values));
  for (const auto& c : r.cases) {
    if (c.de_orders_further >= kOrdersBound) continue;
    for (const char* id : {"d", "e"}) {
      const double o = c.orders_further(id);
      std::string what = what_of(id);
      if (!many) what[0] = char(std::toupper(what[0]));
      if (o >= kOrdersBound)
        sentences.push_back(
            fmt::format("{}{} moved {:.1f} orders of magnitude further from (a) than (b), (c)",
                        for_model(c), what, o));
      else
        sentences.push_back(fmt::format(
            "{}{} ended {} (relative {:.2e} against {:.2e}), fewer than the 2 orders of "
            "magnitude claimed: in this run that claim did not hold",
            for_model(c), what,
            o > 0 ? fmt::format("only {:.1f} orders of magnitude further from (a) than (b), (c)", o)
                  : "no further from (a) than (b), (c)",
            c.row(id).relative, c.bc_worst));
    }
  }
  std::string s;
  for (const auto& x : sentences) s += (s.empty() ? "" : " ") + x + ".";
  return s;
}

std::string render_equivalence(const EquivalenceResult& r, int level) {
  return failed_claims_note(r) + render_cases(r) + std::string(size_t(level), '#') +
         " What it means\n\n" + equivalence_meaning(r) + "\n";
}

void refuse_overridden_sets(const Config& cfg, const std::vector<std::string>& sets) {
  for (const std::string& set : sets) {
    const std::string key = set.substr(0, set.find('='));
    if (key == "rounds" && cfg.get_int("equivalence.rounds") > 0)
      throw Error(fmt::format(
          "--set {}: equivalence.rounds = {} sets the rounds of this experiment's runs, and "
          "would override it (set equivalence.rounds instead, or 0 to follow rounds)",
          set, cfg.get_int("equivalence.rounds")));
    if (const auto it = overridden_keys().find(key); it != overridden_keys().end())
      throw Error(fmt::format(
          "--set {}: the equivalence experiment sets {} itself, and would ignore it ({})", set, key,
          it->second));
  }
}

int equivalence_exit_code(const EquivalenceResult& r) {
  if (r.failed_run != 0) return r.failed_run;
  const auto f = r.failures();
  for (const auto& line : f) fmt::print(stderr, "equivalence: {}\n", line);
  return f.empty() ? 0 : kClaimFailedExit;
}

EquivalenceResult run_equivalence(const Config& cfg, const LocalRunOptions& opts,
                                  const std::string& command) {
  const auto models = cfg.get_string_list("equivalence.models");
  const auto limits = cfg.get_int_list("equivalence.train_limits");
  if (models.empty() || models.size() != limits.size())
    throw Error(
        fmt::format("equivalence.models ({}) and equivalence.train_limits ({}) must be "
                    "non-empty lists of the same length",
                    models.size(), limits.size()));
  const float lr = float(cfg.get_float("equivalence.lr"));
  if (!(lr > 0)) throw Error("equivalence.lr must be > 0");
  if (cfg.get_int("equivalence.local_steps") < 2)
    throw Error("equivalence.local_steps must be >= 2");
  if (cfg.get_int("equivalence.floor_orders") < 1)
    throw Error(
        "equivalence.floor_orders must be >= 1 (the reorderings of (a) that make the floor)");
  const auto vars = variants(cfg);
  const RunSpec top = resolve_run_spec(cfg);
  install_stop_handlers();  // a stopped experiment unwinds and keeps nothing
  const std::string name = cfg.get_string("name").empty() ? "equivalence" : cfg.get_string("name");
  const auto t_start = std::chrono::steady_clock::now();

  ResultsDir out(top.results_dir, name);
  const auto runs_dir = std::filesystem::absolute(out.path() / "runs");
  std::filesystem::create_directories(runs_dir);
  out.write_text("config.resolved.toml", cfg.to_toml());
  auto be = make_backend("cpu", top.threads);

  EquivalenceResult result{.command = command};
  for (size_t i = 0; i < models.size(); ++i) {
    Config base = config_without(cfg, {"equivalence"});
    base.set("model.name", models[i]);
    base.set("data.train_limit", std::to_string(limits[i]));
    base.set("fraction", "1");
    base.set("client_sampling", "uniform");
    if (cfg.get_int("equivalence.rounds") > 0)
      base.set("rounds", std::to_string(cfg.get_int("equivalence.rounds")));
    base.set("eval_every", std::to_string(top.rounds));
    base.set("results_dir", runs_dir.string());
    const RunSpec s = resolve_run_spec(base);
    const TrainTest data = load_dataset(s.data);
    EquivalenceCase c{
        .model = models[i],
        .title = fmt::format(
            "{} on {} {} training samples, {} rounds, lr {}, {} clients on {} processes", models[i],
            data.train.size(), data.train.name, s.rounds, lr, s.partition.clients, s.processes),
        .train_samples = data.train.size(),
        .rounds = s.rounds,
        .lr = lr,
        .processes = s.processes,
        .clients = s.partition.clients};
    const int orders = cfg.get_int32("equivalence.floor_orders");
    fmt::print(stderr,
               "{}\n  (a) centralized full-batch gradient descent, and in {} other orders ...",
               c.title, orders);
    auto t0 = std::chrono::steady_clock::now();
    Model m(*be, s.model, data.train.shape, data.train.num_classes);
    init_model(m, s.model, s.seed);
    const std::vector<float> init = m.params_host();
    const std::vector<float> a = centralized(m, data.train, s, lr, 1);
    const BatchStats a_test = evaluate(m, data.test);
    c.a_test_accuracy = double(a_test.correct) / double(std::max<int64_t>(1, a_test.samples));
    std::vector<std::vector<float>> reordered;  // the gradient summed in 2, 3, ... chunks
    for (int k = 2; k < 2 + orders; ++k) reordered.push_back(centralized(m, data.train, s, lr, k));
    fmt::print(stderr, " {:.1f} s\n", seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    auto exact = float64_gradient_descent(s.model, init, data.train, s.rounds, lr);
    // Rounded to float32 once at the end: the nearest any float32 run could end, so a distance
    // to it is the run's rounding error alone, not float32's representation of the end point.
    if (exact)
      for (double& v : *exact) v = double(float(v));
    if (exact)
      fmt::print(stderr, "  exact arithmetic: (a) in float64 ... {:.1f} s\n", seconds_since(t0));
    const auto to_exact = [&](std::span<const float> p) -> std::optional<double> {
      if (!exact) return std::nullopt;
      return distance_to(*exact, p);
    };
    std::vector<double> floors, floors_exact;
    double floor_max_abs = 0;
    for (const auto& p : reordered) {
      const Distance d = distance(p, a);
      floors.push_back(d.relative);
      floor_max_abs = std::max(floor_max_abs, d.max_abs);
      if (exact) floors_exact.push_back(*to_exact(p));
    }
    c.floor_orders = orders;
    c.floor = median(floors);
    c.floor_min = *std::min_element(floors.begin(), floors.end());
    c.floor_max = *std::max_element(floors.begin(), floors.end());
    c.has_exact = exact.has_value();
    if (exact) {
      c.a_exact = *to_exact(a);
      std::vector<double> all = floors_exact;
      all.push_back(c.a_exact);
      c.float32_exact = median(all);
    }
    c.rows.push_back({.id = "a'",
                      .what = fmt::format("centralized GD, gradient summed in 2 .. {} chunks "
                                          "(the floor; medians of {} orders)",
                                          orders + 1, orders),
                      .max_abs = floor_max_abs,
                      .relative = c.floor,
                      .exact = exact ? std::optional(median(floors_exact)) : std::nullopt});
    for (const auto& v : vars) {
      Config vc = base;
      vc.set_all(v.sets);
      const std::string run_name = fmt::format("{}-{}", models[i], v.id);
      vc.set("name", run_name);
      fmt::print(stderr, "  ({}) {} ...", v.id, v.what);
      t0 = std::chrono::steady_clock::now();
      LocalRunOptions variant = opts;
      variant.keep_incomplete = false;  // the experiment's folder goes when a variant fails
      const int rc = run_locally(vc, variant);
      if (const int sig = run_interrupted_by()) {
        fmt::print(stderr, "\n");
        throw Interrupted(sig);  // nothing is kept
      }
      if (rc != 0) {
        fmt::print(stderr, "\nfedpar run: variant ({}) of {} failed (exit {}); nothing is kept\n",
                   v.id, models[i], rc);
        result.failed_run = rc;
        return result;
      }
      const double secs = seconds_since(t0);
      fmt::print(stderr, " {:.1f} s\n", secs);
      const auto dir = runs_dir / run_name;
      const Distance d = distance(load_params(dir / "model.safetensors", m.layout()), a);
      const RunSummary summary = read_run_summary(dir);  // every run evaluates after its last round
      if (!summary.final || !summary.final->test_accuracy)
        throw Error(fmt::format("{}: summary.json has no final evaluation", dir.string()));
      const std::vector<float> final_params = load_params(dir / "model.safetensors", m.layout());
      c.rows.push_back({.id = v.id,
                        .what = v.what,
                        .max_abs = d.max_abs,
                        .relative = d.relative,
                        .exact = to_exact(final_params),
                        .test_accuracy = *summary.final->test_accuracy,
                        .seconds = secs,
                        .results = "runs/" + run_name});
    }
    c.bc_worst = std::max(c.row("b").relative, c.row("c").relative);
    if (c.has_exact) {
      c.bc_exact_ratio = std::max(c.x_float32("b"), c.x_float32("c"));
      c.bc_claim_holds = c.bc_exact_ratio <= kFloorBound;
    } else {
      c.bc_claim_holds = c.bc_worst <= kFloorBound * c.floor_max;
    }
    c.bc_below_1e5 = c.bc_worst < 1e-5;
    c.de_orders_further = std::min(c.orders_further("d"), c.orders_further("e"));
    c.table = render_table(c);
    result.cases.push_back(std::move(c));
  }

  result.seconds = seconds_since(t_start);
  const std::string report = fmt::format(
      "# Gradient averaging vs model averaging: the equivalence under full batch\n\n{}"
      "Command: `{}` (resolved config: config.resolved.toml; each distributed run's own "
      "results folder is under runs/). Total time {:.0f} s. {}\n\n"
      "Every row is the distance of the final parameters to (a) after the same rounds from the "
      "same init; the floor (a') is (a) again with the gradient summed in other orders (the "
      "median of their distances; the range below each table). Exact arithmetic is (a) in "
      "float64 (the dense models), rounded to float32 once at the end: a float32 run's "
      "distance to it is its own rounding error, "
      "and \"x float32's\" divides it by the median of (a)'s and its reorderings'.\n\n"
      "{}## What it means\n\n{}\n",
      failed_claims_note(result), command, result.seconds, provenance_line(), render_cases(result),
      equivalence_meaning(result));
  out.write_text("report.md", report);
  nlohmann::json j = to_json(result);
  j["provenance"] = provenance_json();
  out.write_json("equivalence.json", j);
  result.path = out.commit();
  fmt::print("\n{}{}\n", render_cases(result), equivalence_meaning(result));
  if (opts.say_results_dir)
    fmt::print("\nresults: {} ({:.0f} s)\n", result.path.string(), result.seconds);
  return result;
}

}  // namespace fedpar
