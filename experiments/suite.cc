// run_suite; see suite.h.
#include "experiments/suite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "core/check.h"
#include "core/dataset.h"
#include "core/results_dir.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "core/spelling.h"
#include "core/stop_signal.h"
#include "core/unread_settings.h"
#include "experiments/equivalence.h"
#include "experiments/local_run.h"
#include "experiments/lr_scaling_report.h"
#include "experiments/parallelism_report.h"
#include "experiments/provenance.h"
#include "experiments/run_metrics.h"
#include "experiments/suite_report.h"
#include "experiments/topology_scaling_report.h"
#include "partitioners/manifest.h"
#include "partitioners/stats.h"

namespace fedpar {
namespace {

constexpr const char* kSection = R"(
[suite]
title = ""
what = ""                # one paragraph: what the suite compares
runs = [""]              # "label | key=value key=value ..." (the "" default types the list)
smoke = [""]             # overrides for --smoke ("key=value"; suite.* keys too), after each run's own
target_accuracy = 0.0    # > 0 (percent): the table gives the rounds each run took to reach it
seeds = []               # run every run once per seed (labels get -s<seed>); plots show mean and band
pairs = [""]             # "run reference": weight divergence of run from reference, per evaluated round
eval_every = 1           # rounds between test-set evaluations in every run
delay_model = false      # fit the delay model to all runs' rounds (experiments/delay_model.h)
parallelism = false      # compare the runs' ways of splitting the model (experiments/parallelism_report.h)
sweep = ""               # "key=v1,v2,...": every run once per value, labelled <label>@<value>
only = [""]              # run only these labels (before the sweep's @value; empty: every run)
lr_scaling = false       # the learning-rate scaling section (experiments/lr_scaling_report.h)
trains_at = 50.0         # lr_scaling: a run trains when its final test accuracy (percent) is at least this
topology_scaling = false # step time by workers on the simulated network (experiments/topology_scaling_report.h)
curve_plots = true       # each run's curves (accuracy per round, sample, second, MB; update cosine)
)";

const char* const kSuiteDir = "experiments/suites";

// Where suites are looked for: ./experiments/suites, then this source tree's.
std::vector<std::filesystem::path> suite_roots() { return {".", FEDPAR_SOURCE_DIR}; }

std::filesystem::path find_suite(const std::string& name) {
  if (name.ends_with(".toml")) return name;
  for (const auto& root : suite_roots()) {
    const auto p = root / kSuiteDir / (name + ".toml");
    if (std::filesystem::exists(p)) return p;
  }
  throw Error(fmt::format("no suite '{}'{} (suites: {})", name, did_you_mean(name, suite_names()),
                          fmt::join(suite_names(), ", ")));
}

// One line of suite.runs: "label | key=value ...".
struct SuiteEntry {
  std::string label;
  std::vector<std::string> sets;
  std::string swept;  // suite.sweep's "key=value" (also in sets): set again after --smoke's
};

SuiteEntry parse_run(const std::string& text) {
  const size_t bar = text.find('|');
  if (bar == std::string::npos)
    throw Error(fmt::format("suite.runs: '{}' is not \"label | key=value ...\"", text));
  SuiteEntry r;
  std::istringstream label(text.substr(0, bar)), sets(text.substr(bar + 1));
  label >> r.label;
  for (std::string kv; sets >> kv;) r.sets.push_back(kv);
  if (r.label.empty()) throw Error(fmt::format("suite.runs: '{}' has no label", text));
  if (r.label.find_first_of("/\\") != std::string::npos || r.label.starts_with('.'))
    throw Error(fmt::format(
        "suite.runs: label '{}' names a folder: use no '/', '\\' or leading '.'", r.label));
  return r;
}

std::vector<std::string> labels_of(const std::vector<SuiteEntry>& runs) {
  std::vector<std::string> out;
  for (const auto& r : runs) out.push_back(r.label);
  return out;
}

// suite.only: the runs with these labels, in the suite's order; each must name a run.
std::vector<SuiteEntry> keep_only(std::vector<SuiteEntry> runs, std::vector<std::string> only) {
  std::erase(only, "");
  if (only.empty()) return runs;
  for (const auto& label : only)
    if (std::none_of(runs.begin(), runs.end(),
                     [&](const SuiteEntry& r) { return r.label == label; }))
      throw Error(fmt::format("suite.only: no run '{}' in this suite{} (its runs: {})", label,
                              did_you_mean(label, labels_of(runs)),
                              fmt::join(labels_of(runs), ", ")));
  std::erase_if(runs, [&](const SuiteEntry& r) {
    return std::find(only.begin(), only.end(), r.label) == only.end();
  });
  return runs;
}

// "KEY " of suite.sweep's "KEY=v1,...", for a heading; "" where labels name their grids by hand.
std::string sweep_key(const std::string& sweep) {
  const size_t eq = sweep.find('=');
  return eq == std::string::npos || eq == 0 ? std::string() : sweep.substr(0, eq) + " ";
}

// suite.sweep = "key=v1,v2,...": each run once per value, the value set after the run's own
// overrides and labelled <label>@<value> (the grid convention of suite_report.h).
std::vector<SuiteEntry> sweep_runs(std::vector<SuiteEntry> runs, const std::string& sweep) {
  if (sweep.empty()) return runs;
  const size_t eq = sweep.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == sweep.size())
    throw Error(fmt::format("suite.sweep: '{}' is not \"key=v1,v2,...\"", sweep));
  const std::string key = sweep.substr(0, eq);
  std::vector<SuiteEntry> swept;
  for (const auto& r : runs) {
    if (r.label.find('@') != std::string::npos)
      throw Error(fmt::format("suite.sweep: run '{}' is already one value of a grid", r.label));
    std::istringstream values(sweep.substr(eq + 1));
    for (std::string v; std::getline(values, v, ',');) {
      v.erase(0, v.find_first_not_of(' '));
      v.erase(v.find_last_not_of(' ') + 1);
      if (v.empty()) continue;
      SuiteEntry one = r;
      one.label += "@" + v;
      one.swept = key + "=" + v;
      one.sets.push_back(one.swept);
      swept.push_back(std::move(one));
    }
  }
  return swept;
}

