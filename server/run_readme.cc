// run_readme; see run_readme.h.
#include "server/run_readme.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "core/client_list.h"
#include "core/client_spread.h"
#include "core/executable.h"
#include "core/init_from.h"
#include "core/median.h"
#include "core/pipeline_schedule.h"
#include "core/results_dir.h"
#include "core/run_records.h"
#include "core/unread_settings.h"
#include "partitioners/stats.h"

namespace fedpar {
namespace {

// The workers' own links bind loopback by default: across machines they must listen where their
// neighbours can reach them (the pipeline's links, the rings of allreduce, tensor and grids).
std::string worker_links_bind(const RunSpec& s) {
  const auto loopback = [](const std::string& bind) {
    return bind.find("127.0.0.1") != std::string::npos ||
           bind.find("localhost") != std::string::npos;
  };
  std::string out;
  if (s.topology == Topology::kPipeline && loopback(s.pipeline.bind))
    out += " --set 'pipeline.bind=tcp://0.0.0.0:*'";
  if ((s.topology == Topology::kAllReduce || s.topology == Topology::kTensor || s.grid_data > 1) &&
      loopback(s.ring_bind))
    out += " --set 'allreduce.bind=tcp://0.0.0.0:*'";
  return out;
}

// What each file a run may write holds (server/run_context.cc and the plans).
const std::map<std::string, std::string>& file_notes() {
  static const std::map<std::string, std::string> notes = {
      {"config.resolved.toml", "every setting of the run, defaults included"},
      {"manifest.json", "the partition: each virtual client's sample indices, with its hash"},
      {"partition.svg", "the partition drawn: each client's samples by label"},
      {"metrics.jsonl",
       "one JSON object per round (loss, accuracy when evaluated, bytes, times, per-client "
       "records; `tail -f` while it runs; every field: docs/metrics.md in fedpar's source)"},
      {"summary.json", "the final evaluation, the model hash, the hosts and their clients"},
      {"model.safetensors", "the final parameters"},
      {"updates.jsonl", "every asynchronous arrival, for `fedpar replay` (the same bytes again)"},
      {"network.json",
       "the network's profiles ([network] mode), each client's, the server's link (emulated: "
       "each process's link, `process_links`)"},
      {"checkpoint.bin",
       "the last checkpoint (`--resume` continues from it; a run that ran all its rounds keeps "
       "one of its last round, and with `--set rounds=N` above its rounds gives the run more)"},
      {"params", "parameter snapshots every `diagnostics.save_params_every` rounds"},
      {"plots",
       "the test accuracy and loss by round, with `eval_train` the global train loss, with "
       "`eval_clients` the clients' accuracy on their own samples, and an async run's staleness "
       "(SVG, with their data and gnuplot script: without gnuplot, only those)"},
      {"README.md", "this file"}};
  return notes;
}

// "12.3 MB", or "45.6 kB" where MB would round a small run's traffic to 0.0.
std::string megabytes(uint64_t bytes) {
  return bytes < 100'000 ? fmt::format("{:.1f} kB", double(bytes) / 1e3)
                         : fmt::format("{:.1f} MB", double(bytes) / 1e6);
}

// kB below a megabyte (QSGD's 101,410 bytes read "0.1 MB").
std::string wire_size(double bytes) {
  return bytes < 1e6 ? fmt::format("{:.1f} kB", bytes / 1e3)
                     : fmt::format("{:.2f} MB", bytes / 1e6);
}

// `bytes` against `raw`'s: "75.9x less", or "1.25x more: the codec grew it".
std::string against(double bytes, double raw) {
  return bytes <= raw ? fmt::format("{:.1f}x less", raw / bytes)
                      : fmt::format("{:.2f}x more: the codec grew it", bytes / raw);
}

// An allreduce run's ring traffic: the median worker's sends in round f beside what a float32
// ring sends, 2(N - 1)/N of the model ("" with one worker or no worker records).
std::string ring_line(const RunSpec& s, const RoundRecord& f, uint64_t parameters) {
  if (!f.workers || f.workers->size() < 2) return "";
  std::vector<double> sent;
  for (const WorkerRecord& w : *f.workers) sent.push_back(double(w.ring_bytes_sent));
  const double n = double(sent.size());
  const double raw = 2 * (n - 1) / n * double(parameters) * sizeof(float);
  if (raw <= 0 || median(sent) <= 0) return "";
  // uncompressed, the sends are float32's payload and their frames' headers: no codec grew them
  const std::string verdict =
      s.compression.uplink == "none"
          ? fmt::format("the payload and {:.0f} bytes of frame headers", median(sent) - raw)
          : against(median(sent), raw);
  return fmt::format(
      "- on the ring in round {}: each worker sent {} to its neighbour (the median; "
      "`compression.uplink = {}`), against float32's 2(N-1)/N of the model, {}: {}\n",
      f.round, wire_size(median(sent)), s.compression.uplink, wire_size(raw), verdict);
}

}  // namespace

std::string split_line(const RunSpec& s, const RoundRecord& f) {
  if (!s.model_parallel() || !f.workers || f.workers->empty()) return "";
  const int64_t parts = s.model_parts();
  const std::string replicas =
      s.grid_data > 1 ? fmt::format(" x {} data replicas (a ring across each part's)", s.grid_data)
                      : "";
  const std::string how =
      s.topology == Topology::kPipeline
          ? fmt::format("a pipeline of {} stages{}, {} schedule, {} micro-batches a batch", parts,
                        replicas, pipe_schedule_name(s.pipeline.schedule), s.pipeline.micro_batches)
          : fmt::format("tensor parallelism over {} ranks{}", parts, replicas);
  std::vector<std::string> each;
  for (size_t i = 0; i < f.workers->size(); ++i) {
    const WorkerRecord& w = (*f.workers)[i];
    const int64_t part = int64_t(i) % parts;
    each.push_back(
        fmt::format("{}{} {}: {} of parameters and gradients, {} of activations, {} sent",
                    s.grid_data > 1 ? fmt::format("replica {} ", int64_t(i) / parts) : "",
                    s.topology == Topology::kPipeline ? "stage" : "rank", part,
                    wire_size(double(w.parameter_bytes)), wire_size(double(w.activation_bytes)),
                    wire_size(double(w.ring_bytes_sent + w.replica_bytes_sent.value_or(0)))));
  }
  return fmt::format(
      "- the model split: {}; each process in round {} (its `workers` record in metrics.jsonl; "
      "the server's log names each part's layers): {}\n",
      how, f.round, fmt::join(each, "; "));
}

std::string compression_line(const RunSpec& s, const RoundRecord& f, uint64_t parameters) {
  const CompressionSpec& c = s.compression;
  if (s.topology == Topology::kAllReduce) return ring_line(s, f, parameters);
  if ((c.uplink == "none" && c.downlink == "none") || !f.clients || f.clients->empty()) return "";
  std::vector<double> up;
  for (const ClientRecord& cl : *f.clients) up.push_back(double(cl.bytes_up));
  const double raw = double(parameters) * sizeof(float);
  if (raw <= 0) return "";
  std::vector<std::string> parts;
  if (c.uplink != "none")
    parts.push_back(fmt::format(
        "an UPDATE {} (`compression.uplink = {}`, the round's median; {}), its headers included",
        wire_size(median(up)), c.uplink, against(median(up), raw)));
  if (c.downlink != "none" && f.bytes_down_per_task)
    parts.push_back(
        fmt::format("a TASK's model{} {} (`compression.downlink = {}`; {}), the model "
                    "frame alone",
                    c.downlink_delta ? " change" : "", wire_size(double(*f.bytes_down_per_task)),
                    c.downlink, against(double(*f.bytes_down_per_task), raw)));
  if (parts.empty()) return "";
  return fmt::format("- on the wire in round {}, against the model's {} of float32: {}\n", f.round,
                     megabytes(uint64_t(raw)), fmt::join(parts, "; "));
}

namespace {

// Clients a round's record lists (unavailable, lost, late, missing), counted over the run, with
// who they were by link profile.
struct LeftOut {
  size_t count = 0;
  std::map<std::string, std::set<uint32_t>> who;  // profile -> clients
  void add(const RunSpec& s, const std::optional<std::vector<uint32_t>>& ids) {
    for (uint32_t c : ids.value_or(std::vector<uint32_t>{})) {
      ++count;
      who[s.network.on() ? s.network.of(c).name : ""].insert(c);  // "": no profiles
    }
  }
  std::string whom() const {
    std::vector<std::string> parts;
    for (const auto& [profile, clients] : who)
      parts.push_back(profile.empty() ? client_list(clients)
                                      : fmt::format("{}: {}", profile, client_list(clients)));
    return fmt::format("{}", fmt::join(parts, "; "));
  }
};

// An async run's staleness, from updates.jsonl: the updates applied and rejected, and the clients
// whose updates came stalest (a straggler's rejected updates leave the rounds' staleness, which
// counts applied ones) ("" for another regime, or without the file).
std::string staleness_notes(const RunSpec& s, const std::filesystem::path& dir) {
  std::ifstream in(dir / "updates.jsonl");
  if (s.regime != Regime::kAsync || !in) return "";
  struct Client {
    uint64_t applied = 0, rejected = 0, max = 0;
  };
  std::map<uint32_t, Client> by;
  std::vector<double> taus;
  uint64_t applied = 0, rejected = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    Client& c = by[j.at("client").get<uint32_t>()];
    const uint64_t tau = j.at("staleness").get<uint64_t>();
    (j.at("applied").get<bool>() ? c.applied : c.rejected) += 1;
    (j.at("applied").get<bool>() ? applied : rejected) += 1;
    c.max = std::max(c.max, tau);
    taus.push_back(double(tau));
  }
  if (taus.empty()) return "";
  std::vector<std::pair<uint32_t, Client>> stalest(by.begin(), by.end());
  std::ranges::stable_sort(
      stalest, [](const auto& a, const auto& b) { return a.second.max > b.second.max; });
  std::vector<std::string> who;
  for (size_t i = 0; i < std::min<size_t>(3, stalest.size()); ++i)
    who.push_back(fmt::format("client {}: {} applied, {} rejected, at most {}", stalest[i].first,
                              stalest[i].second.applied, stalest[i].second.rejected,
                              stalest[i].second.max));
  return fmt::format(
      "- asynchronous updates: {} applied, {} rejected{}; staleness median {:g}, at most {:g} "
      "(every arrival, rejected ones too: the rounds' `staleness_mean` and `staleness_max` count "
      "the applied); stalest: {} (`updates.jsonl` has each)\n",
      applied, rejected,
      s.staleness_bound > 0 ? fmt::format(" (`async.staleness_bound = {}`)", s.staleness_bound)
                            : "",
      median(taus), *std::ranges::max_element(taus), fmt::join(who, "; "));
}

// network.sample_from = "available": how many clients the rounds drew among, and how many rounds
// had fewer than their K ("" for a run that draws from all of them).
std::string sampled_among_available(const RunSpec& s, const std::vector<RoundRecord>& rounds) {
  std::vector<double> available;
  const auto k = uint64_t(clients_per_round(s));
  size_t short_rounds = 0;
  for (const RoundRecord& r : rounds)
    if (r.available) {
      available.push_back(double(*r.available));
      short_rounds += *r.available < k;
    }
  if (available.empty()) return "";
  double sum = 0;
  for (double a : available) sum += a;
  return fmt::format(
      "- the rounds drew their {} clients among those available in them (`network.sample_from = "
      "\"available\"`): {:.1f} available on average, {:g} to {:g}; {} of {} rounds had fewer "
      "than {} (each round's in metrics.jsonl's `available`)\n",
      k, sum / double(available.size()), *std::ranges::min_element(available),
      *std::ranges::max_element(available), short_rounds, available.size(), k);
}

// [privacy]: the guarantee the run's rounds bought (the last round's epsilon), or that clipping
// alone buys none; how many clients the Poisson draws gave and how many updates were clipped.
std::string privacy_note(const RunSpec& s, size_t num_clients,
                         const std::vector<RoundRecord>& rounds) {
  if (!s.privacy.on() || rounds.empty()) return "";
  std::vector<double> drawn;
  size_t updates = 0, clipped = 0;
  for (const RoundRecord& r : rounds) {
    drawn.push_back(double(r.participants.value_or(0) +
                           r.unavailable.value_or(std::vector<uint32_t>{}).size() +
                           r.simulated_lost.value_or(std::vector<uint32_t>{}).size()));
    updates += r.clients ? r.clients->size() : 0;
    clipped += r.clipped.value_or(0);
  }
  double sum = 0;
  for (double d : drawn) sum += d;
  std::vector<double> clips;  // the adaptive clip, round by round
  for (const RoundRecord& r : rounds)
    if (r.clip_norm) clips.push_back(*r.clip_norm);
  const std::string bound =
      clips.empty() ? fmt::format("privacy.clip_norm = {:g}", s.privacy.clip_norm)
                    : fmt::format(
                          "the round's clip, which followed the {:g} quantile of the update norms "
                          "from {:.4g} "
                          "to {:.4g} (`privacy.adaptive_quantile`; each round's in `clip_norm`)",
                          s.privacy.adaptive.quantile, clips.front(), clips.back());
  const std::string clipping = fmt::format(
      "{} of {} updates ({:.0f}%) were longer than {} and clipped to it (each round's in "
      "metrics.jsonl's `clipped`)",
      clipped, updates, updates ? 100.0 * double(clipped) / double(updates) : 0.0, bound);
  if (!s.privacy.noised())
    return fmt::format(
        "- updates clipped, no noise (`privacy.noise_multiplier = 0`): **no privacy "
        "guarantee**, the clipping's cost alone; {}\n",
        clipping);
  const RoundRecord& last = rounds.back();
  const size_t k = draws_per_round(s, num_clients);
  const double q = sampling_rate(s, num_clients), z = s.privacy.noise_multiplier;
  // under the adaptive clip the count's noise takes part of z (core/adaptive_clip.h)
  const std::string noise =
      s.privacy.adaptive.on()
          ? fmt::format(
                "N(0, (z_u S / K)^2) with z_u = {:.4g} (what z = {:g} leaves beside the "
                "clip's count, noised with sigma_b = {:g})",
                updates_noise_multiplier(s.privacy, k), z, count_noise_std(s.privacy.adaptive, k))
          : fmt::format("N(0, (z S / K)^2) with z = {:g}", z);
  return fmt::format(
      "- client-level differential privacy (`[privacy]`, DP-FedAvg; docs/privacy.md): **(epsilon, "
      "delta) = ({:.3g}, {:g})** after {} rounds, each drawing every client with probability "
      "q = {:g} (`client_sampling = \"poisson\"`: {:.1f} drawn a round on average, {:g} to {:g}) "
      "and adding {} to the average of updates clipped to S; {}. "
      "The server is trusted: it sees each update before the noise\n",
      last.epsilon.value_or(0), s.privacy.delta, last.round, q, sum / double(drawn.size()),
      *std::ranges::min_element(drawn), *std::ranges::max_element(drawn), noise, clipping);
}

// What the rounds left out of or changed in their aggregation: how many sampled clients were
// unavailable or had a message lost on the simulated links, how many updates network.drop_late's
// simulated deadline left out, were not waited for (backup_clients) or never came, and whose, by
// link profile; in how many rounds Krum had too few updates and the median aggregated them ("" when
// none of it happened).
std::string aggregation_notes(const RunSpec& s, const std::filesystem::path& dir) {
  size_t aggregated = 0, sampled = 0, asked = 0;
  LeftOut late, unavailable, lost, missing, backups;
  std::vector<int64_t> median_rounds;
  const auto rounds = read_round_records(dir);
  for (const RoundRecord& r : rounds) {
    aggregated += r.clients ? r.clients->size() : 0;
    late.add(s, r.simulated_late);
    unavailable.add(s, r.unavailable);
    lost.add(s, r.simulated_lost);
    missing.add(s, r.missing);
    backups.add(s, r.not_waited_for);
    asked += r.participants.value_or(0);
    sampled += r.participants.value_or(0) + r.unavailable.value_or(std::vector<uint32_t>{}).size() +
               r.simulated_lost.value_or(std::vector<uint32_t>{}).size();
    if (r.robust_fallback) median_rounds.push_back(r.round);
  }
  std::string md = sampled_among_available(s, rounds);
  // the synchronous parameter server records each round's aggregated updates (`clients`)
  const bool sync_ps = s.topology == Topology::kParameterServer && s.regime != Regime::kAsync;
  if (sync_ps && !rounds.empty() && aggregated == 0)
    md += fmt::format(
        "- **no round of the {} aggregated an update**: the model is the one the run started "
        "from{} (why each round had none is in the log and in metrics.jsonl's `participants`, "
        "`unavailable`, `missing`)\n",
        rounds.size(), s.privacy.noised() ? ", plus [privacy]'s noise" : "");
  if (unavailable.count > 0)
    md += fmt::format(
        "- {} of {} sampled clients were unavailable and not asked (the profiles' "
        "`availability`; each round's in metrics.jsonl's `unavailable`): {}\n",
        unavailable.count, sampled, unavailable.whom());
  if (lost.count > 0)
    md += fmt::format(
        "- {} of {} sampled clients had their TASK or UPDATE lost on the simulated links (the "
        "profiles' `loss`; `simulated_lost`): {}\n",
        lost.count, sampled, lost.whom());
  if (late.count > 0)
    md += fmt::format(
        "- {} of {} updates came after wait_seconds = {:g} on the simulated clock and were left "
        "out (`network.drop_late`; each round's in metrics.jsonl's `simulated_late`): {}\n",
        late.count, late.count + aggregated, s.wait_seconds, late.whom());
  if (backups.count > 0)
    md += fmt::format(
        "- {} of {} participants' updates were not waited for: each round aggregated the "
        "first to come in and did not wait for the last {} (fewer where clients were missing: "
        "a dead or dropped one is one of them; `backup_clients`; each round's in "
        "metrics.jsonl's `not_waited_for`): {}\n",
        backups.count, asked, s.backup_clients, backups.whom());
  if (missing.count > 0)
    md += fmt::format(
        "- {} of {} participants' updates never came (a lost message, a missed deadline, a "
        "process gone, or dropped and no longer asked; `missing`): {}\n",
        missing.count, asked, missing.whom());
  if (!median_rounds.empty())
    md += fmt::format(
        "- **{} of {} rounds were aggregated by the median, not {}**: they had {} updates or "
        "fewer {} (rounds {}; metrics.jsonl's `robust_fallback`)\n",
        median_rounds.size(), rounds.size(), aggregate_rule_name(s.robust.rule),
        median_fallback(s.robust).most, median_fallback(s.robust).why, id_list(median_rounds));
  return md;
}

// How often each client's update was aggregated, where not every client was in every round
// (fraction < 1, client_sampling, availability, drops), and how that went with their sizes: the
// largest tenth of the clients against the smallest (the largest and the smallest client under 10).
// "" when every client was aggregated in every round that aggregated any.
std::string participation_note(const RunSpec& s, const PartitionStats& p,
                               const std::vector<RoundRecord>& rounds) {
  std::vector<double> times(p.clients.size(), 0);
  size_t aggregating = 0;
  for (const RoundRecord& r : rounds) {
    if (!r.clients || r.clients->empty()) continue;
    ++aggregating;
    for (const ClientRecord& c : *r.clients)
      if (c.client < times.size()) ++times[c.client];
  }
  if (times.empty() || std::ranges::all_of(times, [&](double t) { return t == aggregating; }))
    return "";
  std::vector<uint32_t> never, by_size(times.size());
  for (uint32_t c = 0; c < times.size(); ++c)
    if (times[c] == 0) never.push_back(c);
  std::iota(by_size.begin(), by_size.end(), 0u);
  std::ranges::stable_sort(
      by_size, [&](uint32_t a, uint32_t b) { return p.clients[a].size > p.clients[b].size; });
  const size_t tenth = std::max<size_t>(1, by_size.size() / 10);
  const auto mean_of = [&](auto first) {
    double sum = 0;
    for (size_t i = 0; i < tenth; ++i) sum += times[first[i]];
    return sum / double(tenth);
  };
  const std::string ends =
      p.size.min == p.size.max ? fmt::format("the shards are all of {:.0f} samples", p.size.min)
      : by_size.size() >= 10
          ? fmt::format(
                "the largest tenth of the clients by samples in {:.1f} rounds on average, "
                "the smallest tenth in {:.1f}",
                mean_of(by_size.begin()), mean_of(by_size.rbegin()))
          : fmt::format("the largest client ({} samples) in {:g}, the smallest ({}) in {:g}",
                        p.clients[by_size.front()].size, times[by_size.front()],
                        p.clients[by_size.back()].size, times[by_size.back()]);
  return fmt::format(
      "- participation (`fraction = {:g}`, `client_sampling = \"{}\"`): each client's update "
      "was aggregated in {:g} to {:g} of the {} rounds that aggregated any (median {:g}{}); {} "
      "(each round's in metrics.jsonl's `clients`)\n",
      s.fraction, client_sampling_name(s.client_sampling), *std::ranges::min_element(times),
      *std::ranges::max_element(times), aggregating, median(times),
      never.empty() ? "" : fmt::format("; {} never: {}", never.size(), client_list(never)), ends);
}

// How long the rounds took on the server's clock, how long the median round waited for its
// replies, and (with per-client records) the slowest client's compute against the median
// client's, [stragglers]' sleep included: where a straggler's cost shows. "" without the time
// (an older summary).
std::string time_note(const RunSpec& s, const RunSummary& summary,
                      const std::vector<RoundRecord>& rounds) {
  if (!summary.rounds_seconds) return "";
  // a diverged run's last round ran too, though its model is not kept
  const int64_t ran = summary.rounds_run - summary.resumed_after_round.value_or(0) +
                      (summary.diverged_at_round ? 1 : 0);
  std::vector<double> waits;
  std::map<uint32_t, std::vector<double>> compute;  // client -> its rounds' compute seconds
  for (const RoundRecord& r : rounds) {
    if (r.round <= summary.resumed_after_round.value_or(0)) continue;
    waits.push_back(r.wait_seconds);
    for (const ClientRecord& c : r.clients.value_or(std::vector<ClientRecord>{}))
      compute[c.client].push_back(c.compute_seconds);
  }
  std::string slowest;
  if (compute.size() > 1) {
    std::vector<std::pair<double, uint32_t>> medians;
    for (const auto& [client, seconds] : compute) medians.emplace_back(median(seconds), client);
    std::vector<double> all;
    for (const auto& [m, client] : medians) all.push_back(m);
    const auto& [most, who] = *std::ranges::max_element(medians);
    slowest = fmt::format(
        "; the slowest client, client {}, computed {:.3g} s a round and the median client {:.3g} s "
        "(medians of metrics.jsonl's `clients[].compute_seconds`{})",
        who, most, median(all),
        s.slowdown.empty() && s.delay_seconds.empty() ? "" : ", [stragglers]' sleep included");
  }
  return fmt::format(
      "- {} round{} {}in {:.1f} s on the server's clock ({:.3g} s a round, evaluations "
      "included){}{}\n",
      ran, ran == 1 ? "" : "s", summary.resumed_after_round ? "since the resume " : "",
      *summary.rounds_seconds, ran > 0 ? *summary.rounds_seconds / double(ran) : 0.0,
      waits.empty()
          ? ""
          : fmt::format("; the median round waited {:.3g} s for its replies (`wait_seconds`)",
                        median(waits)),
      slowest);
}

// " on cpu", " on cuda", " (3 on cuda, 1 on cpu)": what the client processes computed on, as
// their HELLOs said ("" where no record says).
std::string devices_of(const std::vector<HostRecord>& hosts) {
  std::map<std::string, int> n;
  for (const HostRecord& h : hosts)
    if (h.device) ++n[*h.device];
  if (n.empty()) return "";
  if (n.size() == 1) return " on " + n.begin()->first;
  std::vector<std::string> parts;
  for (const auto& [device, count] : n) parts.push_back(fmt::format("{} on {}", count, device));
  return " (" + fmt::format("{}", fmt::join(parts, ", ")) + ")";
}

}  // namespace

