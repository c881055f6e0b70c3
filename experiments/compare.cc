// run_compare; see compare.h.
#include "experiments/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "core/check.h"
#include "core/model_data_config.h"
#include "core/results_dir.h"
#include "core/run_spec.h"
#include "core/unread_settings.h"
#include "experiments/compare_seeds.h"
#include "experiments/epsilon_column.h"
#include "experiments/plot.h"
#include "experiments/run_metrics.h"
#include "partitioners/stats.h"

namespace fedpar {
namespace {

struct Compared {
  std::string label;
  std::filesystem::path dir;
  std::vector<double> x, y, round;
  std::optional<double> median_emd;  // how non-IID its partition was (none: no manifest.json)
  std::optional<double> epsilon;     // [privacy] with noise: its last round's
  uint64_t asked = 0, lost = 0;  // over its rounds: updates asked for, and those lost (RunCurves)
};

// The median over clients of the distance of their label distribution to the whole's.
std::optional<double> median_emd(const std::filesystem::path& dir) {
  try {
    return manifest_stats(dir / "manifest.json").emd.median;
  } catch (const std::exception&) {  // an older run's, or none: the cell says "-"
    return std::nullopt;
  }
}

// The metric and x axis: their columns of a run's curves and how the report names them.
struct Axis {
  std::string name;
  const std::vector<double>& (*column)(const RunCurves&);
  std::string unit;  // what the table's columns call its values ("MB" for bytes)
};

const std::vector<double>& accuracy_of(const RunCurves& c) { return c.accuracy; }
const std::vector<double>& loss_of(const RunCurves& c) { return c.test_loss; }
const std::vector<double>& train_loss_of(const RunCurves& c) { return c.global_train_loss; }
const std::vector<double>& client_worst10_of(const RunCurves& c) { return c.client_worst10; }
const std::vector<double>& round_of(const RunCurves& c) { return c.round; }
const std::vector<double>& samples_of(const RunCurves& c) { return c.samples; }
const std::vector<double>& mb_of(const RunCurves& c) { return c.mb; }
const std::vector<double>& mb_up_of(const RunCurves& c) { return c.mb_up; }
const std::vector<double>& mb_down_of(const RunCurves& c) { return c.mb_down; }
const std::vector<double>& mb_device_of(const RunCurves& c) { return c.mb_device; }
const std::vector<double>& seconds_of(const RunCurves& c) { return c.seconds; }

Axis metric_axis(const std::string& m) {
  if (m == "accuracy") return {"test accuracy (%)", accuracy_of};
  if (m == "loss") return {"test loss", loss_of};
  if (m == "train-loss")
    return {"global train loss (the model on the training set)", train_loss_of};
  if (m == "client-worst10")
    return {"worst 10% of clients' accuracy on their own samples (%)", client_worst10_of};
  throw Error(
      fmt::format("--metric must be accuracy, loss, train-loss or client-worst10, got '{}'", m));
}

Axis x_axis(const std::string& x) {
  if (x == "round") return {"round", round_of, "round"};
  if (x == "samples") return {"samples processed by all clients", samples_of, "samples"};
  if (x == "bytes") return {"MB sent + received at the server, and between workers", mb_of, "MB"};
  if (x == "bytes-up") return {"MB the server received (the clients' uplink)", mb_up_of, "MB up"};
  if (x == "bytes-down")
    return {"MB the server sent (the clients' downlink)", mb_down_of, "MB down"};
  if (x == "device-bytes")
    return {"MB with one device per client (each asked client's model download and update)",
            mb_device_of, "device MB"};
  if (x == "seconds")
    return {"seconds of training (the server's rounds, or the network's time)", seconds_of,
            "seconds"};
  throw Error(fmt::format(
      "--x must be round, samples, bytes, bytes-up, bytes-down, device-bytes or seconds, got '{}'",
      x));
}

// A folder's summary.json, parsed; not an object when absent or not JSON (a run still going, a
// folder that is not a run's).
nlohmann::json read_summary(const std::filesystem::path& dir) {
  std::ifstream in(dir / "summary.json");
  return nlohmann::json::parse(in, nullptr, false);
}

// A `fedpar train` folder (its summary.json says so).
bool is_train_folder(const std::filesystem::path& dir) {
  const auto j = read_summary(dir);
  return j.is_object() && j.value("command", "") == "train";
}

// A `fedpar train` folder beside the runs: the centralized baseline, drawn as a line at its final
// value (it has epochs, not rounds, and sends no bytes).
struct Reference {
  std::string label;
  std::filesystem::path dir;
  std::vector<double> y;       // per epoch, in the metric's unit (accuracy in %)
  std::vector<int64_t> epoch;  // which epoch each is (0: the initial model, evaluated when the
                               // training diverged in its first epoch)
  double train_samples = 0;    // an epoch's samples (its summary's train_samples; 0: not said)
  std::string ended;           // "diverged at epoch 1, step 3"; "" when it ran its epochs
  // its label as the table and plot show it: how it ended beside its name
  std::string shown() const { return ended.empty() ? label : fmt::format("{} ({})", label, ended); }
};

Reference read_reference(const std::filesystem::path& dir, const std::string& metric) {
  const auto j = read_summary(dir);
  Reference r{.label = dir.filename().string(), .dir = dir};
  if (j.is_object() && j.contains("epochs") && j["epochs"].is_array())
    for (const auto& e : j["epochs"]) {
      const char* key = metric == "accuracy" ? "test_accuracy" : "test_loss";
      if (e.is_object() && !e.contains(key) && j.value("test_samples", nlohmann::json(1)) == 0)
        throw Error(fmt::format("{} had no test set: there is no test {} to draw as the baseline",
                                dir.string(), metric));
      if (!e.is_object() || !e.contains(key) || !e[key].is_number())
        throw Error(
            fmt::format("{}/summary.json: an epoch without a finite {} (null: the "
                        "training diverged)",
                        dir.string(), key));
      r.y.push_back(e[key].get<double>() * (metric == "accuracy" ? 100 : 1));
      r.epoch.push_back(e.contains("epoch") && e["epoch"].is_number_integer()
                            ? e["epoch"].get<int64_t>()
                            : int64_t(r.epoch.size() + 1));
    }
  if (r.y.empty())
    throw Error(fmt::format("{}/summary.json lists no evaluated epoch", dir.string()));
  if (j.contains("train_samples") && j["train_samples"].is_number())
    r.train_samples = j["train_samples"].get<double>();
  if (const auto d = j.find("diverged_at"); d != j.end() && d->is_object())
    r.ended =
        fmt::format("diverged at epoch {}, step {}", d->value("epoch", nlohmann::json()).dump(),
                    d->value("step", nlohmann::json()).dump());
  return r;
}

// The index of the best of `y` (the highest accuracy, the lowest loss).
size_t best_index(const std::vector<double>& y, bool higher_is_better) {
  return size_t((higher_is_better ? std::max_element(y.begin(), y.end())
                                  : std::min_element(y.begin(), y.end())) -
                y.begin());
}

// The index of the first of `y` at or beyond `target`; none when never, or without a target.
std::optional<size_t> first_at(const std::vector<double>& y, double target, bool higher_is_better) {
  for (size_t k = 0; k < y.size() && target > 0; ++k)
    if (higher_is_better ? y[k] >= target : y[k] <= target) return k;
  return std::nullopt;
}

// A distributed run's folder, or an Error that says what the folder is instead.
void check_run_folder(const std::filesystem::path& dir) {
  if (std::filesystem::is_regular_file(dir))
    throw Error(fmt::format("{} is a file: fedpar compare takes the run's folder ({})",
                            dir.string(), dir.parent_path().string()));
  if (!std::filesystem::is_directory(dir))
    throw Error(fmt::format("{}: no such results folder", dir.string()));
  if (!std::filesystem::exists(dir / "metrics.jsonl"))
    throw Error(
        fmt::format("{} has no metrics.jsonl: not a run's results folder, nor a folder of runs "
                    "(a suite's runs/)",
                    dir.string()));
}

// A run's config.resolved.toml, resolved; or why this fedpar cannot read it.
struct RunConfig {
  Config config = make_run_config();
  std::optional<RunSpec> spec;
  std::string error;
};

RunConfig read_run_config(const std::filesystem::path& dir) {
  RunConfig r;
  try {
    r.config.merge_file(dir / "config.resolved.toml");
    r.spec = resolve_run_spec(r.config);
  } catch (const Error& e) {
    r.error = e.what();
  }
  return r;
}

// How a run's folder ended when not as its config planned: "diverged at round N", "unfinished:
// R of N rounds" (a live or killed run's partial folder, NAME.incomplete); "" for a finished run
// (a stop_at_accuracy run's is finished: it reached what it asked for).
std::string how_it_ended(const std::filesystem::path& dir) {
  const auto j = read_summary(dir);
  if (j.is_object()) {
    const auto at = j.find("diverged_at_round");
    return at != j.end() && at->is_number_integer()
               ? fmt::format("diverged at round {}", at->get<int64_t>())
               : "";
  }
  size_t lines = 0;
  std::ifstream metrics(dir / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) lines += !line.empty();
  const RunConfig config = read_run_config(dir);
  return config.spec ? fmt::format("unfinished: {} of {} rounds", lines, config.spec->rounds)
                     : fmt::format("unfinished: {} rounds", lines);
}

// A suite's runs in the order its suite.json lists them (its report's), from the folder holding
// runs/; empty when there is none.
std::vector<std::string> suite_order(const std::filesystem::path& suite_dir) {
  std::ifstream in(suite_dir / "suite.json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  std::vector<std::string> labels;
  if (j.is_object() && j.contains("runs") && j["runs"].is_array())
    for (const auto& r : j["runs"])
      if (r.is_object() && r.contains("label") && r["label"].is_string())
        labels.push_back(r["label"]);
  return labels;
}

// A folder of runs (a suite's runs/, or the suite's folder that holds it) stands for its finished
// runs, a suite's in its own order and any other in name order (a `fedpar train` folder among
// them the baseline); any other folder for itself.
std::vector<std::filesystem::path> runs_in(const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir / "metrics.jsonl")) return {dir};
  const auto folder = std::filesystem::is_directory(dir / "runs") ? dir / "runs" : dir;
  std::vector<std::filesystem::path> runs;
  std::vector<std::string> unfinished;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(folder, ec)) {
    if (!e.is_directory() || !std::filesystem::exists(e.path() / "metrics.jsonl")) continue;
    const std::string name = e.path().filename().string();
    // not finished: a partial folder, or NAME.incomplete (-2, ...)
    if (name.starts_with(".") || name.find(".incomplete") != std::string::npos)
      unfinished.push_back(fmt::format("{} ({})", name, how_it_ended(e.path())));
    else
      runs.push_back(e.path());  // a `fedpar train` folder among them is their baseline
  }
  std::sort(unfinished.begin(), unfinished.end());
  if (!unfinished.empty())
    fmt::print(stderr,
               "fedpar compare: leaving out the unfinished run(s) in {}: {} (name a folder to "
               "compare it as far as it got)\n",
               folder.string(), fmt::join(unfinished, ", "));
  std::sort(runs.begin(), runs.end());
  const auto order = suite_order(folder.parent_path());  // runs the suite lists first, as listed
  const auto rank = [&](const std::filesystem::path& p) {
    return size_t(std::find(order.begin(), order.end(), p.filename().string()) - order.begin());
  };
  std::stable_sort(runs.begin(), runs.end(),
                   [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  return runs.empty() ? std::vector{dir} : runs;  // none: check_run_folder says why
}

// Labels: each folder's name, with its parent's where two runs share a name.
std::vector<std::string> labels_of(const std::vector<std::filesystem::path>& dirs) {
  std::map<std::string, int> count;
  for (const auto& d : dirs) ++count[d.filename().string()];
  std::vector<std::string> out;
  for (const auto& d : dirs) {
    const std::string name = d.filename().string();
    out.push_back(count[name] > 1 ? (d.parent_path().filename() / name).string() : name);
  }
  return out;
}

// four digits, whole numbers from 1000 on (10000 samples, not 1e+04), and an exponent from 1e9 on
// (a diverging run's loss, 1.683e+16, not seventeen digits)
std::string num(double v) {
  if (std::abs(v) >= 1e9) return fmt::format("{:.4g}", v);
  return std::abs(v) >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v);
}

// What tells the runs apart: for each run, every setting in its config.resolved.toml that it read
// and whose value is not the same in all the runs that read it, or, read by some runs only, is
// not at its default there (a dirichlet run's alpha beside an iid run's), key to value; the run's
// name and where it wrote left out; none when they agree. A config this fedpar cannot read says
// so in `unread`.
struct DifferingSettings {
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<std::string> unread;  // "(config not read: ...)", or ""
  // The values most runs share (more than half of those reading the key, and at least 3 of
  // them; or both of 2 that read it, of 3 runs): a row shows only where it departs from these.
  std::map<std::string, std::string> common;

