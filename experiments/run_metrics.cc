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
    if (j.contains("samples_processed"))  // topologies and async log the round's total
      samples += j["samples_processed"].get<double>();
    for (const auto& cl : j.value("clients", nlohmann::json::array())) samples += cl.value("samples_processed", 0.0);
    diagnostic += j.value("diagnostic_bytes_up", 0.0);
    seconds += j.value("wait_seconds", 0.0) + j.value("aggregate_seconds", 0.0);
    if (!j.contains("test_accuracy")) continue;
    c.seconds.push_back(j.value("elapsed_seconds", seconds));
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
    const auto cls = j.value("clients", nlohmann::json::array());
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

RunTraffic read_traffic(const std::filesystem::path& dir) {
  RunTraffic t;
  std::vector<double> step, server_sent, server_received, worker_sent, worker_received, allreduce, busbw;
  for (const auto& j : read_rounds(dir)) {
    t.topology = j.value("topology", std::string("-"));  // runs logged before the field
    step.push_back(1e3 * (j.value("wait_seconds", 0.0) + j.value("aggregate_seconds", 0.0)));
    // Per process: what the server sent it and got from it, plus (allreduce) its ring traffic.
    const auto procs = j.value("processes", nlohmann::json::array());
    const auto workers = j.value("workers", nlohmann::json::array());
    t.workers = int(procs.size());
    double ss = 0, sr = 0, ws = 0, wr = 0, slowest_allreduce = 0, model_bytes = 0;
    for (size_t i = 0; i < procs.size(); ++i) {
      const double down = procs[i].value("bytes_down", 0.0), up = procs[i].value("bytes_up", 0.0);
      ss += down, sr += up;
      double ring_sent = 0, ring_received = 0;
      if (i < workers.size()) {
        ring_sent = workers[i].value("ring_bytes_sent", 0.0);
        ring_received = workers[i].value("ring_bytes_received", 0.0);
        slowest_allreduce = std::max(slowest_allreduce, workers[i].value("allreduce_seconds", 0.0));
        model_bytes = workers[i].value("parameter_bytes", 0.0) / 2;  // weights + gradient
      }
      ws = std::max(ws, up + ring_sent);
      wr = std::max(wr, down + ring_received);
    }
    server_sent.push_back(ss / 1e6), server_received.push_back(sr / 1e6);
    worker_sent.push_back(ws / 1e6), worker_received.push_back(wr / 1e6);
    if (slowest_allreduce > 0 && t.workers > 1) {
      allreduce.push_back(1e3 * slowest_allreduce);
      busbw.push_back(model_bytes / slowest_allreduce / 1e9 * 2.0 * (t.workers - 1) / t.workers);
    }
  }
  t.step_ms = median(step);
  t.server_mb_sent = median(server_sent), t.server_mb_received = median(server_received);
  t.worker_mb_sent = median(worker_sent), t.worker_mb_received = median(worker_received);
  t.allreduce_ms = median(allreduce), t.busbw_gbps = median(busbw);
  return t;
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
