// Reading a run's results folder back; see run_metrics.h.
#include "experiments/run_metrics.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/median.h"
#include "core/safetensors.h"
#include "server/diagnostics.h"

namespace fedpar {
namespace {

std::vector<nlohmann::json> read_rounds(const std::filesystem::path& dir) {
  std::ifstream in(dir / "metrics.jsonl");
  if (!in) throw Error(fmt::format("no metrics.jsonl in {}", dir.string()));
  std::vector<nlohmann::json> rounds;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.value("kind", "") == "round") rounds.push_back(std::move(j));
  }
  return rounds;
}

// A safetensors snapshot as one flat vector (tensors in name order: the same in both runs).
std::vector<float> flat(const std::filesystem::path& file) {
  std::vector<float> v;
  for (const auto& [name, t] : load_safetensors(file).tensors) v.insert(v.end(), t.values.begin(), t.values.end());
  return v;
}

}  // namespace

RunCurves read_curves(const std::filesystem::path& dir) {
  RunCurves c;
  double samples = 0, diagnostic = 0, seconds = 0;
  const auto rounds = read_rounds(dir);
  for (const auto& j : rounds) {
    for (const auto& cl : j["clients"]) samples += cl.value("samples_processed", 0.0);
    diagnostic += j.value("diagnostic_bytes_up", 0.0);
    seconds += j.value("wait_seconds", 0.0) + j.value("aggregate_seconds", 0.0);
    if (!j.contains("test_accuracy")) continue;
    c.round.push_back(j["round"].get<double>());
    c.accuracy.push_back(100 * j["test_accuracy"].get<double>());
    c.test_loss.push_back(j.value("test_loss", 0.0));
    const double bytes = j["bytes_sent_total"].get<double>() + j["bytes_received_total"].get<double>();
    c.mb.push_back((bytes - diagnostic) / 1e6);
    c.samples.push_back(samples);
    c.cosine.push_back(j.value("mean_pairwise_cosine", 0.0));
    if (j.contains("update_drift")) c.drift.push_back(j["update_drift"].get<double>());
  }
  c.round_seconds = rounds.empty() ? 0 : seconds / double(rounds.size());
  return c;
}

RunAccounting read_accounting(const std::filesystem::path& dir) {
  std::vector<double> clients, param, act, down, up, compute, broadcast, exchange, aggregate;
  for (const auto& j : read_rounds(dir)) {
    const auto& cls = j["clients"];
    if (cls.empty()) continue;
    clients.push_back(double(cls.size()));
    const double diagnostic_per_client = j.value("diagnostic_bytes_up", 0.0) / double(cls.size());
    std::map<int, double> per_process;  // compute seconds of the clients each process hosts
    double p = 0, a = 0, u = 0;
    for (const auto& c : cls) {
      p = std::max(p, c.value("parameter_bytes", 0.0));
      a = std::max(a, c.value("activation_bytes", 0.0));
      u = std::max(u, c.value("bytes_up", 0.0) - diagnostic_per_client);
      per_process[c.value("process", 0)] += c.value("compute_seconds", 0.0);
    }
    double slowest = 0;
    for (const auto& [proc, secs] : per_process) slowest = std::max(slowest, secs);
    param.push_back(p / 1e6);
    act.push_back(a / 1e6);
    up.push_back(u / 1e6);
    down.push_back(j.value("bytes_down_per_task", 0.0) / 1e6);
    const double b = j.value("broadcast_seconds", 0.0), wait = j.value("wait_seconds", 0.0);
    compute.push_back(1e3 * slowest);
    broadcast.push_back(1e3 * b);
    exchange.push_back(1e3 * std::max(0.0, wait - b - slowest));
    aggregate.push_back(1e3 * j.value("aggregate_seconds", 0.0));
  }
  return {median(clients), median(param), median(act), median(down), median(up),
          median(compute), median(broadcast), median(exchange), median(aggregate)};
}

Divergence weight_divergence(const std::filesystem::path& run_dir, const std::filesystem::path& ref_dir) {
  Divergence d;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(run_dir / "params", ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const auto ref = ref_dir / "params" / f.filename();
    if (!std::filesystem::exists(ref)) continue;
    d.round.push_back(std::stod(f.stem().string().substr(std::string("round-").size())));
    d.relative.push_back(distance(flat(f), flat(ref)).relative);
  }
  return d;
}

}  // namespace fedpar