  std::string text(const std::map<std::string, std::string>& kv) const {
    std::string out;
    for (const auto& [k, v] : kv) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
    return out;
  }
  std::string full(size_t i) const { return unread[i].empty() ? text(rows[i]) : unread[i]; }
  // Where run i departs from `common`: its own values, and the common keys it does not read (a
  // shown key is in the row of every run that reads it).
  std::string departures(size_t i) const {
    if (!unread[i].empty()) return unread[i];
    std::map<std::string, std::string> own;
    for (const auto& [k, v] : rows[i])
      if (!common.count(k) || common.at(k) != v) own[k] = v;
    std::vector<std::string> not_read;
    for (const auto& [k, v] : common)
      if (!rows[i].count(k)) not_read.push_back(k);
    std::string out = text(own);
    if (!not_read.empty())
      out += fmt::format("{}not read: {}", out.empty() ? "" : " ", fmt::join(not_read, ", "));
    return out;
  }
  bool any() const {
    return std::any_of(rows.begin(), rows.end(), [](const auto& r) { return !r.empty(); }) ||
           std::any_of(unread.begin(), unread.end(), [](const auto& u) { return !u.empty(); });
  }
};

DifferingSettings differing_settings(const std::vector<RunConfig>& configs) {
  const std::set<std::string> ignored = {"name", "results_dir", "bind"};
  const size_t n = configs.size();
  std::vector<std::map<std::string, std::string>> values(n);
  DifferingSettings out{.rows = std::vector<std::map<std::string, std::string>>(n),
                        .unread = std::vector<std::string>(n)};
  std::set<std::string> keys;
  const auto text = [](const Config& c, const std::string& k) {
    return whole_shard_batch(c, k) ? std::string("'full'") : c.value_text(k);
  };
  for (size_t i = 0; i < n; ++i) {
    const RunConfig& r = configs[i];
    if (!r.spec) {
      out.unread[i] = fmt::format("(config not read: {})", r.error);
      continue;
    }
    for (const std::string& k : r.config.keys())
      if (!ignored.count(k) && run_reads(r.config, *r.spec, k))
        values[i][k] = text(r.config, k), keys.insert(k);
  }
  const Config defaults = make_run_config();
  for (const std::string& k : keys) {
    std::map<std::string, size_t> read;  // the values of the runs that read k, and how many
    size_t readers = 0;
    bool all_read = true;
    for (size_t i = 0; i < n; ++i)
      if (const auto it = values[i].find(k); it != values[i].end())
        ++read[it->second], ++readers;
      else
        all_read &= !out.unread[i].empty();  // a config not read says nothing either way
    bool shown = false;
    for (size_t i = 0; i < n; ++i)
      if (const auto it = values[i].find(k); it != values[i].end())
        if (read.size() > 1 || (!all_read && it->second != text(defaults, k)))
          out.rows[i][k] = it->second, shown = true;
    for (const auto& [v, count] : read)
      if (shown && (readers >= 3 || (read.size() == 1 && readers == 2 && 2 * readers > n)) &&
          2 * count > readers)
        out.common[k] = v;
  }
  return out;
}

// A limit at or above MNIST's set (`whole` samples) is the whole set, as 0 is.
size_t mnist_limit(const DataOptions& d, size_t limit, size_t whole) {
  return d.name == "mnist" && limit >= whole ? 0 : limit;
}

// What decides a run's test set: runs whose keys differ are scored on different samples, so
// their accuracies are not on one scale.
std::map<std::string, std::string> test_set_keys(const DataOptions& d) {
  const size_t limit = mnist_limit(d, d.test_limit, 10000);
  std::map<std::string, std::string> k = {{"data.name", d.name},
                                          {"data.test_limit", std::to_string(limit)}};
  if (d.name == "synthetic")
    k["data.alpha, beta, iid, devices, seed"] =
        fmt::format("{} {} {} {} {}", d.alpha, d.beta, d.iid, d.devices, d.seed);
  if (d.name == "csv") k["data.csv_test"] = d.csv_test.string();
  return k;
}

// --x device-bytes: a master's, a ring's or a split model's workers are its processes, whose
// traffic it counts as theirs (no TASK per client to count), so it grows with `processes`.
std::string process_devices_note(const std::vector<std::optional<RunSpec>>& specs,
                                 const std::vector<std::string>& labels) {
  std::vector<std::string> named;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i] && specs[i]->topology != Topology::kParameterServer)
      named.push_back(fmt::format("{} ({} processes)", labels[i], specs[i]->processes));
  if (named.empty()) return "";
  return fmt::format(
      "Device MB of {}: a master's, a ring's or a split model's workers are its processes, so "
      "these count each process as a device (their real traffic), and grow with `processes`; "
      "a parameter server's count one device per client whatever its processes.\n",
      fmt::join(named, ", "));
}

