// Reading a run's results folder back; see run_metrics.h.
#include "experiments/run_metrics.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/check.h"
#include "core/client_spread.h"
#include "core/median.h"
#include "core/run_records.h"
#include "core/safetensors.h"
#include "server/diagnostics.h"

namespace fedpar {
namespace {

// A safetensors snapshot as one flat vector (tensors in name order: the same in both runs).
std::vector<float> flat(const std::filesystem::path& file) {
  std::vector<float> v;
  for (const auto& [name, t] : load_safetensors(file).tensors)
    v.insert(v.end(), t.values.begin(), t.values.end());
  return v;
}

// A field the record's kind always carries (per-client rounds: their byte and time split;
// evaluated rounds: the test loss): its absence is a broken file, not a zero.
template <typename T>
T need(const std::optional<T>& v, const char* key, const RoundRecord& r,
       const std::filesystem::path& dir) {
  if (!v)
    throw Error(fmt::format("{}: round {} ({}) has no '{}'", (dir / "metrics.jsonl").string(),
                            r.round, r.topology, key));
  return *v;
}

}  // namespace

std::string model_key(const ModelSpec& m) {
  return m.hidden.empty() ? m.name : fmt::format("{} {}", m.name, fmt::join(m.hidden, ","));
}

RunSpec read_run_spec(const std::filesystem::path& dir) {
  const auto file = dir / "config.resolved.toml";
  std::ifstream f(file);
  return run_spec_from_toml(std::string(std::istreambuf_iterator<char>(f), {}), file.string());
}

namespace {

// A delta downlink keeps every client's model in step, so each round's TASK reaches every
// client of every process still in the run, asked or not: with one device per client, each
// downloads it. The clients each process hosts (summary.json's hosts, in HELLO order), or
// empty where the run used no delta downlink or left no summary (then the asked are counted).
std::vector<uint64_t> delta_receivers(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir / "summary.json") ||
      !read_run_spec(dir).compression.downlink_delta)
    return {};
  std::vector<uint64_t> hosted;
  for (const HostRecord& h : read_run_summary(dir).hosts) hosted.push_back(h.clients.size());
  return hosted;
}

}  // namespace