// The suite's runs: each listed run once per seed (seeds empty: once, with the config's seed).
struct Instance {
  SuiteEntry spec;
  std::string suffix;  // "-s<seed>" when the suite has seeds
  Config config;
  std::string reference;  // the run it is paired with (label, with the same suffix), if any
  std::string label() const { return spec.label + suffix; }
};

// Everything a suite will do, validated before the first run starts.
struct SuitePlan {
  std::filesystem::path file;
  std::string name;           // <suite>[-smoke]
  Config cfg;                 // the suite file, with --smoke's suite.* overrides
  std::string resolved_toml;  // cfg with every --smoke and --set value: config.resolved.toml
  std::vector<Instance> instances;
  std::optional<Config> equivalence;  // the [equivalence] table's experiment, when there is one
  int64_t eval_every = 1;
  std::string command;
  std::vector<std::string> smoke_settings;  // --smoke's "key=value" that --set did not replace
  size_t listed_runs = 0;                   // suite.runs before suite.only kept some
  std::vector<std::string> only;            // suite.only's labels; empty: every run
};

// "run reference" pairs, by run label; both must be runs of the suite (`all`), and pairs with a
// run that suite.only left out of `runs` are left out too.
std::map<std::string, std::string> parse_pairs(const Config& cfg,
                                               const std::vector<SuiteEntry>& all,
                                               const std::vector<SuiteEntry>& runs) {
  auto in = [](const std::vector<SuiteEntry>& v, const std::string& l) {
    return std::any_of(v.begin(), v.end(), [&](const SuiteEntry& r) { return r.label == l; });
  };
  std::map<std::string, std::string> reference;
  for (const auto& p : cfg.get_string_list("suite.pairs")) {
    if (p.empty()) continue;
    std::istringstream is(p);
    std::string run, ref;
    is >> run >> ref;
    if (!in(all, run) || !in(all, ref)) {
      std::vector<std::string> labels;
      for (const auto& r : all) labels.push_back(r.label);
      throw Error(fmt::format(
          "suite.pairs: '{}' is not \"run reference\" of two runs of the suite; its runs are "
          "{} (a swept run is labelled LABEL@VALUE, e.g. fedavg@0.1)",
          p, fmt::join(labels, ", ")));
    }
    if (in(runs, run) && in(runs, ref)) reference[run] = ref;
  }
  return reference;
}