// "These runs are tested on different test sets (data.test_limit): ..." when their configs say
// so; "" when they share one (or a config could not be read).
std::string test_set_note(const std::vector<std::optional<RunSpec>>& specs) {
  std::set<std::string> differ;
  for (const auto& a : specs)
    for (const auto& b : specs)
      if (a && b)
        for (const auto& [key, value] : test_set_keys(a->data))
          if (const auto other = test_set_keys(b->data);  // another dataset lacks the key
              !other.count(key) || other.at(key) != value)
            differ.insert(key);
  return differ.empty() ? ""
                        : fmt::format(
                              "These runs are tested on different test sets ({} differ): their "
                              "accuracies and losses are not on one scale.\n",
                              fmt::join(differ, "; "));
}

// "The centralized baseline b trained otherwise than the runs: model.name ('logreg' against
// '2nn'); ...": its model, its training set (data.train_limit) or its test set differs from a
// run's, so the line drawn is not the runs' baseline ("" when they match or a run's config is
// unread; a note to check by hand when the baseline's is).
std::string baseline_note(const Reference& r, const std::vector<std::optional<RunSpec>>& specs) {
  ModelSpec m;
  DataOptions d;
  try {
    std::ifstream in(r.dir / "config.resolved.toml");
    if (!in) throw Error("no config.resolved.toml");
    const Config c(std::string(std::istreambuf_iterator<char>(in), {}));  // every key resolved
    m = resolve_model_spec(c);
    d = resolve_data_options(c, resolve_seed(c));
  } catch (const Error& e) {
    return fmt::format(
        "The centralized baseline {}'s config could not be read ({}): check by hand that it "
        "trained the runs' model on their data.\n",
        r.label, e.what());
  }
  std::map<std::string, std::pair<std::string, std::string>> differ;  // key: (its, a run's)
  const auto hidden = [](const ModelSpec& x) {
    return fmt::format("{}", fmt::join(x.hidden, ","));
  };
  for (const auto& s : specs) {
    if (!s) continue;
    if (s->model.name != m.name) differ["model.name"] = {m.name, s->model.name};
    if (s->model.name == m.name && hidden(s->model) != hidden(m))
      differ["model.hidden"] = {hidden(m), hidden(s->model)};
    const size_t mine = mnist_limit(d, d.train_limit, 60000),
                 theirs = mnist_limit(s->data, s->data.train_limit, 60000);
    if (mine != theirs) differ["data.train_limit"] = {std::to_string(mine), std::to_string(theirs)};
    const auto tested = test_set_keys(d), run_tested = test_set_keys(s->data);
    for (const auto& [key, value] : tested)
      if (!run_tested.count(key) || run_tested.at(key) != value)
        differ[key] = {value, run_tested.count(key) ? run_tested.at(key) : "-"};
  }
  if (differ.empty()) return "";
  std::vector<std::string> said;
  for (const auto& [key, v] : differ)
    said.push_back(fmt::format("{} ({} against a run's {})", key, v.first, v.second));
  return fmt::format(
      "The centralized baseline {} trained otherwise than the runs: {}; its line is not their "
      "baseline (`fedpar train` with the runs' model and data keys gives one).\n",
      r.label, fmt::join(said, "; "));
}

