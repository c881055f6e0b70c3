// The topologies suite's scaling section; see topology_scaling_report.h.
#include "experiments/topology_scaling_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "core/check.h"
#include "core/median.h"
#include "core/network.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "experiments/run_metrics.h"

namespace fedpar {
namespace {

const std::vector<std::string> kTopologies = {"parameter-server", "master", "allreduce"};

bool scaling_spec(const RunSpec& s) {
  return s.regime != Regime::kAsync && s.network.mode == NetworkMode::kSimulated &&
         (s.topology == Topology::kParameterServer || s.topology == Topology::kMaster ||
          s.topology == Topology::kAllReduce);
}

}  // namespace

bool is_scaling_run(const std::filesystem::path& dir) { return scaling_spec(read_run_spec(dir)); }

ScalingRun read_scaling_run(const std::filesystem::path& dir, const std::string& label) {
  const RunSpec s = read_run_spec(dir);
  if (!scaling_spec(s))
    throw Error(fmt::format(
        "run '{}': the topology scaling section compares synchronous parameter-server, master and "
        "allreduce runs on network.mode = \"simulated\"",
        label));
  ScalingRun r{.label = label, .model = model_key(s.model), .workers = s.processes};
  constexpr double kBytesPerMB = 1e6;
  std::vector<double> step, server, worker;
  for (const RoundRecord& rec : steady_rounds(read_round_records(dir))) {
    if (!rec.simulated_seconds)
      throw Error(fmt::format("run '{}': round {} has no simulated_seconds", label, rec.round));
    r.topology = rec.topology;
    step.push_back(1e3 * *rec.simulated_seconds);
    server.push_back(double(rec.server_bytes_sent + rec.server_bytes_received -
                            rec.diagnostic_bytes_up.value_or(0)) /
                     kBytesPerMB);
    double busiest = 0;  // a ring's sends (its reports to the server are the server's bytes)
    for (const WorkerRecord& w : rec.workers.value_or(std::vector<WorkerRecord>{}))
      busiest = std::max(busiest, double(w.ring_bytes_sent));
    worker.push_back(busiest / kBytesPerMB);
  }
  r.step_ms = median(step);
  r.server_mb = median(server);
  r.worker_mb_sent = median(worker);
  return r;
}

TopologyScalingSection topology_scaling_section(const std::vector<ScalingRun>& runs, bool subset) {
  TopologyScalingSection out;
  // model -> topology -> N -> run
  std::map<std::string, std::map<std::string, std::map<int, const ScalingRun*>>> by;
  std::vector<std::string> models;
  for (const auto& r : runs) {
    if (!by.count(r.model)) models.push_back(r.model);
    by[r.model][r.topology][r.workers] = &r;
  }
  std::ostringstream md;
  md << "### Step time by workers on the simulated network\n\n"
        "Medians over the rounds after the first, without an evaluation and without the model "
        "sent to the server (as the traffic table's), of each step's simulated seconds "
        "(docs/network.md: the bytes each "
        "message carried over its links, the compute each worker measured, the server's "
        "aggregation), with the server's own link shared by every message to and from it "
        "(`network.server`). The slow-down is the step at the largest N over the step at the "
        "smallest; the bytes' growth is the same ratio of the server's bytes per step "
        "(parameter-server, master) or of the busiest worker's ring sends (allreduce).\n\n";
  out.json = nlohmann::json::array();
  size_t checked = 0;  // claims
  for (const auto& model : models) {
    std::vector<int> ns;
    for (const auto& [topology, per_n] : by[model])
      for (const auto& [n, r] : per_n)
        if (std::ranges::find(ns, n) == ns.end()) ns.push_back(n);
    std::ranges::sort(ns);
    if (ns.size() < 2) continue;
    const int lo = ns.front(), hi = ns.back();
    md << fmt::format("**{}**\n\n| topology |", model);
    for (int n : ns) md << fmt::format(" step at N = {} (ms) |", n);
    md << " slow-down | bytes' growth |\n|---|";
    for (size_t i = 0; i < ns.size() + 2; ++i) md << "---|";
    md << "\n";
    std::map<std::string, double> slow_down, step_hi, growth;
    for (const auto& topology : kTopologies) {
      const auto it = by[model].find(topology);
      if (it == by[model].end() || !it->second.count(lo) || !it->second.count(hi)) continue;
      const auto& per_n = it->second;
      md << "| " << topology << " |";
      for (int n : ns)
        md << (per_n.count(n) ? fmt::format(" {:.2f} |", per_n.at(n)->step_ms) : " - |");
      const ScalingRun &a = *per_n.at(lo), &b = *per_n.at(hi);
      const bool ring = topology == "allreduce";
      const double bytes_lo = ring ? a.worker_mb_sent : a.server_mb,
                   bytes_hi = ring ? b.worker_mb_sent : b.server_mb;
      if (!(a.step_ms > 0 && b.step_ms > 0 && bytes_lo > 0 && bytes_hi > 0)) {
        md << " - | - |\n";
        out.failed.push_back(fmt::format("{}: {} measured no step time or no bytes at N = {} or {}",
                                         model, topology, lo, hi));
        continue;
      }
      const double bytes = bytes_hi / bytes_lo;
      growth[topology] = bytes;
      slow_down[topology] = b.step_ms / a.step_ms;
      step_hi[topology] = b.step_ms;
      md << fmt::format(" {:.2f}x | {:.2f}x |\n", slow_down[topology], bytes);
      out.json.push_back({{"model", model},
                          {"topology", topology},
                          {"workers", ns},
                          {"slow_down", slow_down[topology]},
                          {"bytes_growth", bytes}});
      for (int n : ns)
        if (per_n.count(n)) out.json.back()["step_ms"][std::to_string(n)] = per_n.at(n)->step_ms;
    }
    md << "\n";
    // The claims, on what this model's runs measured.
    std::vector<std::pair<std::string, bool>> claims;
    for (const char* t : {"parameter-server", "master"})
      if (slow_down.count(t))
        claims.emplace_back(
            fmt::format("{}: the server's link carries {:.2f}x the bytes at N = {} as at N = {}; "
                        "the step slows down at least {:.2f}x ({:.2f}x)",
                        t, growth[t], hi, lo, 0.75 * growth[t], slow_down[t]),
            slow_down[t] >= 0.75 * growth[t]);
    if (slow_down.count("allreduce") && slow_down.count("parameter-server"))
      claims.emplace_back(
          fmt::format("allreduce slows down less than the parameter server ({:.2f}x against "
                      "{:.2f}x)",
                      slow_down["allreduce"], slow_down["parameter-server"]),
          slow_down["allreduce"] < slow_down["parameter-server"]);
    if (step_hi.count("allreduce") && step_hi.size() > 1) {
      const auto fastest =
          std::ranges::min_element(step_hi, {}, [](const auto& kv) { return kv.second; });
      claims.emplace_back(fmt::format("at N = {} the ring's step is the shortest ({:.2f} ms; the "
                                      "shortest: {}, {:.2f} ms)",
                                      hi, step_hi["allreduce"], fastest->first, fastest->second),
                          fastest->first == "allreduce");
    }
    for (const auto& [claim, held] : claims) {
      md << fmt::format("- {}: {}\n", held ? "holds" : "FAILED", claim);
      if (!held) out.failed.push_back(fmt::format("{}: {}", model, claim));
      ++checked;
    }
    md << "\n";
  }
  const std::string nothing =
      "no model has parameter-server, master or allreduce runs at two numbers of workers to "
      "compare";
  if (checked == 0 && subset) {  // the runs suite.only left out are what it compares
    out.markdown =
        "### Step time by workers on the simulated network\n\n(`suite.only`: " + nothing +
        " among the runs it picked.)\n";
    return out;
  }
  if (checked == 0) out.failed.push_back(nothing);  // a section asked for must show something
  out.markdown = md.str();
  return out;
}

}  // namespace fedpar