// `text` with each {key} (a run config key) replaced by its value in the runs, and each {a*b}
// by the product of two numeric keys (clients x fraction = clients sampled per round), so the
// numbers a report's text states are the runs' (a --smoke size included); a value that differs
// between runs reads "a, b or c". `where` names the text in errors.
std::string fill_run_keys(const std::string& text, const SuitePlan& plan, std::string_view where) {
  static const std::regex placeholder(R"(\{([a-z_.]+)(\*([a-z_.]+))?\})");
  auto value = [&](const Config& c, const std::string& key) {
    if (std::find(c.keys().begin(), c.keys().end(), key) == c.keys().end())
      throw Error(
          fmt::format("{}: {{{}}} is not a run config key (fedpar keys suite)", where, key));
    std::string v = whole_shard_batch(c, key) ? "full" : c.value_text(key);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return v;
  };
  std::string out;
  auto at = text.cbegin();
  for (std::sregex_iterator m(text.begin(), text.end(), placeholder), end; m != end; ++m) {
    out.append(at, (*m)[0].first);
    at = (*m)[0].second;
    std::vector<std::string> values;  // distinct, in run order
    for (const Instance& in : plan.instances) {
      std::string v = value(in.config, (*m)[1]);
      if ((*m)[3].matched) {
        const std::string w = value(in.config, (*m)[3]);
        try {
          v = fmt::format("{:g}", std::stod(v) * std::stod(w));
        } catch (const std::logic_error&) {  // stod: not a number ("full")
          throw Error(fmt::format("{}: {} needs two numeric keys", where, (*m)[0].str()));
        }
      }
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
    for (size_t i = 0; i < values.size(); ++i)
      out += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + values[i];
  }
  out.append(at, text.cend());
  return out;
}

// A run's own "key=value" overrides as its table row shows them: one that --smoke or --set
// replaced (they come after it) says what the run ran with: "rounds=30 (ran with 3)".
std::vector<std::string> shown_overrides(const Instance& in) {
  std::vector<std::string> out;
  for (const std::string& kv : in.spec.sets) {
    const std::string key = kv.substr(0, kv.find('='));
    Config own = in.config;
    own.set_all({kv});
    const std::string ran = in.config.value_text(key);
    out.push_back(own.value_text(key) == ran ? kv : fmt::format("{} (ran with {})", kv, ran));
  }
  return out;
}

SuitePlan plan_suite(const SuiteOptions& o) {
  const auto file = find_suite(o.name);
  const bool with_equivalence = is_equivalence_config(file);
  SuitePlan plan{.file = file,
                 .cfg = make_run_config(std::string(kSection) +
                                        (with_equivalence ? equivalence_section() : ""))};
  Config& cfg = plan.cfg;
  cfg.describe_keys_with("fedpar keys suite");
  cfg.merge_file(plan.file);
  plan.name = plan.file.stem().string() + (o.smoke ? "-smoke" : "");
  plan.command = fmt::format("fedpar suite {}{}",  // a suite file by the path it was given
                             o.name.ends_with(".toml") ? o.name : plan.file.stem().string(),
                             o.smoke ? " --smoke" : "");
  for (const auto& s : o.sets) plan.command += " --set " + s;
  if (!o.out.empty()) plan.command += " --out " + o.out.string();
  // --smoke overrides: "suite.*" change the suite (its runs too), "equivalence.*" its
  // equivalence table, the rest every run (and the equivalence table's runs).
  std::vector<std::string> smoke, smoke_equivalence;
  const auto smoke_list = cfg.get_string_list("suite.smoke");
  if (o.smoke && std::all_of(smoke_list.begin(), smoke_list.end(),
                             [](const std::string& s) { return s.empty(); }))
    fmt::print(stderr,
               "fedpar suite: warning: {} lists no smoke sizes ([suite] smoke), so --smoke runs "
               "it at its full size\n",
               plan.file.string());
  for (const auto& s : smoke_list) {
    if (s.empty() || !o.smoke) continue;
    if (s.starts_with("suite."))
      cfg.set_all({s});
    else if (s.starts_with("equivalence."))
      smoke_equivalence.push_back(s);
    else
      smoke.push_back(s);
  }
  // --set suite.KEY=VALUE changes the suite itself (after --smoke's), the rest every run.
  std::vector<std::string> run_sets;
  for (const auto& s : o.sets) {
    if (s.starts_with("results_dir="))
      throw Error(
          "a suite writes its runs and report to --out DIR (default results/<suite>): use --out, "
          "not --set results_dir");
    if (s.starts_with("suite."))
      cfg.set_all({s});
    else
      run_sets.push_back(s);
  }
  for (const auto& s : cfg.get_string_list("suite.smoke")) {  // what a smoke report lists
    const std::string key = s.substr(0, s.find('='));
    if (!s.empty() && o.smoke && std::none_of(o.sets.begin(), o.sets.end(), [&](const auto& set) {
          return set.substr(0, set.find('=')) == key;
        }))
      plan.smoke_settings.push_back(s);
  }
  {  // what the runs share, as they run it (each run's own overrides are in its own folder)
    Config shown = cfg;
    shown.set_all(smoke);
    shown.set_all(smoke_equivalence);
    shown.set_all(run_sets);
    plan.resolved_toml = shown.to_toml();
  }
  std::vector<SuiteEntry> runs;
  for (const auto& r : cfg.get_string_list("suite.runs"))
    if (!r.empty()) runs.push_back(parse_run(r));
  plan.listed_runs = runs.size();
  plan.only = cfg.get_string_list("suite.only");
  std::erase(plan.only, "");
  const std::vector<SuiteEntry> all = sweep_runs(runs, cfg.get_string("suite.sweep"));
  runs = keep_only(std::move(runs), plan.only);
  runs = sweep_runs(std::move(runs), cfg.get_string("suite.sweep"));
  for (size_t i = 0; i < runs.size(); ++i)  // a label names a run's folder and its report row
    for (size_t j = 0; j < i; ++j)
      if (runs[i].label == runs[j].label)
        throw Error(fmt::format(
            "{}: two runs are labelled '{}' (runs {} and {}{}): each run needs its own label, "
            "which names its folder and its row in the report",
            plan.file.string(), runs[i].label, j + 1, i + 1,
            cfg.get_string("suite.sweep").empty() ? "" : ", counted after suite.sweep"));
  if (runs.empty())
    throw Error(fmt::format(
        "{}: suite.runs is empty: a suite lists its runs in its [suite] table, runs = [\"label | "
        "key=value ...\", ...] (docs/suites.md); is this a `fedpar run` config? (`fedpar run "
        "FILE` runs one)",
        plan.file.string()));
  const auto reference = parse_pairs(cfg, all, runs);
  const auto seeds = cfg.get_int_list("suite.seeds");
  plan.eval_every = cfg.get_int("suite.eval_every");
  if (plan.eval_every < 1) throw Error("suite.eval_every must be >= 1");
  {  // the runs' eval_every is the suite's; one set for the runs (the file's base, --set) says it
    Config runs_base = config_without(cfg, {"suite", "equivalence"});
    runs_base.set_all(smoke);
    runs_base.set_all(run_sets);
    if (const int64_t e = runs_base.get_int("eval_every"); e != 1) {
      if (plan.eval_every != 1 && plan.eval_every != e)
        throw Error(fmt::format(
            "{}: eval_every = {} and suite.eval_every = {}: a suite evaluates every run every "
            "suite.eval_every rounds; set that one alone",
            plan.file.string(), e, plan.eval_every));
      plan.eval_every = e;
    }
  }
  // a percent, unlike stop_at_accuracy's fraction: 0.9 would ask for 0.9%
  if (const double t = cfg.get_float("suite.target_accuracy");
      t < 0 || t > 100 || (t > 0 && t <= 1))
    throw Error(fmt::format(
        "suite.target_accuracy must be a percent in (1, 100] or 0 (none), got {:g}: 90 for 90% "
        "(stop_at_accuracy is the run's fraction, 0.9)",
        t));

  const Config base = config_without(cfg, {"suite", "equivalence"});
  // "key = value: why" -> the runs that set it (their own settings, the sweep's, --set's) and do
  // not read it: a K sweep under local.epochs once measured one run five times without a word
  std::map<std::string, std::set<std::string>> unread_by_runs;
  for (const auto& r : runs) {
    const bool paired = reference.count(r.label) ||
                        std::any_of(reference.begin(), reference.end(),
                                    [&](const auto& kv) { return kv.second == r.label; });
    for (size_t k = 0; k < std::max<size_t>(1, seeds.size()); ++k) {
      Instance in{r, seeds.empty() ? "" : fmt::format("-s{}", seeds[k]), base, ""};
      Config& c = in.config;
      try {  // a bad key or value names its suite file and run
        c.set_all(r.sets);
        c.set_all(smoke);  // after the run's own: a smoke size holds for every run
        if (!r.swept.empty()) c.set_all({r.swept});  // the value the label names wins
        c.set_all(run_sets);
        if (!seeds.empty()) c.set("seed", std::to_string(seeds[k]));
        c.set("name", in.label());
        // a run shorter than suite.eval_every would be evaluated once, at its end: it is
        // evaluated every rounds / 5 instead (a paired run keeps the suite's, which its pair's
        // snapshots are compared at)
        const int64_t rounds = c.get_int("rounds");
        const int64_t every = rounds < plan.eval_every && !paired ? std::max<int64_t>(1, rounds / 5)
                                                                  : plan.eval_every;
        c.set("eval_every", std::to_string(every));
        if (paired) c.set("diagnostics.save_params_every", std::to_string(every));
        const RunSpec spec = resolve_run_spec(c);
        // the suite's own sections take only the runs they compare
        for (const auto& refusal :
             {cfg.get_bool("suite.parallelism") ? split_run_refusal(spec) : std::nullopt,
              cfg.get_bool("suite.lr_scaling") ? lr_run_refusal(spec) : std::nullopt})
          if (refusal) throw Error(*refusal);
        std::vector<std::string> own = r.sets;
        own.insert(own.end(), run_sets.begin(), run_sets.end());
        if (!r.swept.empty()) own.push_back(r.swept);
        for (const std::string& set : own) {
          const std::string key = set.substr(0, set.find('='));
          if (const std::string why = why_unread(c, spec, key); !why.empty())
            unread_by_runs[fmt::format("{} = {}: {}", key, c.value_text(key), why)].insert(r.label);
        }
      } catch (const Error& e) {
        // a --set that replaced the run's own value of a key the error names may be why: said
        // (it holds for every run)
        std::vector<std::string> replaced;
        const auto key_of = [](const std::string& set) { return set.substr(0, set.find('=')); };
        const std::string what = e.what();
        for (const std::string& mine : r.sets)
          for (const std::string& set : run_sets)
            if (key_of(set) == key_of(mine) && set != mine &&
                what.find(key_of(set)) != std::string::npos)
              replaced.push_back(fmt::format("--set {} replaced its own {}", set, mine));
        throw Error(fmt::format(
            "{}, run '{}': {}{}", plan.file.string(), in.label(), e.what(),
            replaced.empty()
                ? ""
                : fmt::format(" ({}: a --set holds for every run of the suite; to change some "
                              "runs only, edit a copy of the suite file and run that)",
                              fmt::join(replaced, ", "))));
      }
      if (reference.count(r.label)) in.reference = reference.at(r.label) + in.suffix;
      plan.instances.push_back(std::move(in));
    }
  }
  for (const auto& [what, labels] : unread_by_runs)
    fmt::print(stderr, "fedpar suite: warning: run(s) {} do not read {}\n", fmt::join(labels, ", "),
               what);
  for (const char* key : {"suite.title", "suite.what"})  // an unknown {key} fails before any run
    fill_run_keys(cfg.get_string(key), plan, key);
  if (with_equivalence) {
    plan.equivalence = config_without(cfg, {"suite"}, make_equivalence_config());
    plan.equivalence->set_all(smoke);
    plan.equivalence->set_all(smoke_equivalence);
    plan.equivalence->set_all(run_sets);
    resolve_run_spec(*plan.equivalence);
  }
  return plan;
}

// Runs the equivalence experiment into dir/equivalence (its folder is written also when a claim
// fails; the suite goes on and exits with its code at the end).
EquivalenceResult run_equivalence_part(const SuitePlan& plan, const std::filesystem::path& dir) {
  fmt::print(stderr, "suite {}: the full-batch equivalence table ...\n", plan.name);
  Config c = *plan.equivalence;
  c.set("results_dir", std::filesystem::absolute(dir).string());
  c.set("name", "equivalence");
  return run_equivalence(c, {.quiet = true, .say_results_dir = false}, plan.command);
}

// The report's section: the failed claims (if any), the tables, verdicts and what they mean.
std::string equivalence_markdown(const EquivalenceResult& r) {
  return "## Full batch: the equivalence (equivalence/report.md)\n\n" + render_equivalence(r, 3);
}

// Every run's rounds, for the delay model.
std::vector<DelayRound> delay_rounds(const std::vector<SuiteRun>& runs) {
  std::vector<DelayRound> all;
  for (const auto& r : runs) all.insert(all.end(), r.delay.begin(), r.delay.end());
  return all;
}

// The cores of the machine the runs ran on (the delay model's P).
int cores() { return std::max(1, int(std::thread::hardware_concurrency())); }

// The 1-minute load average now (-1 when unknown): the delay model quotes it.
double load_average() {
  double l[1];
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

// One run as server + client processes into runs_dir/<label>, read back for the report; nullopt
// when it failed, with its exit code in `failed_rc` (the suite's own).
std::optional<SuiteRun> run_instance(const Instance& in, const std::filesystem::path& runs_dir,
                                     int& failed_rc) {
  Config c = in.config;
  c.set("results_dir", runs_dir.string());
  const auto ts = std::chrono::steady_clock::now();
  // the report has the plots; a failed run's folder goes with the suite's
  const int rc = run_locally(c, {.quiet = true, .plots = false, .keep_incomplete = false});
  if (const int sig = run_interrupted_by()) throw Interrupted(sig);  // the suite stops too
  if (rc != 0 && rc != kExitDiverged) {
    fmt::print(stderr, "\nfedpar suite: run '{}' failed (exit {}); nothing is kept\n", in.label(),
               rc);
    failed_rc = rc;
    return std::nullopt;
  }
  SuiteRun r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
  const auto dir = runs_dir / in.label();
  r.label = in.label();
  r.group = in.spec.label;
  r.overrides = shown_overrides(in);
  r.reference = in.reference;
  r.curves = read_curves(dir);
  const RunSummary summary = read_run_summary(dir);
  r.diverged_at_round = summary.diverged_at_round;
  r.client_holdout = summary.client_holdout;
  r.warnings = summary.warnings.value_or(std::vector<std::string>{});
  r.accounting = read_accounting(dir);
  r.traffic = read_traffic(dir);
  r.delay = read_delay_rounds(dir);
  r.privacy_delta = c.get_float("privacy.delta");
  const PartitionStats st = manifest_stats(dir / "manifest.json");
  r.clients = st.clients.size();
  r.median_emd = st.emd.median;
  return r;
}

// Weight divergence of each paired run from its reference (also into the run's divergence.jsonl);
// the parameter snapshots then go: they are large.
void add_divergence(std::vector<SuiteRun>& results, const std::filesystem::path& runs_dir) {
  for (auto& r : results) {
    if (r.reference.empty()) continue;
    r.divergence = weight_divergence(runs_dir / r.label, runs_dir / r.reference);
    JsonlWriter log(runs_dir / r.label / "divergence.jsonl");
    for (size_t k = 0; k < r.divergence.round.size(); ++k)
      log.write({{"round", int64_t(r.divergence.round[k])},
                 {"reference", r.reference},
                 {"weight_divergence", r.divergence.relative[k]}});
  }
  for (const auto& r : results) std::filesystem::remove_all(runs_dir / r.label / "params");
}

std::string report_markdown(const SuitePlan& plan, bool smoke, const std::vector<SuiteRun>& results,
                            const std::string& equivalence_md, const std::string& section_md,
                            const std::vector<std::string>& failed, double seconds,
                            const std::filesystem::path& dir) {
  const Config& cfg = plan.cfg;
  const double target = cfg.get_float("suite.target_accuracy");
  const std::string title = fill_run_keys(cfg.get_string("suite.title"), plan, "suite.title");
  std::ostringstream report;
  if (smoke) {  // its description may state the full suite's sizes where it names no key
    std::vector<std::string> sets;
    for (const auto& s : plan.smoke_settings)
      if (s.starts_with("suite.runs="))
        sets.push_back("its own shorter list of runs (`suite.runs`)");
      else if (!s.starts_with("suite.what="))  // a smoke description says itself
        sets.push_back("`" + s + "`");
    report << fmt::format(
        "# {} (smoke size)\n\n**A smoke run** (`--smoke`): a quick check that the suite runs, "
        "not its results. {}; a size the description below states without it being filled in "
        "from the runs is the full suite's.\n\n",
        title,
        sets.empty() ? std::string("It changed none of the suite's settings")
                     : fmt::format("It set {} ({})", fmt::join(sets, ", "),
                                   std::any_of(sets.begin(), sets.end(),
                                               [](const std::string& s) {
                                                 return s.starts_with("`equivalence.");
                                               })
                                       ? "the `equivalence.*` ones for the equivalence table, "
                                         "the others for every run"
                                       : "for every run"));
  } else {
    report << fmt::format("# {}\n\n", title);
  }
  if (!plan.only.empty())
    report << fmt::format(
        "**Part of the suite** (`suite.only`): {} of its {} runs ({}). The description below is "
        "the whole suite's, and so is any sentence in it that no run's numbers fill in.\n\n",
        plan.only.size(), plan.listed_runs, fmt::join(plan.only, ", "));
  report << fmt::format(
      "{}\n\nCommand: `{}` ({:.0f} s; config.resolved.toml: the suite's config with "
      "--smoke's and --set's values, which win over a run's own overrides; each run's results "
      "folder is under runs/). Accuracy is on the test set {}; MB counts "
      "every byte the server sent and received at its socket (diagnostic extras left out; the "
      "parameter server sends one TASK a round to each client process it asks, however many "
      "clients it hosts) and every byte workers sent each other (a ring's, a pipeline's or a "
      "tensor grid's links); seconds are the links' simulated or emulated time where the run "
      "has network conditions, async's training time since its start, else the server's wait (a "
      "master's loss too) + "
      "aggregation (a cell on another clock than most runs says which); median "
      "EMD is the partition's label skew (docs/partitioning.md); round time is the mean round "
      "on the seconds' clock.\n\n",
      fill_run_keys(cfg.get_string("suite.what"), plan, "suite.what"), plan.command, seconds,
      plan.eval_every == 1
          ? std::string("every round")
          : fmt::format("every {} rounds (a run of fewer rounds: every fifth of its rounds)",
                        plan.eval_every));
  if (!failed.empty()) {  // the suite's own claims that did not hold, first (it exits 1)
    report << fmt::format(
        "**{} claim(s) failed** (the suite exits 1; the section below has "
        "the numbers):\n\n",
        failed.size());
    for (const auto& f : failed) report << "- " << f << "\n";
    report << "\n";
  }
  report << equivalence_md << (plan.equivalence ? "\n## Runs\n\n" : "")
         << results_table(results, target) << "\n";
  if (const std::string means = seed_means_table(results, target); !means.empty())
    report << "### Over seeds\n\nEach run's seeds together (sample standard deviation).\n\n"
           << means << "\n";
  if (const std::string privacy = privacy_table(results); !privacy.empty())
    report << "### Privacy\n\nDP-FedAvg's runs (`[privacy]`, docs/privacy.md): the accountant's "
              "client-level epsilon after the run's rounds (the same for every seed), and the "
              "share of the aggregated updates that were longer than `privacy.clip_norm` and "
              "clipped to it.\n\n"
           << privacy << "\n";
  if (const std::string grid = grid_table(results, target); !grid.empty())
    report << fmt::format("### Best of each {}grid\n\n",
                          sweep_key(plan.cfg.get_string("suite.sweep")))
           << grid << "\n";
  if (const std::string clients = clients_table(results); !clients.empty())
    report << "### Clients' accuracy on their own samples\n\nWith `eval_clients = true` the server "
              "scores its model on each client's own samples at the evaluated rounds (its "
              "training shard, or with `partition.holdout` the share it held out of training) "
              "(docs/metrics.md): the mean over clients counts each once; the worst 10% is the "
              "mean of the lowest tenth (q-FFL's). A test accuracy close to the clients' mean can "
              "hide clients the model serves badly.\n\n"
           << clients << "\n";
  report << section_md;
  if (const std::string warnings = warnings_list(results); !warnings.empty())
    report << "### Warnings\n\nWhat the runs' servers warned of before round 1 (each run's README "
              "has its own):\n\n"
           << warnings << "\n";
  if (const std::string traffic = traffic_table(results); !traffic.empty())
    report << "### Traffic and time per node and step\n\nMedians over the rounds after the first, "
              "without an evaluation and without the model sent to the server, where there are "
              "such (a ring gets its model in the first round's TASKs, and a ring or a split "
              "model sends it to the server to evaluate, save or checkpoint it). The server's "
              "columns "
              "count its socket; a worker's add its ring traffic (allreduce). busbw = model "
              "bytes / all-reduce time x 2(N-1)/N.\n\n"
           << traffic << "\n";
  if (const std::string div = divergence_table(results); !div.empty())
    report << "### Weight divergence between paired runs\n\nThe relative distance of each run's "
              "weights from its reference run's at the same round; the median drift (where logged) "
              "is over the run's rounds.\n\n"
           << div << "\n";
  if (const std::string accounting = accounting_table(results); !accounting.empty())
    report << "### Memory and time per client and round\n\nMedians over rounds, for the runs "
              "whose clients send the server updates (the parameter server); memory is what the "
              "client's core allocated (parameters + gradient; activations, their gradients and "
              "layer scratch for its batch); client compute is the slowest process's (its "
              "clients one after another); exchange is the rest of the server's wait "
              "(transfers, decoding, queueing).\n\n"
           << accounting << "\n";
  if (cfg.get_bool("suite.delay_model"))
    report << "### Delay model\n\n"
           << delay_model_markdown(delay_rounds(results), cores(), dir, title, load_average());
  if (cfg.get_bool("suite.curve_plots")) report << draw_suite_plots(results, title, dir);
  return report.str();
}

}  // namespace

std::vector<std::string> suite_names() {
  std::vector<std::string> names;
  for (const auto& root : suite_roots()) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root / kSuiteDir, ec))
      if (e.path().extension() == ".toml") names.push_back(e.path().stem().string());
    if (!names.empty()) break;
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string suite_section() { return kSection; }