// "Runs a and b ended with the same model (hash h)." for each hash two or more runs share: the
// same run twice, or settings that change nothing.
std::string same_model_note(const std::vector<std::filesystem::path>& dirs,
                            const std::vector<std::string>& labels) {
  std::map<std::string, std::vector<std::string>> by_hash;
  for (size_t i = 0; i < dirs.size(); ++i) {
    const auto j = read_summary(dirs[i]);
    if (j.is_object() && j.contains("model_hash") && j["model_hash"].is_string())
      by_hash[j["model_hash"].get<std::string>()].push_back(labels[i]);
  }
  std::string out;
  for (const auto& [hash, runs] : by_hash)
    if (runs.size() > 1)
      out += fmt::format("Runs {} ended with the same model (hash {}): bit for bit alike.\n",
                         fmt::join(runs, ", "), hash);
  return out;
}

// Runs that drew the same curve (x and y alike, point for point) with models of more than one
// hash: one line hides another, so the report says so (runs of one hash are said already, and a
// run without a summary, unfinished, has no model to tell apart).
std::string same_curve_note(const std::vector<Compared>& runs,
                            const std::vector<std::filesystem::path>& dirs) {
  std::map<std::pair<std::vector<double>, std::vector<double>>,
           std::pair<std::vector<std::string>, std::set<std::string>>>
      by_curve;  // (x, y) -> the runs that drew it, and their model hashes
  for (size_t i = 0; i < runs.size(); ++i)
    if (const auto j = read_summary(dirs[i]);
        j.is_object() && j.contains("model_hash") && j["model_hash"].is_string()) {
      auto& [labels, hashes] = by_curve[{runs[i].x, runs[i].y}];
      labels.push_back(runs[i].label);
      hashes.insert(j["model_hash"].get<std::string>());
    }
  std::string out;
  for (const auto& [curve, group] : by_curve)
    if (group.second.size() > 1)
      out += fmt::format(
          "Runs {} drew the same curve (every point alike, their models not all): one line hides "
          "another.\n",
          fmt::join(group.first, ", "));
  return out;
}

