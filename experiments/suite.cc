// run_suite; see suite.h.
#include "experiments/suite.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/dataset.h"
#include "core/results_dir.h"
#include "experiments/local_run.h"
#include "experiments/plot.h"
#include "partitioners/manifest.h"
#include "partitioners/stats.h"
#include "server/run_config.h"

namespace fedpar {
namespace {

constexpr const char* kSection = R"(
[suite]
title = ""
what = ""                # one paragraph: what the suite compares
runs = [""]              # "label | key=value key=value ..." (the "" default types the list)
smoke = [""]             # overrides for --smoke ("key=value"; suite.* keys too), before each run's own
target_accuracy = 0.0    # > 0 (percent): the table gives the rounds each run took to reach it
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
  throw Error(fmt::format("no suite '{}' (suites: {})", name, fmt::join(suite_names(), ", ")));
}

struct RunSpec {
  std::string label;
  std::vector<std::string> sets;
};

RunSpec parse_run(const std::string& text) {
  const size_t bar = text.find('|');
  if (bar == std::string::npos) throw Error(fmt::format("suite.runs: '{}' is not \"label | key=value ...\"", text));
  RunSpec r;
  std::istringstream label(text.substr(0, bar)), sets(text.substr(bar + 1));
  label >> r.label;
  for (std::string kv; sets >> kv;) r.sets.push_back(kv);
  if (r.label.empty()) throw Error(fmt::format("suite.runs: '{}' has no label", text));
  return r;
}

// What one run's results folder says, per round.
struct RunCurves {
  std::vector<double> round, accuracy, bytes, cosine, train_loss;
  double seconds = 0;
};

RunCurves read_curves(const std::filesystem::path& dir) {
  RunCurves c;
  std::ifstream in(dir / "metrics.jsonl");
  double bytes = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    bytes = double(j["bytes_sent_total"].get<uint64_t>() + j["bytes_received_total"].get<uint64_t>());
    c.seconds += j.value("wait_seconds", 0.0) + j.value("aggregate_seconds", 0.0);
    if (!j.contains("test_accuracy")) continue;
    c.round.push_back(j["round"].get<double>());
    c.accuracy.push_back(100 * j["test_accuracy"].get<double>());
    c.bytes.push_back(bytes / 1e6);
    c.cosine.push_back(j.value("mean_pairwise_cosine", 0.0));
    c.train_loss.push_back(j.value("train_loss", 0.0));
  }
  return c;
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

int run_suite(const SuiteOptions& o) {
  const auto file = find_suite(o.name);
  Config cfg = make_run_config(kSection);
  cfg.merge_file(file);
  const std::string name = file.stem().string() + (o.smoke ? "-smoke" : "");
  std::vector<RunSpec> runs;
  for (const auto& r : cfg.get_string_list("suite.runs"))
    if (!r.empty()) runs.push_back(parse_run(r));
  std::vector<std::string> smoke;  // run overrides; "suite.*" ones change the suite itself
  for (const auto& s : cfg.get_string_list("suite.smoke")) {
    if (s.empty()) continue;
    if (o.smoke && s.starts_with("suite.")) cfg.set_all({s});
    else smoke.push_back(s);
  }
  if (runs.empty()) throw Error(fmt::format("{}: suite.runs is empty", file.string()));
  // Validate every run's config before starting any.
  std::vector<Config> configs;
  for (const auto& r : runs) {
    Config c = run_config_without(cfg, "suite");
    if (o.smoke) c.set_all(smoke);
    c.set_all(r.sets);
    c.set_all(o.sets);
    c.set("name", r.label);
    c.set("eval_every", "1");
    resolve_run_setup(c);
    configs.push_back(std::move(c));
  }

  const auto out_path = o.out.empty() ? std::filesystem::path("results") / name : o.out;
  ResultsDir out(out_path.parent_path().empty() ? "." : out_path.parent_path(), out_path.filename().string());
  const auto runs_dir = std::filesystem::absolute(out.path() / "runs");
  std::filesystem::create_directories(runs_dir);
  std::filesystem::create_directories(out.path() / "plots");
  out.write_text("config.resolved.toml", cfg.to_toml());
  const auto t0 = std::chrono::steady_clock::now();

  nlohmann::json rows = nlohmann::json::array();
  LinePlot by_round{cfg.get_string("suite.title") + ": test accuracy per round", "round", "test accuracy (%)"};
  LinePlot by_bytes{cfg.get_string("suite.title") + ": test accuracy per MB communicated",
                    "MB sent + received at the server (cumulative)", "test accuracy (%)"};
  LinePlot by_cosine{cfg.get_string("suite.title") + ": agreement of client updates",
                     "round", "mean pairwise cosine of client updates"};
  const double target = cfg.get_float("suite.target_accuracy");
  std::ostringstream table;
  table << "| run | overrides | clients | median EMD | final accuracy | best accuracy | "
        << (target > 0 ? fmt::format("rounds to {}% | ", target) : "")
        << "MB communicated | round time (s) |\n|---|---|---|---|---|---|---|---|"
        << (target > 0 ? "---|" : "") << "\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    Config c = configs[i];
    c.set("results_dir", runs_dir.string());
    fmt::print(stderr, "suite {}: run {}/{} '{}' ...", name, i + 1, runs.size(), runs[i].label);
    const auto ts = std::chrono::steady_clock::now();
    const int rc = run_locally(c, {.quiet = true});
    if (rc != 0) {
      fmt::print(stderr, "\nfedpar suite: run '{}' failed (exit {}); nothing is kept\n", runs[i].label, rc);
      return rc;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
    fmt::print(stderr, " {:.1f} s\n", secs);
    const auto dir = runs_dir / runs[i].label;
    const RunCurves curves = read_curves(dir);
    const auto manifest_json = nlohmann::json::parse(std::ifstream(dir / "manifest.json"));
    size_t bound = 0;  // the validation needs a dataset size; the largest index bounds it
    for (const auto& cl : manifest_json["clients"])
      for (const auto& ix : cl["indices"]) bound = std::max(bound, ix.get<size_t>() + 1);
    const PartitionStats st = partition_stats(manifest_from_json(manifest_json, bound));
    const double final_acc = curves.accuracy.empty() ? 0 : curves.accuracy.back();
    double best = 0;
    for (double a : curves.accuracy) best = std::max(best, a);
    std::string overrides;
    for (const auto& s : runs[i].sets) overrides += (overrides.empty() ? "" : " ") + s;
    int to_target = 0;  // first round at or above the target; 0 = not reached
    for (size_t k = 0; k < curves.accuracy.size() && target > 0 && !to_target; ++k)
      if (curves.accuracy[k] >= target) to_target = int(curves.round[k]);
    const std::string target_cell =
        target > 0 ? (to_target ? fmt::format("{} | ", to_target)
                                : fmt::format("not in {} | ", curves.round.empty() ? 0 : int(curves.round.back())))
                   : "";
    table << fmt::format("| {} | `{}` | {} | {:.3f} | {:.2f}% | {:.2f}% | {}{:.1f} | {:.2f} |\n", runs[i].label,
                         overrides, st.clients.size(), st.emd.median, final_acc, best, target_cell,
                         curves.bytes.empty() ? 0.0 : curves.bytes.back(),
                         curves.round.empty() ? 0.0 : curves.seconds / double(curves.round.size()));
    rows.push_back({{"label", runs[i].label}, {"overrides", runs[i].sets}, {"median_emd", st.emd.median},
                    {"final_accuracy", final_acc}, {"best_accuracy", best}, {"accuracy", curves.accuracy},
                    {"rounds_to_target", to_target},
                    {"mb_communicated", curves.bytes}, {"mean_pairwise_cosine", curves.cosine},
                    {"seconds", secs}, {"results", "runs/" + runs[i].label}});
    by_round.series.push_back({runs[i].label, curves.round, curves.accuracy});
    by_bytes.series.push_back({runs[i].label, curves.bytes, curves.accuracy});
    by_cosine.series.push_back({runs[i].label, curves.round, curves.cosine});
  }

  std::ostringstream plots;
  for (const auto& [file_name, plot] : {std::pair{"accuracy-vs-round.svg", &by_round},
                                        std::pair{"accuracy-vs-bytes.svg", &by_bytes},
                                        std::pair{"update-cosine-vs-round.svg", &by_cosine}}) {
    std::string why;
    if (draw_line_plot(out.path() / "plots" / file_name, *plot, &why))
      plots << fmt::format("![{}](plots/{})\n\n", plot->title, file_name);
    else
      plots << fmt::format("(plot {} not drawn: {})\n\n", file_name, why);
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string command = fmt::format("fedpar suite {}{}", file.stem().string(), o.smoke ? " --smoke" : "");
  for (const auto& s : o.sets) command += " --set " + s;
  const std::string report = fmt::format(
      "# {}{}\n\n{}\n\nCommand: `{}` ({:.0f} s; resolved config: config.resolved.toml; each run's "
      "results folder is under runs/). Accuracy is on the test set after every round; MB counts "
      "every byte the server sent and received at its socket; median EMD is the partition's label "
      "skew (docs/partitioning.md); round time is the server's wait + aggregation per round.\n\n{}\n{}",
      cfg.get_string("suite.title"), o.smoke ? " (smoke size)" : "", cfg.get_string("suite.what"),
      command, total, table.str(), plots.str());
  out.write_text("report.md", report);
  out.write_json("suite.json", {{"suite", file.stem().string()}, {"smoke", o.smoke}, {"runs", rows},
                                {"seconds", total}, {"command", command}});
  const auto path = out.commit();
  fmt::print("{}\nreport: {}\n", table.str(), (path / "report.md").string());
  return 0;
}

}  // namespace fedpar