size_t check_suite(const SuiteOptions& o) { return plan_suite(o).instances.size(); }

int run_suite(const SuiteOptions& o) {
  install_stop_handlers();  // between runs too: a stopped suite unwinds and keeps nothing
  const SuitePlan plan = plan_suite(o);  // every config validated before any run starts
  const auto out_path = o.out.empty() ? std::filesystem::path("results") / plan.name : o.out;
  ResultsDir out(out_path.parent_path().empty() ? "." : out_path.parent_path(),
                 out_path.filename().string());
  const auto runs_dir = std::filesystem::absolute(out.path() / "runs");
  std::filesystem::create_directories(runs_dir);
  std::filesystem::create_directories(out.path() / "plots");
  out.write_text("config.resolved.toml", plan.resolved_toml);
  const auto t0 = std::chrono::steady_clock::now();

  std::string equivalence_md;
  std::optional<EquivalenceResult> equivalence;
  if (plan.equivalence) {
    equivalence = run_equivalence_part(plan, out.path());
    if (equivalence->failed_run != 0) return equivalence->failed_run;
    equivalence_md = equivalence_markdown(*equivalence);
  }
  std::vector<SuiteRun> results;
  std::set<std::string> warned;  // the runs are quiet: each warning said once, here
  for (size_t i = 0; i < plan.instances.size(); ++i) {
    fmt::print(stderr, "suite {}: run {}/{} '{}' ...", plan.name, i + 1, plan.instances.size(),
               plan.instances[i].label());
    std::optional<SuiteRun> r;
    int failed_rc = 1;
    try {
      throw_if_stopped();
      r = run_instance(plan.instances[i], runs_dir, failed_rc);
    } catch (const Error&) {
      fmt::print(stderr, "\n");  // end the run's line
      throw;
    }
    if (!r) return failed_rc;  // the run's own code (5: it failed once started); it said why
    fmt::print(
        stderr, " {:.1f} s{}\n", r->seconds,
        r->diverged_at_round ? fmt::format(" (diverged at round {})", *r->diverged_at_round) : "");
    for (const std::string& w : r->warnings)
      if (warned.insert(w).second) fmt::print(stderr, "suite {}: warning: {}\n", plan.name, w);
    results.push_back(std::move(*r));
  }
  add_divergence(results, runs_dir);
  // The suite's own section (parallelism, lr-scaling, topology scaling), with its claims.
  std::string section_md;
  std::vector<std::string> failed;
  nlohmann::json section_json;
  const auto add_section = [&](const auto& section, const char* key) {
    section_md += section.markdown + "\n";
    failed.insert(failed.end(), section.failed.begin(), section.failed.end());
    section_json[key] = section.json;
  };
  if (plan.cfg.get_bool("suite.parallelism")) {
    std::vector<SplitRun> split;
    for (const auto& r : results) split.push_back(read_split_run(runs_dir / r.label, r.label));
    add_section(parallelism_section(split, cores()), "parallelism");
  }
  if (plan.cfg.get_bool("suite.lr_scaling")) {
    std::vector<LrRun> points;
    for (const auto& r : results) points.push_back(read_lr_run(runs_dir / r.label, r.label));
    add_section(lr_scaling_section(points, plan.cfg.get_float("suite.trains_at"), out.path()),
                "lr_scaling");
  }

  if (plan.cfg.get_bool("suite.topology_scaling")) {
    std::vector<ScalingRun> scaling;
    for (const auto& r : results)
      if (is_scaling_run(runs_dir / r.label))
        scaling.push_back(read_scaling_run(runs_dir / r.label, r.label));
    add_section(topology_scaling_section(scaling, !plan.only.empty()), "topology_scaling");
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.write_text("report.md", report_markdown(plan, o.smoke, results, equivalence_md, section_md,
                                              failed, seconds, out.path()) +
                                  "\n" + provenance_line() + "\n");
  const double target = plan.cfg.get_float("suite.target_accuracy");
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : results) rows.push_back(run_json(r, target));
  nlohmann::json suite_json = {{"suite", plan.file.stem().string()},
                               {"smoke", o.smoke},
                               {"runs", rows},
                               {"seconds", seconds},
                               {"command", plan.command},
                               {"provenance", provenance_json()}};
  if (plan.cfg.get_bool("suite.delay_model"))
    suite_json["delay_model"] = delay_model_json(delay_rounds(results), cores());
  if (!section_json.is_null()) suite_json.update(section_json);
  out.write_json("suite.json", suite_json);
  const auto path = out.commit();
  fmt::print("{}\nreport: {}\n", results_table(results, target), (path / "report.md").string());
  if (!failed.empty()) {
    fmt::print(stderr, "fedpar suite: {} claim(s) failed:\n", failed.size());
    for (const auto& f : failed) fmt::print(stderr, "  {}\n", f);
    return 1;
  }
  return equivalence ? equivalence_exit_code(*equivalence) : 0;
}

}  // namespace fedpar
