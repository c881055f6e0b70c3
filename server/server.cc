// run_server: resolves the run, binds the transport, waits for the client processes and runs the
// plan of its regime and topology on the round engine; see server.h.
#include "server/server.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <thread>

#include "core/build_info.h"
#include "core/client_list.h"
#include "core/codec/codec.h"
#include "core/count_users.h"
#include "core/fednova.h"
#include "core/hash.h"
#include "core/stop_signal.h"
#include "partitioners/stats.h"
#include "server/engine.h"
#include "server/plan.h"
#include "server/run_context.h"
#include "transport/curve.h"
#include "transport/shaped_link.h"

namespace fedpar {
namespace {

void write_endpoint(const std::string& file, const std::string& endpoint) {
  if (file.empty()) return;
  const std::string tmp = file + ".tmp";
  std::ofstream(tmp) << endpoint << "\n";
  std::filesystem::rename(tmp, file);
}

// The largest frame a peer of this run may send: a vector of the model's size, or of the batch's
// logits (master), at up to 8 bytes a value (a sparse codec's index and value), plus a body. A
// larger frame cannot be a message of this run: ZeroMQ disconnects its sender unread.
int64_t max_frame_bytes(const RunContext& run) {
  const size_t logits = run.data.train.size() * size_t(run.data.train.num_classes);
  return int64_t(8 * std::max(run.params.size(), logits) + (size_t(1) << 20));
}

// A tcp endpoint on another address than loopback.
bool reachable_from_outside(const std::string& bind) {
  if (!bind.starts_with("tcp://")) return false;  // ipc and inproc stay on this machine
  const std::string host = bind.substr(6, bind.rfind(':') - 6);
  return !(host.starts_with("127.") || host == "localhost" || host == "[::1]");
}

// A resumed run leaves out the processes that host the clients of those dropped before its
// checkpoint, and goes on counting the misses in a row of those that had missed the rounds just
// before it, so it goes on as the interrupted run did (the dealing depends on the slots alone, so
// the same processes and slots host the same clients again).
void keep_misses(Engine& engine, const RunContext::Resumed& resumed) {
  // the process that hosts exactly `clients`; else logs that the checkpoint's run had `done` to
  // such a process and what happens `instead`
  const auto find = [&](const std::vector<uint32_t>& clients, const char* done,
                        const char* instead) -> const std::string* {
    for (const auto& id : engine.order)
      if (engine.peers.at(id).clients == clients) return &id;
    engine.log(fmt::format(
        "the checkpoint's run had {} the process of virtual clients {}; no process hosts "
        "exactly those now (other processes or slots), so {}",
        done, fmt::join(clients, ", "), instead));
    return nullptr;
  };
  for (const auto& clients : resumed.dropped)
    if (const std::string* id = find(clients, "dropped", "every process takes part"))
      engine.drop(*id, "was dropped before the checkpoint");  // and is told so
  for (const auto& [clients, n] : resumed.missed)
    if (const std::string* id = find(clients, "counted missed rounds of", "its count starts over"))
      engine.missed[*id] = n;
}

// The bytes of one model download and one update on the wire, before the first round: `codec`'s
// encoding of the initial model (a codec's size barely depends on the values: top-k's index gaps,
// QSGD's levels); SCAFFOLD sends the server's control with the model and a control change with
// each update, drift a linear part, both as float32.
struct WireSizes {
  uint64_t down = 0, up = 0;
  uint64_t drift = 0;  // the drift's linear part beside each update: sent, but off the clock
};

WireSizes wire_sizes(const RunSpec& s, const Model& model, std::span<const float> params) {
  if (s.network.mode == NetworkMode::kOff) return {};  // no warning reads them
  const auto encoded = [&](const std::string& name) -> uint64_t {
    const auto codec = make_codec(name, with_layout(s.compression.params, model.layout()));
    if (!codec) return params.size() * sizeof(float);
    std::vector<uint8_t> bytes;
    codec->encode(params, {}, bytes);
    return bytes.size();
  };
  const bool scaffold = s.regime == Regime::kModel && s.algorithm == FlAlgorithm::kScaffold;
  const bool drift = s.regime == Regime::kModel && s.drift;
  const uint64_t raw = params.size() * sizeof(float);
  // round 1's TASK carries the whole model in delta mode
  return {.down = (s.compression.downlink_delta ? raw : encoded(s.compression.downlink)) +
                  raw * scaffold,
          .up = encoded(s.compression.uplink) + raw * scaffold,
          .drift = raw * drift};
}

// Compress the updates or the model's download (further than their codecs, where they have one).
std::string compress_hint(const RunSpec& s) {
  const auto link = [](const std::string& codec, const char* key) {
    return codec == "none" ? fmt::format("compression.{}", key)
                           : fmt::format("compression.{}, now {}", key, codec);
  };
  return fmt::format("compress the updates ({}) or the model's download ({}; docs/compression.md)",
                     link(s.compression.uplink, "uplink"),
                     link(s.compression.downlink, "downlink"));
}

// Emulated links too slow for wait_seconds miss every round's deadline: the warning that says so,
// with the numbers, before the first round rather than after the deadlines ("" when none). The
// slowest live process's link.
std::string slow_links(const Engine& engine, const RunSpec& s, WireSizes wire) {
  if (s.network.mode != NetworkMode::kEmulated || s.topology != Topology::kParameterServer)
    return {};
  const bool async = s.regime == Regime::kAsync;  // each client's task is sent again instead
  const uint64_t down = wire.down, up = wire.up + wire.drift;  // emulated: every byte takes time
  double least = 0;
  const std::string* slowest = nullptr;
  size_t asked = 0, too_slow = 0;
  for (const auto& id : engine.order) {
    const auto& clients = engine.peers.at(id).clients;
    if (clients.empty() || engine.lost.count(id)) continue;
    const auto n =
        async ? clients.size()  // each holds a task at all times
              : std::max<size_t>(1, size_t(std::ceil(s.fraction * double(clients.size()))));
    const double t = least_round_seconds(s.network.of(clients[0]), down, up, n);
    too_slow += t > s.wait_seconds;
    if (t > least) least = t, slowest = &id, asked = n;
  }
  if (!slowest || least <= s.wait_seconds) return {};
  const auto& clients = engine.peers.at(*slowest).clients;
  const LinkProfile& p = s.network.of(clients[0]);
  const std::string others =
      too_slow > 1 ? fmt::format(" (and {} other process(es) too)", too_slow - 1) : "";
  // fewer clients a process only helps where a process sends several updates a round
  const std::string split = asked > 1 ? ", start more client processes (fewer clients each)" : "";
  return fmt::format(
      "the process of virtual clients {} sends {} update(s) of {:.2f} MB {} up its "
      "emulated {} link ({:g} Mbit/s): at least {:.0f} s, more than wait_seconds = {:g}, so it "
      "would miss every deadline{}{}. Raise wait_seconds (to {:.0f} or more, a margin for "
      "compute){}, "
      "or {}",
      fmt::join(clients, ", "), asked, double(up) / 1e6, async ? "at a time" : "a round", p.name,
      p.up_bps / 1e6, least, s.wait_seconds, others,
      async ? " (each task sent again, and the process dropped)" : "", std::ceil(1.5 * least),
      split, compress_hint(s));
}

// Simulated mode with network.drop_late: clients whose link cannot bring the model down and their
// update up within wait_seconds, even with no compute, are left out. Said before round 1 (by
// profile, with the time on round 1's links: with every client asked, through the server's shared
// link too), not found out from the round lines. "" when none is.
std::string always_late(const Engine& engine, const RunSpec& s, WireSizes wire) {
  if (s.network.mode != NetworkMode::kSimulated || !s.network.drop_late) return {};
  std::vector<SimulatedClient> everyone;
  for (uint32_t c : engine.all_clients()) everyone.push_back({c, wire.down, wire.up, 0.0});
  std::vector<double> at;  // fewer asked share the server's link less: each on its own link then
  if (s.fraction >= 1)
    at = simulated_reply_seconds(s.network, s.seed, 0, everyone);
  else
    for (const SimulatedClient& c : everyone)
      at.push_back(least_round_seconds(s.network.of(c.client), wire.down, wire.up, 1));
  std::map<std::string, std::pair<double, std::vector<uint32_t>>> late;  // by profile
  size_t count = 0;
  for (size_t i = 0; i < everyone.size(); ++i) {
    if (at[i] <= s.wait_seconds) continue;
    auto& [seconds, ids] = late[s.network.of(everyone[i].client).name];
    seconds = std::max(seconds, at[i]);
    ids.push_back(everyone[i].client);
    ++count;
  }
  if (late.empty()) return {};
  std::vector<std::string> parts;
  double slowest = 0;
  for (const auto& [name, t] : late) {
    const auto& ids = t.second;
    parts.push_back(fmt::format("{} ({}: up to {:.1f} s)", name, client_list(ids), t.first));
    slowest = std::max(slowest, t.first);
  }
  return fmt::format(
      "on round 1's simulated links, {} of {} clients would bring the model down ({:.2f} "
      "MB) and their update up ({:.2f} MB) after wait_seconds = {:g} even with no compute{}, so "
      "network.drop_late would leave them out{}: {}. Raise wait_seconds (to {:.0f} or more, a "
      "margin for compute) or {}",
      count, engine.num_clients, double(wire.down) / 1e6, double(wire.up) / 1e6, s.wait_seconds,
      s.fraction >= 1 && s.network.server
          ? " and every client's messages through the server's link at once"
          : "",
      count == engine.num_clients ? " (all of them: the model stays)" : "", fmt::join(parts, "; "),
      std::ceil(1.5 * slowest), compress_hint(s));
}

// A batch larger than some clients' shards: those clients step on their whole shard, a smaller
// batch than the settings table says ("" when every shard holds a batch).
std::string batch_beyond_shards(const RunSpec& s, const Manifest& m) {
  const bool local = s.regime == Regime::kModel;
  const int64_t batch = local ? s.local_batch : s.sgd_batch;
  if (batch <= 0) return {};  // the whole shard, as asked
  size_t smaller = 0, smallest = SIZE_MAX;
  for (const ClientShard& c : m.clients) {
    smaller += c.indices.size() < size_t(batch);
    smallest = std::min(smallest, c.indices.size());
  }
  if (smaller == 0) return {};
  const char* key = local ? "local.batch" : "sgd.batch";
  return fmt::format(
      "{} = {} is more than {} (the smallest shard: {} samples): each of their {} takes its "
      "whole shard, fewer samples than {} = {} says; lower {}, or give the clients more samples",
      key, batch,
      smaller == m.clients.size()
          ? fmt::format("each of the {} clients holds", m.clients.size())
          : fmt::format("{} of the {} clients hold", smaller, m.clients.size()),
      smallest, local ? "local steps" : "gradients", key, batch, key);
}

// FedNova rescales each delta by its client's steps: with every client taking the same, it is
// FedAvg (the run then measures nothing FedNova adds).
std::string fednova_as_fedavg(const RunSpec& s, const Manifest& m) {
  if (s.algorithm != FlAlgorithm::kFedNova) return {};
  std::vector<size_t> sizes;
  for (const ClientShard& c : m.clients) sizes.push_back(c.indices.size());
  const auto steps = fednova_equal_steps(s, sizes);
  if (!steps) return {};
  return fmt::format(
      "local.algorithm = \"fednova\" normalises each update by its client's local steps, and "
      "every client takes the same, {} a round: its update is FedAvg's, bit for bit; FedNova "
      "differs where the work differs (local.steps_max or local.epochs_max, or local.epochs over "
      "shards of unequal sizes, e.g. partition.scheme = \"iid-quantity\")",
      *steps);
}

}  // namespace

int run_server(Config cfg, const ServerOptions& opts) {
  const RunSpec s = resolve_run_spec_counting_users(cfg);
  install_stop_handlers();
  // said now, and kept for the README and summary.json (a suite's quiet runs say them there)
  const auto warn = [&](std::vector<std::string>& kept, const std::string& w) {
    if (!opts.quiet) fmt::print(stderr, "server: warning: {}\n", w);
    kept.push_back(w);
  };
  std::vector<std::string> warnings;
  for (const std::string& w : run_warnings(cfg, s)) warn(warnings, w);
  cfg.set("name", s.name);
  RunContext run(cfg, s, /*resuming=*/!opts.resume.empty());
  run.warnings = std::move(warnings);
  if (const auto load = load_average();
      load && *load >= double(std::thread::hardware_concurrency()))
    warn(run.warnings, fmt::format("the machine is busy (load average {:.2f} on {} cores): the "
                                   "times this run measures will show it",
                                   *load, std::thread::hardware_concurrency()));
  if (!opts.quiet) {
    const auto from = mnist_folder(s.data);
    fmt::print(stderr, "server: data: {}{}\n", describe(run.data),
               from ? fmt::format(" (read from {})", *from) : "");
    if (run.init_hash() && opts.resume.empty())
      fmt::print(stderr, "server: model: starts from the parameters in {} (hash {})\n",
                 s.model.init_from, *run.init_hash());
  }
  for (const std::string& w : limits_above_the_data(s.data, run.data)) warn(run.warnings, w);
  if (const std::string out = unassigned_note(partition_stats(run.manifest), run.data.train.size());
      !out.empty())
    warn(run.warnings,
         fmt::format("the partition (partition.scheme = \"{}\") leaves samples out: {}",
                     s.partition.scheme, out));
  for (const std::string& n : run.manifest.notes) warn(run.warnings, n);
  if (const std::string w = batch_beyond_shards(s, run.manifest); !w.empty()) warn(run.warnings, w);
  if (const std::string w = fednova_as_fedavg(s, run.manifest); !w.empty()) warn(run.warnings, w);
  if (const size_t n = run.manifest.clients.size();
      s.privacy.noised() && n > 0 && s.privacy.delta >= 1.0 / double(n))
    warn(run.warnings,
         fmt::format("privacy.delta = {:g} is not below 1 / {} clients: a mechanism that published "
                     "one client's data outright would meet it; take delta well below 1 / N",
                     s.privacy.delta, n));
  const auto plan = make_plan(run);  // its refusals (a split that does not divide) come first
  if (s.checkpoint_every > 0 || !opts.resume.empty())
    if (const std::string why = plan->checkpoint_refusal(); !why.empty())
      throw Error(
          fmt::format("this run cannot be checkpointed yet: {} (checkpoints cover every "
                      "synchronous topology: docs/distributed.md#checkpoints-and-resume)",
                      why));
  const RunContext::Resumed resumed =
      opts.resume.empty() ? RunContext::Resumed{} : run.resume(opts.resume, *plan);
  std::optional<CurveServer> curve;
  if (s.security.on()) {
    // with --also-allow (fedpar run's own clients) the user's folder may be empty, not absent
    std::set<std::string> allowed =
        read_allowed_keys(s.security.clients, /*required=*/opts.also_allow.empty());
    if (!opts.also_allow.empty()) allowed.merge(read_allowed_keys(opts.also_allow));
    curve = CurveServer{read_curve_keys(s.security.key), std::move(allowed)};
    if (curve->keys.secret_key.empty())
      throw Error(
          fmt::format("security.key: {} holds only a public key; the server needs its "
                      ".key file",
                      s.security.key));
  } else if (!opts.quiet && reachable_from_outside(s.bind)) {
    fmt::print(stderr,
               "server: WARNING: {} is reachable from other machines and the run is in "
               "plaintext: anyone who reaches it can join and read the model. {}\n",
               s.bind,
               opts.under_launch
                   ? "fedpar launch has no [security] (a key pair per client process): keep the "
                     "job on a network only it reaches, or start fedpar server and fedpar client "
                     "--key yourself (docs/distributed.md)."
                   : "Set [security] key and clients (fedpar keygen; docs/distributed.md).");
  }
  const auto transport =
      shape_transport(bind_zmq_transport(s.bind, opts.context, max_frame_bytes(run),
                                         curve ? &*curve : nullptr, opts.quiet),
                      s.network, s.seed);
  write_endpoint(opts.endpoint_file, transport->endpoint());
  Engine engine(s, *transport, opts.quiet, run.model.layout());
  engine.launch_config = opts.launch_config;
  engine.refuse_replacements(plan->replacement_refusal());
  if (s.network.on()) run.out.write_json("network.json", network_json(s.network));
  engine.run_id = hash_bytes(&s.seed, sizeof(s.seed), ::getpid());
  engine.bytes_carried = resumed.bytes;
  for (const auto& dir : run.out.stale_checkpoints())
    if (std::error_code ec;
        opts.resume.empty() || !std::filesystem::equivalent(dir, opts.resume, ec))
      engine.log(
          fmt::format("{} holds the checkpoint of a run that was killed: continue it with "
                      "--resume {}",
                      dir.string(), dir.string()));
  for (const auto& [from, to] : run.out.rescued())
    engine.log(
        fmt::format("{} held the rounds of a run that died unfinished (no checkpoint): "
                    "kept as {}",
                    from.string(), to.string()));
  if (resumed.rounds > 0)
    engine.log(fmt::format("resuming after round {} from {}", resumed.rounds, opts.resume));
  engine.log(
      fmt::format("writing to {} (renamed {}, or -2, -3, ... if taken, when the run "
                  "completes; `tail -f` its metrics.jsonl to follow the rounds)",
                  run.out.path().string(), (run.out.path().parent_path() / s.name).string()));
  if (s.checkpoint_every > 0)
    engine.log(fmt::format("checkpoints every {} rounds go to {}", s.checkpoint_every,
                           (run.out.path() / "checkpoint.bin").string()));
  try {
    engine.welcome_clients(run.manifest, run.params.size(), cfg.to_toml(),
                           plan->client_state());    // those that came hear STOP on failure
    if (s.network.mode == NetworkMode::kEmulated) {  // now that the processes' clients are dealt
      std::vector<std::vector<uint32_t>> hosted;
      for (const auto& id : engine.order) hosted.push_back(engine.peers.at(id).clients);
      run.out.write_json("network.json", network_json(s.network, hosted));
    }
    keep_misses(engine, resumed);
    const WireSizes wire = wire_sizes(s, run.model, run.params);
    run.warnings.insert(run.warnings.end(), engine.warnings.begin(), engine.warnings.end());
    for (const std::string& w : {slow_links(engine, s, wire), always_late(engine, s, wire)})
      if (!w.empty()) engine.log("warning: " + w), run.warnings.push_back(w);
    run_rounds(engine, run, *plan, resumed.rounds);
  } catch (const std::exception& e) {
    const auto* stop = dynamic_cast<const Interrupted*>(&e);
    std::string why = e.what();
    if (std::string by; stop && !opts.stop_reason_file.empty() &&
                        std::getline(std::ifstream(opts.stop_reason_file), by) && !by.empty())
      why = fmt::format("stopped by fedpar run: {}", by);  // the cause, not its SIGTERM
    engine.stop_all(stop ? StopOutcome::kStopped : StopOutcome::kFailed, why);
    if (stop) why += ".";
    // fedpar run starts the clients too; a server started by hand has its clients started anew
    const std::string resume_with =
        opts.under_fedpar_run ? "fedpar run {0}/config.resolved.toml --resume {0}"
        : opts.under_launch
            ? "fedpar launch CONFIG ... --resume {0} (the job's own command on every rank, "
              "with --resume added)"
            : "fedpar server --config {0}/config.resolved.toml --resume {0} (and its client "
              "processes, as before)";
    if (const auto kept = opts.keep_incomplete
                              ? run.keep_incomplete(why, resume_with, plan->checkpoint_refusal())
                              : std::filesystem::path();
        !kept.empty()) {
      const std::string note =
          std::filesystem::exists(kept / "checkpoint.bin")
              ? fmt::format("the metrics and the last checkpoint are kept in {}: continue with {}",
                            kept.string(), fmt::format(fmt::runtime(resume_with), kept.string()))
              : fmt::format(
                    "the metrics of the rounds that ran are kept in {} (no checkpoint{}, so it "
                    "cannot be resumed{})",
                    kept.string(), s.checkpoint_every > 0 ? " yet" : "",
                    s.checkpoint_every > 0               ? ""
                    : plan->checkpoint_refusal().empty() ? ": with checkpoint_every = N it could"
                                                         : ": " + plan->checkpoint_refusal());
      if (stop) {  // still 128 + the signal
        fmt::print(stderr, "{}\n", note);
        throw Interrupted(stop->signal(), /*kept=*/true);
      }
      const std::string what = fmt::format("{}\n{}", e.what(), note);
      if (dynamic_cast<const RunFailed*>(&e)) throw RunFailed(what);
      if (dynamic_cast<const Error*>(&e)) throw Error(what);
      fmt::print(stderr, "{}\n", note);  // not a failure fedpar knows: an internal error still
      throw;
    }
    throw;
  }
  engine.stop_all();
  return run.finish(engine, opts.draw_plots);
}

}  // namespace fedpar