RunCurves read_curves(const std::filesystem::path& dir) {
  RunCurves c;
  double samples = 0, diagnostic = 0, peer = 0, seconds = 0, clock_seconds = 0, device = 0;
  const auto rounds = read_round_records(dir);
  const std::vector<uint64_t> delta_hosted = delta_receivers(dir);
  for (const RoundRecord& j : rounds) {
    double round_peer = 0;
    for (const WorkerRecord& w : j.workers.value_or(std::vector<WorkerRecord>{}))
      round_peer += double(w.ring_bytes_sent + w.replica_bytes_sent.value_or(0));
    const double round_diagnostic =
        double(j.diagnostic_bytes_up.value_or(0));  // drift, simulated timings
    if (j.bytes_down_per_task && j.clients) {
      uint64_t asked = 0;  // the clients whose process got a TASK (not those of lost processes)
      for (const ProcessRecord& p : j.processes)
        asked += delta_hosted.size() <= size_t(p.process) ? p.tasks
                 : p.bytes_down > 0 ? delta_hosted[size_t(p.process)]  // it got the TASK
                                    : 0;
      device += double(asked) * double(*j.bytes_down_per_task);
      for (const ClientRecord& cl : *j.clients) device += double(cl.bytes_up);
      device -= round_diagnostic;
    } else {
      device +=
          double(j.server_bytes_sent + j.server_bytes_received) - round_diagnostic + round_peer;
    }
    if (j.samples_processed)
      samples += *j.samples_processed;  // topologies and async log the round's total
    for (const ClientRecord& cl : j.clients.value_or(std::vector<ClientRecord>{}))
      samples += double(cl.samples_processed);
    diagnostic += round_diagnostic;
    peer += round_peer;
    if (j.epsilon) c.epsilon = j.epsilon;
    if (j.clipped) c.clipped += *j.clipped, c.aggregated += j.clients ? j.clients->size() : 0;
    const auto count = [](const std::optional<std::vector<uint32_t>>& v) {
      return v ? v->size() : size_t(0);
    };
    c.updates_asked += j.participants.value_or(0) + count(j.simulated_lost);
    c.updates_lost += count(j.missing) + count(j.simulated_lost) + count(j.simulated_late);
    seconds += step_ms(j) / 1e3;  // async and allreduce: all in the wait
    // a run with network conditions counts its links' time: simulated, or emulated in real time
    c.clock = j.simulated_time    ? "simulated"
              : j.emulated_time   ? "emulated"
              : j.elapsed_seconds ? "elapsed"
                                  : "server";
    clock_seconds = j.simulated_time    ? *j.simulated_time
                    : j.emulated_time   ? *j.emulated_time
                    : j.elapsed_seconds ? *j.elapsed_seconds
                                        : seconds;
    if (j.global_train_loss) {
      c.train_round.push_back(double(j.round));
      c.global_train_loss.push_back(*j.global_train_loss);
    }
    if (j.client_accuracy && !j.client_accuracy->empty()) {
      const Spread sp = spread_of(*j.client_accuracy);
      c.client_round.push_back(double(j.round));
      c.client_mean.push_back(100 * sp.mean), c.client_worst10.push_back(100 * sp.worst10);
      c.client_min.push_back(100 * sp.min), c.client_max.push_back(100 * sp.max);
    }
    if (j.staleness_mean && j.staleness_max) {
      c.staleness_round.push_back(double(j.round));
      c.staleness_mean.push_back(*j.staleness_mean);
      c.staleness_max.push_back(double(*j.staleness_max));
    }
    if (!j.test_accuracy) continue;
    c.seconds.push_back(clock_seconds);
    c.round.push_back(double(j.round));
    c.accuracy.push_back(100 * *j.test_accuracy);
    c.test_loss.push_back(need(j.test_loss, "test_loss", j, dir));
    c.mb.push_back((double(j.bytes_sent_total + j.bytes_received_total) - diagnostic + peer) / 1e6);
    c.mb_up.push_back((double(j.bytes_received_total) - diagnostic) / 1e6);
    c.mb_down.push_back(double(j.bytes_sent_total) / 1e6);
    c.mb_device.push_back(device / 1e6);
    c.samples.push_back(samples);
    // NaN (no point drawn) where the round had no pair of client updates to compare
    c.cosine.push_back(j.mean_pairwise_cosine.value_or(std::nan("")));
    if (j.update_drift) c.drift.push_back(*j.update_drift);
  }
  // no round compared client updates (a ring, a pipeline, a tensor group): no curve, not zeros
  if (std::none_of(rounds.begin(), rounds.end(),
                   [](const RoundRecord& j) { return j.mean_pairwise_cosine.has_value(); }))
    c.cosine.clear();
  c.round_seconds = rounds.empty() ? 0 : clock_seconds / double(rounds.size());
  c.all_samples = samples;
  return c;
}