std::string run_readme(const Config& cfg, const RunSpec& s, const RunSummary& summary,
                       const std::filesystem::path& dir, const std::string& plots) {
  std::ostringstream md;
  const std::string topology = cfg.get_string("topology");
  md << fmt::format("# {}\n\n", s.name);
  md << fmt::format(
      "fedpar ran `{}` on {} in the `{}` regime ({} topology): {} virtual client(s) in {} "
      "client process(es){}, {} of {} rounds, seed {}.\n\n",
      s.model.name,
      summary.data_from ? fmt::format("{} (read from `{}`)", summary.dataset.value_or(s.data.name),
                                      *summary.data_from)
                        : summary.dataset.value_or(s.data.name),
      cfg.get_string("regime"), topology, summary.clients, summary.processes,
      devices_of(summary.hosts), summary.rounds_run, s.rounds, s.seed);
  if (summary.final && summary.final->test_accuracy) {
    const double p = *summary.final->test_accuracy;
    md << fmt::format(
        "- test accuracy {:.2f}% (loss {:.4f}) at round {}{}\n", 100 * p,
        summary.final->test_loss.value_or(0), summary.final->round,
        summary.test_samples && *summary.test_samples > 0
            ? fmt::format(", on {} test samples (the test set's sampling error, a binomial "
                          "standard error of {:.2f} points; seeds vary the accuracy besides)",
                          *summary.test_samples,
                          100 * std::sqrt(p * (1 - p) / double(*summary.test_samples)))
            : "");
  } else
    md << "- no test evaluation (no test set, or no evaluated round)\n";
  if (summary.final && summary.final->global_train_loss)  // eval_train
    md << fmt::format(
        "- the model on the whole training set: loss {:.4f}, accuracy {:.2f}% at round {} "
        "(`eval_train`)\n",
        *summary.final->global_train_loss, 100 * summary.final->global_train_accuracy.value_or(0),
        summary.final->round);
  if (summary.final && summary.final->client_accuracy && !summary.final->client_accuracy->empty()) {
    const Spread sp = spread_of(*summary.final->client_accuracy);  // eval_clients
    md << fmt::format(
        "- the model on each client's {} at round {} (`eval_clients`, over {} clients): "
        "mean accuracy {:.2f}%, worst 10% {:.2f}%, lowest {:.2f}% (client {}), highest {:.2f}%, "
        "standard deviation {:.2f} points\n",
        summary.client_holdout
            ? fmt::format("held-out samples ({:g}% of its samples, kept out of its training by "
                          "`partition.holdout`)",
                          100 * *summary.client_holdout)
            : std::string("own shard"),
        summary.final->round, summary.final->client_accuracy->size(), 100 * sp.mean,
        100 * sp.worst10, 100 * sp.min, sp.min_at, 100 * sp.max, 100 * sp.std);
  }
  md << fmt::format("- final model hash `{}` (of `model.safetensors`' float32 bytes)\n",
                    summary.model_hash);
  md << fmt::format("- fedpar built from commit `{}` for {} with {}, the server on {}\n",
                    summary.source_commit.value_or("unknown"),
                    summary.build_vector_units.value_or("unknown vector units"),
                    summary.blas_kernels.value_or("unknown matrix kernels"),
                    summary.machine.value_or("unknown"));
  if (summary.load_average) {  // times are the machine's, shared with whatever else ran on it
    const unsigned cores = std::thread::hardware_concurrency();
    md << fmt::format("- the machine's load average was {:.2f} as the run ended ({})\n",
                      *summary.load_average,
                      *summary.load_average >= double(cores)
                          ? fmt::format("at or above its {} cores: other work slowed the times "
                                        "this run measured",
                                        cores)
                          : fmt::format("below its {} cores", cores));
  }
  std::vector<RoundRecord> rounds;
  try {
    rounds = read_round_records(dir);
  } catch (const std::exception&) {  // the README says what it can without them
  }
  if (const auto& f = summary.final) {  // the last evaluated round: the last round, as a rule
    uint64_t diagnostic = 0;            // received, measuring or saving rather than training
    for (const RoundRecord& r : rounds)
      if (r.round <= f->round) diagnostic += r.diagnostic_bytes_up.value_or(0);
    md << fmt::format(
        "- {} sent and {} received at the server's socket by round {} ({}{}; docs/metrics.md)\n",
        megabytes(f->bytes_sent_total), megabytes(f->bytes_received_total), f->round,
        f->workers ? "what the workers send each other is in metrics.jsonl's `workers`"
                   : "the server's TASKs go to client processes, not to each client",
        diagnostic > 0
            ? fmt::format("; {} of what it received measured or saved rather than trained "
                          "(`diagnostic_bytes_up`: models fetched to evaluate or checkpoint, "
                          "timings, drift), which fedpar compare's MB leave out",
                          megabytes(diagnostic))
            : "");
    md << compression_line(s, *f, summary.parameters.value_or(0));
    md << split_line(s, *f);
    if (f->simulated_time)
      md << fmt::format("- the simulated network's time by round {}: {:.1f} s (`[network]`)\n",
                        f->round, *f->simulated_time);
    if (f->emulated_time)
      md << fmt::format("- the emulated network's time by round {}: {:.1f} s (`[network]`)\n",
                        f->round, *f->emulated_time);
  }
  md << time_note(s, summary, rounds);
  try {  // how non-IID the clients' data was, from the manifest the run wrote
    const PartitionStats p = manifest_stats(dir / "manifest.json");
    const std::string left_out =
        summary.train_samples ? unassigned_note(p, *summary.train_samples) : "";
    md << fmt::format(
        "- the partition (`{}`): {} client(s) of {:.0f} to {:.0f} samples (median {:.0f}), "
        "{:.0f} label(s) present in the median client, median EMD {:.3f} (0: every client's "
        "labels as the whole's, 2: disjoint; docs/partitioning.md){}{}\n",
        s.partition.scheme, p.clients.size(), p.size.min, p.size.max, p.size.median,
        p.labels_present.median, p.emd.median,
        p.held_out ? fmt::format("; {} more held out of training (`partition.holdout` = {:g})",
                                 p.held_out, s.partition.holdout)
                   : "",
        left_out.empty() ? "" : "; " + left_out);
    md << participation_note(s, p, rounds) << privacy_note(s, p.clients.size(), rounds);
  } catch (const std::exception&) {  // no manifest (model-parallel runs split no data)
  }
  try {  // a metrics line an older build wrote costs these lines only
    md << aggregation_notes(s, dir) << staleness_notes(s, dir);
  } catch (const std::exception& e) {
    md << fmt::format("- left-out updates and Krum's rounds not counted: {}\n", e.what());
  }
  if (summary.resumed_after_round) {
    md << fmt::format(
        "- resumed (`--resume`) after round {}: the rounds before ran in an earlier "
        "server process",
        *summary.resumed_after_round);
    if (const auto& earlier = summary.earlier_commits; earlier && !earlier->empty()) {
      md << fmt::format(", built from commit {}", fmt::join(*earlier, ", "));
      if (earlier->size() > 1 || earlier->front() != summary.source_commit.value_or(""))
        md << " (**not this one's**: the model is not an uninterrupted run's of one build)";
    }
    if (const auto& changed = summary.resumed_with_changes; changed && !changed->empty())
      md << fmt::format("; it measured otherwise from then on ({}: metrics.jsonl holds both)",
                        fmt::join(*changed, "; "));
    md << "\n";
  }
  if (summary.init_hash) md << started_from_line(s.model.init_from, *summary.init_hash);
  const auto pid = [](const HostRecord& h) {
    return h.pid ? fmt::format(" (pid {})", *h.pid) : std::string();
  };
  for (const HostRecord& h : summary.hosts)
    if (h.joined_after_round) {
      std::string was;  // the lost one it replaced: the same clients, after the same round
      for (const HostRecord& r : summary.replaced.value_or(std::vector<HostRecord>{}))
        if (r.clients == h.clients && r.replaced_after_round == h.joined_after_round) was = pid(r);
      md << fmt::format(
          "- a client process{} started during the run took the place of a lost one{} after "
          "round {}: virtual client(s) {}, whose updates the rounds before it may lack (each "
          "round's `missing` says)\n",
          pid(h), was, *h.joined_after_round, fmt::join(h.clients, ", "));
    }
  std::vector<uint32_t> lost;  // the clients of the processes dropped during the run
  for (const HostRecord& h : summary.hosts)
    if (h.lost) lost.insert(lost.end(), h.clients.begin(), h.clients.end());
  if (!lost.empty())
    md << fmt::format(
        "- **virtual client(s) {} were on a client process the run dropped** (slow or gone: {}) "
        "and got no tasks after; {}\n",
        fmt::join(lost, ", "),
        s.regime == Regime::kAsync
            ? "its clients left `drop_after_missed_rounds` tasks each unanswered in a row, each "
              "for `wait_seconds` and then sent again"
            : "none of its updates came within `wait_seconds` in `drop_after_missed_rounds` "
              "rounds in a row, or one was absent under SCAFFOLD or a delta downlink, or it left "
              "the ring",
        s.regime == Regime::kAsync
            ? "the other clients' updates filled the rounds (updates.jsonl lists them)"
            : "each round's `missing` in metrics.jsonl names the updates it went without");
  if (summary.stopped_at_accuracy)
    md << fmt::format("- stopped at round {}: `stop_at_accuracy` was reached\n",
                      summary.rounds_run);
  if (summary.diverged_at_round) {
    // the reason names its round too ("round 3: worker 0's update holds ..."): said once
    const std::string round = fmt::format("round {}: ", *summary.diverged_at_round);
    std::string why = summary.diverged.value_or("");
    if (why.starts_with(round)) why.erase(0, round.size());
    md << fmt::format("- **diverged** at {}{}\n", round, why);
  }
  for (const std::string& w : summary.warnings.value_or(std::vector<std::string>{}))
    md << fmt::format("- **warning** (at the start): {}\n", w);
  // results_dir and data.dir may be relative: the commands run where this run was started. `dir`
  // is the partial folder; ResultsDir::commit rewrites its path to the folder's final name (which
  // may have a suffix: another run of the same name came first).
  const std::string config = (dir / "config.resolved.toml").string();
  const std::string fedpar = this_executable();
  // A suite gives its runs an absolute results_dir, its runs/ folder: a rerun written there would
  // stand among the suite's runs (and in every compare of the suite).
  const bool absolute = std::filesystem::path(s.results_dir).is_absolute();
  md << fmt::format(
      "\n## Run it again\n\nFrom the folder this run was started in (a relative `results_dir` "
      "or `data.dir` in the config is relative to it; the new run's folder gets the next free "
      "suffix, `-2`, `-3`, ...){4}:\n\n"
      "```sh\n{1} run {0}{5}   # a server and the config's client processes here\n```\n\n"
      "Across machines: `{1} server --config {0} --set bind=tcp://0.0.0.0:PORT{7}` here, and "
      "`fedpar client --server tcp://HOST:PORT{2}` on each client host{3}.{6}\n\n",
      config, fedpar, s.security.on() ? " --key NAME.key --server-key SERVER.pub" : "",
      s.security.on() ? fmt::format(" (NAME.key its key pair, whose NAME.pub is in {}; "
                                    "SERVER.pub the server's public key: docs/distributed.md)",
                                    s.security.clients)
                      : "",
      absolute ? fmt::format("; this run's `results_dir` is the absolute {}, so the command "
                             "writes the new run to ./results instead, not beside this one",
                             s.results_dir)
               : "",
      absolute ? " --set results_dir=results" : "",
      s.security.on()  // launch has no per-process keys
          ? ""
          : fmt::format(" Under a cluster's launcher (mpirun, srun, the torchrun variables): `{} "
                        "launch {}` on every rank (docs/cluster.md).",
                        fedpar, config),
      worker_links_bind(s));
  md << (s.regime == Regime::kAsync
             ? "An asynchronous run applies updates in their arrival order, which no seed fixes: "
               "a new run ends elsewhere, and `fedpar replay` recomputes this one's bytes from "
               "`updates.jsonl`.\n\n"
             : "The same config gives the same final model hash with fedpar built from the "
               "same commit for the same vector units and OpenBLAS kernels (they order the "
               "float sums, so their rounding).\n\n");
  md << fmt::format(
      "## Plots\n\n{}`{} compare {}` draws the test accuracy by round (`--x samples`, `bytes`, "
      "`seconds`; `--metric loss`), beside other runs' folders given after it (a second run of "
      "this config writes the next free suffix: `-2`, ...).\n\n",
      plots, fedpar, dir.string());
  std::map<std::string, std::string> unread;
  for (const UnreadSetting& u : unread_settings(cfg, s)) unread[u.key] = u.why;
  md << settings_section(cfg, make_run_config(), unread);
  md << "## Files\n\n";
  std::set<std::string> names = {"README.md"};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (!entry.path().filename().string().starts_with("."))  // the writer's .lock, gone at commit
      names.insert(entry.path().filename().string());
  for (const std::string& name : names) {
    const auto it = file_notes().find(name);
    md << fmt::format("- `{}`{}\n", name, it == file_notes().end() ? "" : ": " + it->second);
  }
  return md.str();
}

}  // namespace fedpar