// Test accuracy on runs scored on one test set of n samples: a sample is 100 / n points, and at
// the runs' median final accuracy p the test set's sampling error is sqrt(p (1 - p) / n) ("" when
// a run's summary does not give n, or they differ: test_set_note says so).
std::string test_size_note(const std::vector<Compared>& runs,
                           const std::vector<std::filesystem::path>& dirs) {
  std::set<uint64_t> sizes;
  for (const auto& dir : dirs) {
    const auto j = read_summary(dir);
    if (!j.is_object() || !j.contains("test_samples") || !j["test_samples"].is_number_unsigned())
      return "";
    sizes.insert(j["test_samples"].get<uint64_t>());
  }
  if (sizes.size() != 1 || *sizes.begin() == 0) return "";
  const double n = double(*sizes.begin());
  std::vector<double> finals;
  for (const Compared& r : runs) finals.push_back(r.y.back() / 100);
  std::ranges::sort(finals);
  const double p = finals[finals.size() / 2];
  return fmt::format(
      "Test accuracy is on {} test samples: one sample is {:.2g} points, and the test set's "
      "sampling error at the median final accuracy ({:.2f}%) is a binomial standard error of "
      "{:.2f} points; on test sets drawn apart two runs would need about 2.8 times that between "
      "them, and on this shared one a paired test of the samples they score differently tells "
      "more (seeds vary the accuracy besides: take their spread from runs of several).\n",
      *sizes.begin(), 100 / n, 100 * p, 100 * std::sqrt(p * (1 - p) / n));
}

}  // namespace