RunAccounting read_accounting(const std::filesystem::path& dir) {
  std::vector<double> clients, param, act, down, up, compute, broadcast, exchange, aggregate;
  for (const RoundRecord& j : read_round_records(dir)) {
    if (!j.clients || j.clients->empty()) continue;  // topologies without per-client updates
    const auto& cls = *j.clients;
    clients.push_back(double(cls.size()));
    const double diagnostic_per_client =
        double(j.diagnostic_bytes_up.value_or(0)) / double(cls.size());
    std::map<int64_t, double> per_process;  // compute seconds of the clients each process hosts
    double p = 0, a = 0, u = 0;
    for (const ClientRecord& c : cls) {
      p = std::max(p, double(c.parameter_bytes));
      a = std::max(a, double(c.activation_bytes));
      u = std::max(u, double(c.bytes_up) - diagnostic_per_client);
      per_process[c.process] += c.compute_seconds;
    }
    double slowest = 0;
    for (const auto& [proc, secs] : per_process) slowest = std::max(slowest, secs);
    param.push_back(p / 1e6);
    act.push_back(a / 1e6);
    up.push_back(u / 1e6);
    down.push_back(double(need(j.bytes_down_per_task, "bytes_down_per_task", j, dir)) / 1e6);
    const double b = need(j.broadcast_seconds, "broadcast_seconds", j, dir);
    compute.push_back(1e3 * slowest);
    broadcast.push_back(1e3 * b);
    exchange.push_back(1e3 * std::max(0.0, j.wait_seconds - b - slowest));
    aggregate.push_back(1e3 * need(j.aggregate_seconds, "aggregate_seconds", j, dir));
  }
  return {median(clients), median(param),     median(act),      median(down),     median(up),
          median(compute), median(broadcast), median(exchange), median(aggregate)};
}

std::vector<RoundRecord> steady_rounds(std::vector<RoundRecord> rounds) {
  for (const auto& one_off : std::vector<std::function<bool(const RoundRecord&)>>{
           [](const RoundRecord& j) { return j.round == 1; },
           [](const RoundRecord& j) { return j.test_accuracy.has_value(); },
           [](const RoundRecord& j) { return j.model_sent_up.value_or(false); }})
    if (!std::all_of(rounds.begin(), rounds.end(), one_off)) std::erase_if(rounds, one_off);
  return rounds;
}

double step_ms(const RoundRecord& j) {  // a master's wait leaves its loss out
  return 1e3 *
         (j.wait_seconds + j.master_loss_seconds.value_or(0) + j.aggregate_seconds.value_or(0));
}

RunTraffic read_traffic(const std::filesystem::path& dir) {
  RunTraffic t;
  std::vector<double> step, server_sent, server_received, worker_sent, worker_received, allreduce,
      busbw;
  for (const RoundRecord& j : steady_rounds(read_round_records(dir))) {
    t.topology = j.topology;
    step.push_back(step_ms(j));
    // Per process: what the server sent it and got from it, plus (allreduce) its ring traffic.
    const auto workers = j.workers.value_or(std::vector<WorkerRecord>{});
    t.workers = int(j.processes.size());
    double ws = 0, wr = 0, slowest_allreduce = 0, model_bytes = 0;
    for (size_t i = 0; i < j.processes.size(); ++i) {
      double ring_sent = 0, ring_received = 0;
      if (i < workers.size()) {  // a grid's replica ring counts too
        ring_sent = double(workers[i].ring_bytes_sent + workers[i].replica_bytes_sent.value_or(0));
        ring_received =
            double(workers[i].ring_bytes_received + workers[i].replica_bytes_received.value_or(0));
        slowest_allreduce = std::max(slowest_allreduce, workers[i].allreduce_seconds);
        model_bytes = double(workers[i].parameter_bytes) / 2;  // weights + gradient
      }
      ws = std::max(ws, double(j.processes[i].bytes_up) + ring_sent);
      wr = std::max(wr, double(j.processes[i].bytes_down) + ring_received);
    }
    server_sent.push_back(double(j.server_bytes_sent) / 1e6),
        server_received.push_back(
            double(j.server_bytes_received - j.diagnostic_bytes_up.value_or(0)) / 1e6);
    worker_sent.push_back(ws / 1e6), worker_received.push_back(wr / 1e6);
    if (slowest_allreduce > 0 && t.workers > 1 && j.topology == "allreduce") {
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

Divergence weight_divergence(const std::filesystem::path& run_dir,
                             const std::filesystem::path& ref_dir) {
  Divergence d;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(run_dir / "params", ec))
    files.push_back(e.path());
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