int run_compare(const CompareOptions& o, const std::string& command) {
  if (o.runs.empty()) throw Error("fedpar compare needs at least one results folder");
  const Axis metric = metric_axis(o.metric), x = x_axis(o.x);
  const bool higher_is_better = percent_metric(o.metric);
  std::vector<std::filesystem::path> dirs;
  std::vector<Reference> references;  // fedpar train folders named on the command line
  for (const auto& r : o.runs) {
    auto d = r;
    while (!d.empty() && d.filename().empty()) d = d.parent_path();  // "runs/a/" names "a"
    // a comparison among the runs (`compare results/*` after a compare into results/compare)
    if (o.runs.size() > 1 && std::filesystem::exists(d / "compare.json") &&
        !std::filesystem::exists(d / "metrics.jsonl")) {
      fmt::print(stderr, "fedpar compare: leaving out {}: a comparison's folder, not a run's\n",
                 d.string());
      continue;
    }
    for (const auto& run : runs_in(d)) {
      std::error_code ec;  // one run given twice (`compare a a`, a run and its suite's folder)
      if (std::any_of(dirs.begin(), dirs.end(), [&](const std::filesystem::path& seen) {
            return std::filesystem::equivalent(seen, run, ec);
          })) {
        fmt::print(stderr, "fedpar compare: leaving out {}: given already\n", run.string());
        continue;
      }
      if (is_train_folder(run)) {
        if (o.metric == "train-loss")  // its epochs' train_loss is the steps', not the model's
          fmt::print(stderr,
                     "fedpar compare: leaving out {}: fedpar train records the loss of its steps "
                     "along each epoch, not its model's on the training set\n",
                     run.string());
        else if (o.metric == "client-worst10")
          fmt::print(stderr, "fedpar compare: leaving out {}: fedpar train has no clients\n",
                     run.string());
        else
          references.push_back(read_reference(run, o.metric));
        continue;
      }
      check_run_folder(run);
      if (read_curves(run).round.empty())
        if (const std::string ended = how_it_ended(run); !ended.empty()) {
          fmt::print(stderr, "fedpar compare: leaving out {}: {}, before any test evaluation\n",
                     run.string(), ended);
          continue;
        }
      dirs.push_back(run);
    }
  }
  if (dirs.empty())
    throw Error(
        "fedpar compare needs a distributed run's folder (fedpar run, fedpar server, a suite's "
        "runs/) beside a `fedpar train` folder, which it shows as the centralized baseline");
  // labels unique over the runs and the baselines together
  std::vector<std::filesystem::path> all = dirs;
  for (const Reference& r : references) all.push_back(r.dir);
  const auto labels = labels_of(all);
  for (size_t i = 0; i < references.size(); ++i) references[i].label = labels[dirs.size() + i];
  std::vector<Compared> runs;
  std::vector<std::string> clocks;
  for (size_t i = 0; i < dirs.size(); ++i) {
    const RunCurves c = read_curves(dirs[i]);
    if (c.round.empty())
      throw Error(fmt::format(
          "{} has no evaluated test round (its eval_every is above its rounds, or it had no test "
          "set: compare keys its curves on the test evaluations; its README and plots give an "
          "eval_train run's training loss and an eval_clients run's clients' accuracy)",
          dirs[i].string()));
    if (o.metric == "train-loss" && c.train_round != c.round)
      throw Error(fmt::format(
          "{} has no global train loss: --metric train-loss needs runs with eval_train = true "
          "(its train_loss is the clients' steps', not the model's)",
          dirs[i].string()));
    if (o.metric == "client-worst10" && c.client_round != c.round)
      throw Error(fmt::format(
          "{} has no clients' accuracy: --metric client-worst10 needs runs with eval_clients = "
          "true (the model scored on each client's shard at the evaluated rounds)",
          dirs[i].string()));
    const std::string ended = how_it_ended(dirs[i]);  // its "final" is where it stopped
    runs.push_back({ended.empty() ? labels[i] : fmt::format("{} ({})", labels[i], ended), dirs[i],
                    x.column(c), metric.column(c), c.round, median_emd(dirs[i]), c.epsilon,
                    c.updates_asked, c.updates_lost});
    clocks.push_back(c.clock);
    // the server's link alone leaves out what a ring's (a pipeline's) workers send each other
    const double peer_mb = c.mb.back() - c.mb_up.back() - c.mb_down.back();
    if ((o.x == "bytes-up" || o.x == "bytes-down") && peer_mb > 0.01 * c.mb.back())
      runs.back().label += fmt::format(
          " (server link only: its workers sent each other {:.1f} MB; "
          "--x bytes counts them)",
          peer_mb);
  }
  // seconds of different clocks (a network's simulated time, the server's rounds) on one axis:
  // each run's label says which it is
  const bool mixed_clocks =
      o.x == "seconds" &&
      std::adjacent_find(clocks.begin(), clocks.end(), std::not_equal_to<>()) != clocks.end();
  if (mixed_clocks)
    for (size_t i = 0; i < runs.size(); ++i) runs[i].label += fmt::format(" ({} s)", clocks[i]);

  const std::string reached = higher_is_better ? "at or above" : "at or below";
  std::ostringstream table;
  const bool by_round = o.x == "round";  // the x columns would repeat the round columns
  std::vector<RunConfig> configs;
  for (const auto& d : dirs) configs.push_back(read_run_config(d));
  const DifferingSettings differs = runs.size() > 1
                                        ? differing_settings(configs)
                                        : DifferingSettings{.rows = {{}}, .unread = {""}};
  // a gradient round is one step of the global batch, a model round the clients' local training:
  // by round, such runs are not on one scale
  std::set<Regime> regimes;
  for (const RunConfig& r : configs)
    if (r.spec) regimes.insert(r.spec->regime);
  std::string notes =
      by_round && regimes.size() > 1
          ? "These runs' rounds are not alike: a round of the gradient regime is one step of the "
            "global batch, one of the async regime an update from each client applied as it "
            "comes, one of the model regime the clients' local training. `--x samples` puts them "
            "on one axis.\n"
          : "";
  // a loss target every run met at its first evaluation tells the runs apart in nothing (a
  // percent given for a loss: --target 90)
  if (o.target > 0 && std::all_of(runs.begin(), runs.end(), [&](const Compared& r) {
        return first_at(r.y, o.target, higher_is_better) == size_t(0);
      }))
    notes += fmt::format(
        "Every run was {} --target {} at its first evaluation: the target tells them apart in "
        "nothing{}.\n",
        reached, num(o.target),
        higher_is_better || o.target < 10  // a loss target of 10 or more: a percent meant
            ? ""
            : fmt::format(
                  " ({} is in the loss's own units, not a percent: the runs' "
                  "first evaluated {} ranged from {} to {})",
                  o.metric, o.metric,
                  num(std::ranges::min(runs, {}, [](const Compared& r) { return r.y.front(); })
                          .y.front()),
                  num(std::ranges::max(runs, {}, [](const Compared& r) {
                        return r.y.front();
                      }).y.front())));
  if (mixed_clocks) {
    const std::map<std::string, const char*> meaning = {
        {"simulated", "the simulated network's computed seconds, round by round"},
        {"emulated", "the rounds' wall time on the emulated links"},
        {"elapsed", "an async run's wall time since it started"},
        {"server",
         "the server's wait and aggregation (a master's loss too), round by round, on this "
         "machine"}};
    std::vector<std::string> said;
    for (const auto& clock : std::set<std::string>(clocks.begin(), clocks.end()))
      said.push_back(fmt::format("{} s: {}", clock, meaning.at(clock)));
    notes += fmt::format(
        "These runs' seconds are on different clocks ({}): compare times only between runs on "
        "the same one.\n",
        fmt::join(said, "; "));
  }
  std::vector<std::optional<RunSpec>> specs;
  for (const RunConfig& r : configs) specs.push_back(r.spec);
  if (o.x == "device-bytes") notes += process_devices_note(specs, labels);
  notes += test_set_note(specs) + same_model_note(dirs, labels) + same_curve_note(runs, dirs);
  if (o.metric == "accuracy") notes += test_size_note(runs, dirs);
  for (const Reference& r : references) notes += baseline_note(r, specs);
  const std::string common_note =
      differs.common.empty()
          ? ""
          : fmt::format(
                "The settings most runs share (of the runs that read each one): `{}`. A row's "
                "settings show where its run departs from these (compare.json's "
                "`settings_that_differ` gives each run's with these included).\n\n",
                differs.text(differs.common));
  const bool any_differ = differs.any();
  // partitions that differ in how non-IID they are say by how much (0: every client's labels
  // as the whole's; 2: disjoint)
  const auto emd_cell = [](const Compared& r) {
    return r.median_emd ? fmt::format("{:.3f}", *r.median_emd) : std::string("-");
  };
  const bool emds_differ = std::any_of(runs.begin(), runs.end(), [&](const Compared& r) {
    return emd_cell(r) != emd_cell(runs.front());
  });
  // DP-FedAvg's runs: what each one's accuracy cost in privacy
  std::vector<std::optional<double>> epsilons;
  std::vector<double> deltas;
  for (size_t i = 0; i < runs.size(); ++i) {
    epsilons.push_back(runs[i].epsilon);
    deltas.push_back(specs[i] ? specs[i]->privacy.delta : std::nan(""));  // its config unread
  }
  const EpsilonColumn privacy = epsilon_column(epsilons, deltas);
  const bool dp = !privacy.header.empty();
  // a run that lost updates (a client process gone, messages lost) averaged fewer clients than
  // it asked: said beside the others, whose cell is 0
  const bool lost =
      std::any_of(runs.begin(), runs.end(), [](const Compared& r) { return r.lost > 0; });
  if (lost)
    notes +=
        "Updates lost: of the updates the parameter server's rounds asked for, those that "
        "never reached the aggregate (a client process gone or dropped, a real deadline "
        "missed, a message lost or late on the simulated links): such a run's rounds "
        "averaged fewer clients than asked; its README says whose.\n";
  const auto lost_cell = [](const Compared& r) {
    return r.lost == 0
               ? std::string("0")
               : fmt::format("**{} of {}** ({:.0f}%)", r.lost, r.asked,
                             100.0 * double(r.lost) / double(std::max<uint64_t>(1, r.asked)));
  };
  table << fmt::format("| run |{}{}{}{} evaluations | final {} | best {} (round) |",
                       any_differ ? " settings that differ |" : "",
                       emds_differ ? " median EMD |" : "",
                       dp ? fmt::format(" {} |", privacy.header) : "",
                       lost ? " updates lost |" : "", o.metric, o.metric)
        << (by_round ? "" : fmt::format(" {} at the end |", x.unit))
        << (o.target > 0 ? fmt::format(" first evaluated round {} {}{} |", reached, num(o.target),
                                       percent_metric(o.metric) ? "%" : "")
                         : "")
        << (o.target > 0 && !by_round ? fmt::format(" {} then |", x.unit) : "")
        << "\n|---|---|---|---|" << (any_differ ? "---|" : "") << (emds_differ ? "---|" : "")
        << (dp ? "---|" : "") << (lost ? "---|" : "") << (by_round ? "" : "---|")
        << (o.target > 0 ? "---|" : "") << (o.target > 0 && !by_round ? "---|" : "") << "\n";
  nlohmann::json rows = nlohmann::json::array();
  // accuracies with two decimals, as the suites' tables write them
  const auto value = [&](double v) {
    return higher_is_better ? fmt::format("{:.2f}%", v) : num(v);
  };
  std::vector<SeedRun> seed_runs;  // the same values, for the groups of seeds below
  for (size_t i = 0; i < runs.size(); ++i) {
    const Compared& r = runs[i];
    const size_t b = best_index(r.y, higher_is_better);
    const auto best = r.y.begin() + std::ptrdiff_t(b);
    const std::optional<size_t> hit = first_at(r.y, o.target, higher_is_better);
    table << fmt::format("| {} |{}{}{}{} {} | {} | {} ({}) |", r.label,
                         !any_differ ? ""
                         : differs.departures(i).empty()
                             ? std::string(" as most |")
                             : fmt::format(" `{}` |", differs.departures(i)),
                         emds_differ ? fmt::format(" {} |", emd_cell(r)) : "",
                         dp ? fmt::format(" {} |", privacy.cells[i]) : "",
                         lost ? fmt::format(" {} |", lost_cell(r)) : "", r.y.size(),
                         value(r.y.back()), value(*best), int(r.round[b]))
          << (by_round ? "" : fmt::format(" {} |", num(r.x.back())));
    if (o.target > 0)
      // a run evaluated every E rounds may have got there up to E - 1 rounds before
      table << (hit ? fmt::format(" {}{} |", int(r.round[*hit]),
                                  specs[i] && specs[i]->eval_every > 1
                                      ? fmt::format(" (evaluated every {})", specs[i]->eval_every)
                                      : "")
                    : std::string(" not reached |"))
            << (by_round ? ""
                : hit    ? fmt::format(" {} |", num(r.x[*hit]))
                         : std::string(" - |"));
    table << "\n";
    nlohmann::json row = {{"run", r.label}, {"folder", r.dir.string()}, {"final", r.y.back()},
                          {"best", *best},  {"best_round", r.round[b]}, {"x_at_end", r.x.back()}};
    if (any_differ) row["settings_that_differ"] = differs.full(i);
    if (r.median_emd) row["median_emd"] = *r.median_emd;
    if (r.epsilon)
      row["epsilon"] = *r.epsilon,
      row["delta"] = std::isnan(deltas[i]) ? nlohmann::json() : nlohmann::json(deltas[i]);
    if (o.target > 0)
      row["target_round"] = hit ? nlohmann::json(r.round[*hit]) : nlohmann::json(nullptr);
    row["updates_asked"] = r.asked;
    row["updates_lost"] = r.lost;
    rows.push_back(std::move(row));
    seed_runs.push_back(
        {.label = r.label,
         .settings = differs.unread[i].empty() ? std::optional(differs.rows[i]) : std::nullopt,
         .final = r.y.back(),
         .best = *best,
         .target_round = hit ? std::optional(r.round[*hit]) : std::nullopt});
  }
  const SeedGroups seeds = seed_groups(seed_runs, o.metric, o.target, value);
  const std::string seeds_md =
      seeds.table.empty()
          ? ""
          : "Runs alike but for their seed, together (the final value's sample standard "
            "deviation over the seeds; compare.json's `seed_groups`):\n\n" +
                seeds.table + "\n";
  // no rounds, bytes or simulated time: a line; by samples, its epochs' curve
  const auto samples_after = [&](const Reference& r, size_t k) {
    return o.x == "samples" && r.train_samples > 0
               ? fmt::format(" {} |", num(double(r.epoch[k]) * r.train_samples))
               : std::string(" - |");
  };
  for (const Reference& r : references) {
    const size_t b = best_index(r.y, higher_is_better);
    table << fmt::format(
                 "| {} (centralized, `fedpar train`) |{}{}{}{} {} epoch(s) | {} | {} (epoch "
                 "{}) |",
                 r.shown(), any_differ ? " - |" : "", emds_differ ? " - |" : "", dp ? " - |" : "",
                 lost ? " - |" : "", r.epoch.back(), value(r.y.back()), value(r.y[b]), r.epoch[b])
          << (by_round ? "" : samples_after(r, r.y.size() - 1));
    if (o.target > 0) {  // the first epoch at the target
      const auto hit = first_at(r.y, o.target, higher_is_better);
      table << (hit ? fmt::format(" epoch {} |", r.epoch[*hit]) : std::string(" not reached |"))
            << (by_round ? ""
                : hit    ? samples_after(r, *hit)
                         : std::string(" - |"));
    }
    table << "\n";
    rows.push_back({{"run", r.label},
                    {"folder", r.dir.string()},
                    {"centralized", true},
                    {"final", r.y.back()},
                    {"best", r.y[b]},
                    {"best_epoch", r.epoch[b]}});
    if (!r.ended.empty()) rows.back()["ended"] = r.ended;
  }

  ResultsDir out(o.out.parent_path().empty() ? "." : o.out.parent_path(),
                 o.out.filename().string());
  LinePlot plot{
      .title = fmt::format("{} per {}", metric.name, o.x), .xlabel = x.name, .ylabel = metric.name};
  for (const auto& r : runs) plot.series.push_back({r.label, r.x, r.y, {}, {}});
  {  // a loss that spans orders of magnitude (a diverging run's) flattens the rest on a linear axis
    double lo = INFINITY, hi = 0;
    for (const auto& r : runs)
      for (double v : r.y)
        if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    plot.log_y = !higher_is_better && hi > 100 * lo;
  }
  double x_lo = runs[0].x.front(), x_hi = runs[0].x.back();
  for (const auto& r : runs) x_lo = std::min(x_lo, r.x.front()), x_hi = std::max(x_hi, r.x.back());
  {  // runs whose samples, bytes or seconds end orders of magnitude apart (mini-batch SGD beside
     // full-batch): on a linear axis the shorter ones are a spike at the left edge
    double end_lo = INFINITY, end_hi = 0;
    for (const auto& r : runs)
      end_lo = std::min(end_lo, r.x.back()), end_hi = std::max(end_hi, r.x.back());
    // a baseline's point at 0 (an epoch-0 evaluation by samples) would drop off a log axis
    const bool reference_at_zero =
        o.x == "samples" && std::ranges::any_of(references, [](const Reference& r) {
          return r.train_samples > 0 && std::ranges::any_of(r.epoch, [](auto e) { return e <= 0; });
        });
    plot.log_x = o.x != "round" && x_lo > 0 && !reference_at_zero && end_hi > 30 * end_lo;
    if (plot.log_x)
      notes += fmt::format(
          "The plot's {} axis is logarithmic: the runs ended {:.0f}x apart on it ({} to {}).\n",
          x.unit, end_hi / end_lo, num(end_lo), num(end_hi));
  }
  for (const auto& r : references) {
    if (o.x == "samples" && r.train_samples > 0) {  // its epochs' samples: a curve of its own
      std::vector<double> xs;
      for (size_t k = 0; k < r.y.size(); ++k) xs.push_back(double(r.epoch[k]) * r.train_samples);
      plot.series.push_back({r.shown() + " (centralized, by epoch)", xs, r.y, {}, {}});
      continue;
    }
    plot.series.push_back(
        {r.shown() + " (centralized, final)", {x_lo, x_hi}, {r.y.back(), r.y.back()}, {}, {}});
  }
  const std::string svg = fmt::format("{}-vs-{}.svg", o.metric, o.x);
  std::string why;
  const bool drawn = draw_line_plot(out.path() / svg, plot, &why);
  std::ostringstream report;
  // centralized references are runs compared too: "3 runs" beside 4 folders read as one lost
  const size_t compared = runs.size() + references.size();
  report << fmt::format("# {}: {} per {}\n\nCommand: `{}`\n\n",
                        compared == 1 ? "1 run" : fmt::format("{} runs compared", compared),
                        metric.name, o.x, command)
         << "Folders: ";
  for (size_t i = 0; i < runs.size(); ++i)
    report << (i ? ", " : "") << fmt::format("`{}` ({})", runs[i].dir.string(), runs[i].label);
  for (const Reference& r : references)
    report << fmt::format(", `{}` ({}, centralized)", r.dir.string(), r.label);
  report << ".\n\n"
         << (references.empty() ? ""
             : o.x == "samples"
                 ? "A `fedpar train` folder is the centralized baseline, drawn by the samples "
                   "of its epochs (each epoch its training set's).\n\n"
                 : "A `fedpar train` folder is the centralized baseline: trained by epochs, "
                   "not rounds, and sending nothing, it is drawn as a line at its final "
                   "value.\n\n")
         << (by_round ? "" : fmt::format("The x axis, {}: {}.\n\n", x.unit, x.name))
         << (emds_differ ? "Median EMD: over each run's clients, the L1 distance of a client's "
                           "label distribution to the whole's (0: IID; 2: disjoint labels; "
                           "docs/partitioning.md).\n\n"
                         : "")
         << common_note << table.str() << "\n"
         << seeds_md << (notes.empty() ? "" : notes + "\n")
         << (drawn ? fmt::format("![{} per {}]({})\n", metric.name, o.x, svg)
                   : fmt::format("(no plot: {})\n", why));
  out.write_text("report.md", report.str());
  out.write_json("compare.json", {{"command", command},
                                  {"metric", o.metric},
                                  {"x", o.x},
                                  {"target", o.target > 0 ? nlohmann::json(o.target)
                                                          : nlohmann::json()},  // none asked
                                  {"runs", rows},
                                  {"seed_groups", seeds.json}});
  const auto path = out.commit();
  if (path.filename() != o.out.filename())  // the command line names the folder it did not get
    fmt::print(stderr, "fedpar compare: {} exists, so the report went to {}\n", o.out.string(),
               path.string());
  fmt::print("{}{}\n{}{}report: {}\n", common_note, table.str(), seeds_md, notes,
             (path / "report.md").string());
  return 0;
}

}  // namespace fedpar
