// The synchronous regimes as a plan: `gradient` on the parameter-server topology (workers upload
// gradients, the server averages, steps, broadcasts) and `model` (FedAvg: local steps, deltas
// averaged). A fraction of the clients is sampled each round; one TASK goes to every process that
// hosts a participant, and the updates are reduced in client-id order. See plan.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/adaptive_clip.h"
#include "core/check.h"
#include "core/client_list.h"
#include "core/client_sampling.h"
#include "core/fednova.h"
#include "core/local_update.h"
#include "core/network.h"
#include "core/privacy_accountant.h"
#include "core/rng.h"
#include "core/scaffold.h"
#include "server/diagnostics.h"
#include "server/plan.h"
#include "server/strategy.h"

namespace fedpar {
namespace {

// How the updates are reduced: [robust]'s rule, or under [privacy] the mean of updates clipped
// to its norm.
RobustOptions reduction(const RunSpec& s) {
  return s.privacy.on() ? RobustOptions{.clip_norm = s.privacy.clip_norm} : s.robust;
}

// [privacy]'s noise on the average: z S / K for the clip S, K = q N being every update's fixed
// denominator; under the adaptive clip z is what the noised count leaves of the budget.
AggregateNoise privacy_noise(const RunSpec& s, size_t num_clients, double clip) {
  const size_t k = draws_per_round(s, num_clients);
  return {.stddev = updates_noise_multiplier(s.privacy, k) * clip / double(k), .seed = s.seed};
}

class SyncPlan final : public Plan {
 public:
  explicit SyncPlan(RunContext& run)
      : run_(run),
        s_(run.s),
        gradient_(s_.regime == Regime::kGradient),
        drift_(s_.drift && !gradient_),
        scaffold_(s_.algorithm == FlAlgorithm::kScaffold),
        // a sampling scheme's weights are given whole (client_sampling.h)
        applied_weighting_(s_.client_sampling == ClientSampling::kUniform ? s_.weighting
                                                                          : Weighting::kSum),
        strategy_(!gradient_ ? make_model_averaging(applied_weighting_, s_.server_optimizer,
                                                    reduction(s_), noise_)
                  : s_.compression.majority
                      ? make_majority_vote(s_.optimizer.lr, s_.optimizer.sgd)
                      : make_gradient_averaging(applied_weighting_, s_.optimizer.lr,
                                                s_.optimizer.sgd, reduction(s_), noise_)) {
    for (const ClientShard& c : run_.manifest.clients)
      client_weights_.push_back(uint64_t(raw_weight(s_.weighting, c.indices.size())));
  }

  const char* topology() const override {
    return gradient_ ? "parameter-server" : "model-averaging";
  }
  std::map<std::string, std::vector<uint32_t>> tasks(const Engine&) const override {
    return per_peer_;
  }

  std::string replacement_refusal() const override {
    const CompressionSpec& c = s_.compression;
    if (c.downlink_delta) return "a delta downlink keeps the clients' copies of the model";
    if (c.uplink == "powersgd") return "powersgd keeps each client's warm-started factors in it";
    if (c.error_feedback && c.uplink != "none")
      return "its clients' error-feedback residuals went with the lost process";
    return "";
  }

  std::string checkpoint_refusal() const override {
    const CompressionSpec& c = s_.compression;
    if (c.uplink == "powersgd") return "powersgd keeps each client's warm-started factors in it";
    // without delta only the casts fp16 and bf16 may carry the model: they keep nothing
    if (c.downlink_delta) return "a delta downlink keeps the clients' copies of the model";
    if (s_.optimizer.precision == Precision::kF16) return "fp16's loss scale lives in the clients";
    return "";
  }

  void save_state(Checkpoint& c) const override {
    strategy_->save_state(c);
    if (s_.privacy.adaptive.on()) c.f64["privacy.clip_norm"] = {clip_};
    if (scaffold_) {
      c.f32["scaffold.c"] = control_;
      for (const auto& [client, ci] : clients_.controls)
        c.f32[fmt::format("{}{}", kClientControl, client)] = ci;
    }
    for (const auto& [client, r] : clients_.residuals) {
      c.f32[fmt::format("{}{}", kClientResidual, client)] = r.e;
      c.f32[fmt::format("{}{}.lr", kClientResidual, client)] = {r.lr};
    }
    clock_.save(c);
  }

  // Error feedback: every live process's clients' residuals, fetched so that a checkpoint holds
  // them (a lost process's clients keep what the last pull got). Their bytes count in the run's
  // totals, in no round's.
  void pull_state(Engine& engine) override {
    if (!s_.compression.error_feedback) return;
    std::vector<uint32_t> asked;
    for (const auto& id : engine.order) {
      if (engine.lost.count(id)) continue;
      const auto& mine = engine.peers.at(id).clients;
      asked.insert(asked.end(), mine.begin(), mine.end());
      engine.send(id,
                  encode(TaskMsg{.kind = TaskKind::kState, .clients = mine}, engine.envelope()));
    }
    std::sort(asked.begin(), asked.end());
    const size_t params = run_.params.size();
    CollectSpec spec{.kind = TaskKind::kState, .expected = asked, .seconds = s_.wait_seconds};
    spec.accept = [params](const Reply& r) -> std::string {
      const auto& v = r.update.vectors;
      if (v.empty() || (v.size() == 2 && v[0].size() == params && v[1].size() == 1)) return "";
      return "a client's state is its residual and its learning rate, or nothing";
    };
    const Collected c = engine.collect(spec);
    for (const auto& [client, r] : c.got)
      if (r.update.vectors.size() == 2) {
        const auto e = r.update.vectors[0];
        clients_.residuals[client] = {{e.begin(), e.end()}, r.update.vectors[1][0]};
      }
    if (!c.missing.empty())
      engine.log(
          fmt::format("round {}: no state from client(s) {} for the checkpoint; it keeps "
                      "their last",
                      engine.round + 1, fmt::join(c.missing, ", ")));
  }

  void load_state(const Checkpoint& c) override {
    strategy_->load_state(c);
    if (s_.privacy.adaptive.on()) clip_ = c.doubles("privacy.clip_norm").at(0);
    if (scaffold_) {
      control_ = c.floats("scaffold.c");
      for (const auto& [name, v] : c.f32)
        if (name.starts_with(kClientControl))
          clients_.controls[uint32_t(std::stoul(name.substr(kClientControl.size())))] = v;
    }
    for (const auto& [name, v] : c.f32) {
      if (!name.starts_with(kClientResidual) || name.ends_with(".lr")) continue;
      const auto& lr = c.floats(name + ".lr");
      if (v.size() != run_.params.size() || lr.size() != 1)
        throw Error(fmt::format("the checkpoint's {} has {} values and {} rate(s), not {} and 1",
                                name, v.size(), lr.size(), run_.params.size()));
      clients_.residuals[uint32_t(std::stoul(name.substr(kClientResidual.size())))] = {v, lr[0]};
    }
    clock_.load(c);
  }

  const ClientState& client_state() const override { return clients_; }

  std::string round(Engine& engine, RoundRecord& rec) override {
    const bool adaptive = s_.privacy.adaptive.on();
    if (adaptive) {
      strategy_->set_clip_and_noise(clip_, privacy_noise(s_, engine.num_clients, clip_).stddev);
      rec.clip_norm = clip_;
    }
    within_ = aggregated_ = 0;
    std::string said = aggregate(engine, rec);
    if (adaptive) move_clip(engine);
    if (s_.privacy.noised())  // every round ran the mechanism, those that aggregated nothing too
      rec.epsilon = privacy_spent(sampling_rate(s_, engine.num_clients),
                                  s_.privacy.noise_multiplier, engine.round + 1, s_.privacy.delta)
                        .epsilon;
    return said;
  }

 private:
  std::string aggregate(Engine& engine, RoundRecord& rec) {
    const auto t0 = Clock::now();
    const RoundSample sample = draw(engine, rec);
    const auto participants =
        network_participants(s_.network, s_.seed, engine.round, sample.clients, rec);
    sampled_weights_.clear();
    for (size_t i = 0; i < sample.weights.size(); ++i)
      sampled_weights_[sample.clients[i]] = sample.weights[i];
    if (participants.empty())
      return idle_round(
          rec, engine.round,
          !sample.clients.empty()
              ? fmt::format("none of the {} sampled client(s) available", sample.clients.size())
          : rec.available == 0u ? "no client available to draw from"
                                : "no client drawn");
    if (std::ranges::all_of(participants,
                            [&](uint32_t c) { return engine.lost.count(engine.owner[c]) > 0; })) {
      if (engine.all_lost())
        throw RunFailed(
            "every client process has been dropped from the run: none is left to train");
      engine.log(fmt::format("round {}: the sampled clients ({}) were on a dropped process",
                             engine.round + 1, fmt::join(participants, ", ")));
      return idle_round(rec, engine.round, "the sampled clients' process was dropped");
    }
    const double broadcast_seconds = send_tasks(engine, participants);
    Collected c = engine.collect(collect_spec(participants.size()));
    const auto t_wait = Clock::now();
    // participants without an update, those of lost processes too, not those not waited for
    std::vector<uint32_t> absent;
    for (uint32_t client : participants)
      if (!c.got.count(client) && !std::ranges::binary_search(c.released, client))
        absent.push_back(client);
    if (s_.backup_clients > 0) rec.not_waited_for = c.released;
    const std::vector<uint32_t> late = leave_out_late(engine.round, c);
    rec.simulated_late = s_.network.drop_late ? std::optional(late) : std::nullopt;
    // a process dropped before the round was not asked: the simulated clock does not wait out
    // the deadline for its clients
    const bool waited = std::ranges::any_of(
        absent, [&](uint32_t client) { return per_peer_.count(engine.owner[client]) > 0; });
    count_misses(engine, c, absent);
    if (c.got.empty()) {  // every asked client missed the deadline: the model stays
      record(rec, c, absent, {}, {}, participants.size());
      rec.broadcast_seconds = broadcast_seconds;
      rec.wait_seconds = std::chrono::duration<double>(t_wait - t0).count();
      rec.aggregate_seconds = 0;
      clock_.end_round(rec, engine.round, rec.wait_seconds, waited);
      return noise_alone(engine.round, late.empty()
                                           ? "no update came"
                                           : "every update came late on the simulated clock");
    }
    std::vector<ClientUpdate> updates, linear, control_changes;
    for (const auto& [client, r] : c.got) {
      // a sampling scheme's weight, which the drift diagnostic's averages take too
      const double scale = sampled_weights_.empty() ? 1.0 : sampled_weights_.at(client);
      updates.push_back({client, engine.round, r.update.num_samples, r.update.vectors[0], scale});
      if (drift_)
        linear.push_back({client, engine.round, r.update.num_samples, r.update.vectors[1], scale});
      if (scaffold_)
        control_changes.push_back(
            {client, engine.round, r.update.num_samples, r.update.vectors.back()});
    }
    // FedNova applies rescaled deltas; the diagnostics keep the clients' own
    std::vector<ClientUpdate> applied = updates;
    std::vector<std::vector<float>> normalized;
    if (s_.algorithm == FlAlgorithm::kFedNova) {
      normalized = fednova_normalize(updates, fednova_works(updates, engine.round), s_.weighting);
      for (size_t k = 0; k < applied.size(); ++k) applied[k].values = normalized[k];
    }
    if (s_.privacy.on()) {
      rec.clipped = count_longer(updates, clip_);
      aggregated_ = updates.size();
      within_ = aggregated_ - *rec.clipped;
    }
    strategy_->apply(applied, run_.params);
    if (scaffold_) {
      scaffold_server_control(control_changes, s_.weighting, all_clients_weight(), control_);
      for (const ClientUpdate& u : control_changes) {  // the clients' c_i, as they add them up
        auto& ci = clients_.controls[u.client];
        if (ci.empty()) ci.assign(u.values.size(), 0.0f);
        for (size_t k = 0; k < ci.size(); ++k) ci[k] += u.values[k];
      }
    }
    const auto t_done = Clock::now();
    record(rec, c, absent, updates, linear, participants.size());
    const bool fallback = falls_back_to_median(s_.robust, updates.size());
    if (fallback) rec.robust_fallback = "median";
    rec.broadcast_seconds = broadcast_seconds;
    rec.wait_seconds = std::chrono::duration<double>(t_wait - t0).count();
    rec.aggregate_seconds = std::chrono::duration<double>(t_done - t_wait).count();
    clock_.end_round(rec, engine.round, std::chrono::duration<double>(t_done - t0).count(), waited);
    if (const auto over = clock_.over_deadline(); over && !said_over_deadline_) {
      said_over_deadline_ = true;
      engine.log(fmt::format(
          "round {}: the simulated round's slowest client took {:.1f} s, over wait_seconds = {:g}: "
          "the round is recorded as {:g} s, yet every update was aggregated (simulated mode does "
          "not drop late clients unless network.drop_late = true); raise wait_seconds to see the "
          "links' whole time (said once)",
          engine.round + 1, *over, s_.wait_seconds, s_.wait_seconds));
    }
    return fmt::format(
        "{} update{}{}{}{}", c.got.size(), c.got.size() == 1 ? "" : "s", late_clause(late),
        c.released.empty() ? "" : fmt::format(", not waited for: {}", client_list(c.released)),
        fallback ? median_clause() : "");
  }

  // ", 2 late (left out: clients 0, 5)" (metrics.jsonl's simulated_late lists them all)
  static std::string late_clause(const std::vector<uint32_t>& late) {
    return late.empty() ? ""
                        : fmt::format(", {} late (left out: {})", late.size(), client_list(late));
  }

  // Krum or trimmed-mean with too few updates this round (metrics.jsonl's robust_fallback says
  // which rounds): why, the first time
  std::string median_clause() {
    if (std::exchange(said_median_, true)) return ", aggregated by the median";
    const MedianFallback f = median_fallback(s_.robust);
    return fmt::format(", aggregated by the median: {} needs more than {} {}",
                       aggregate_rule_name(s_.robust.rule), f.most, f.why);
  }

  // One TASK for every process that hosts a participant: it lists all participants and each
  // process serves those it hosts, so it is encoded (and its CRC computed) once, and its model
  // frame is one snapshot that ZeroMQ sends to every process without further copies.
  double send_tasks(Engine& engine, const std::vector<uint32_t>& participants) {
    per_peer_.clear();
    for (uint32_t c : participants)
      if (!engine.lost.count(engine.owner[c])) per_peer_[engine.owner[c]].push_back(c);
    TaskMsg task{.kind = gradient_ ? TaskKind::kGradient : TaskKind::kLocalTrain,
                 .clients = participants,
                 .batch = gradient_ ? s_.sgd_batch : s_.local_batch,
                 .steps = s_.local_steps,
                 .epochs = s_.local_epochs,
                 .lr = s_.optimizer.lr.at(int64_t(engine.round)),  // the clients' rate
                 .momentum = s_.optimizer.sgd.momentum,
                 .drift = drift_};
    const WireMessage m =
        scaffold_
            ? encode_with_control(std::move(task), engine.envelope())
            : engine.encode_model_task(
                  task, std::make_shared<const std::vector<float>>(run_.params), engine.envelope());
    model_bytes_ = 0;  // the model as it goes: raw or encoded
    const auto frames = m.spans();
    for (size_t i = 2; i < frames.size(); ++i) model_bytes_ += frames[i].size();
    const auto t_send = Clock::now();
    for (const auto& id : engine.order)  // a delta downlink keeps every replica in step
      if (!engine.lost.count(id) && (per_peer_.count(id) || engine.downlink_delta()) &&
          !engine.send(id, m) && engine.downlink_delta() && !per_peer_.count(id))
        engine.drop(id, "missed a delta downlink's TASK: its copy of the model fell behind");
    return std::chrono::duration<double>(Clock::now() - t_send).count();
  }

  // SCAFFOLD's TASK: the model and the server control c, raw (the run spec refuses a codec).
  WireMessage encode_with_control(TaskMsg task, const Envelope& e) const {
    const auto both = std::make_shared<const std::array<std::vector<float>, 2>>(
        std::array{run_.params, control_});
    task.vectors = {(*both)[0], (*both)[1]};
    task.control = true;
    return encode(std::move(task), e, both);
  }

  // The raw weights of all the run's clients summed (SCAFFOLD's c weighs every client's c_i).
  double all_clients_weight() const {
    return double(std::accumulate(client_weights_.begin(), client_weights_.end(), uint64_t{0}));
  }

  // FedNova's a_i for every update: the steps its client took, as the client computes them
  // (from the run's seed and the shard's size, not from what the client says), with momentum.
  std::vector<double> fednova_works(std::span<const ClientUpdate> updates, uint64_t round) const {
    std::vector<double> works;
    for (const ClientUpdate& u : updates) {
      const size_t n = run_.manifest.clients.at(u.client).indices.size();
      works.push_back(
          fednova_work(fednova_steps(s_, n, u.client, round), s_.optimizer.sgd.momentum));
    }
    return works;
  }

  // Every sampled client unavailable ([network]) or on a dropped process: no task goes out and
  // the model stays.
  std::string idle_round(RoundRecord& rec, uint64_t round, std::string why) {
    per_peer_.clear();
    rec.participants = rec.received = 0;
    clock_.end_round(rec, round, 0);
    return noise_alone(round, std::move(why));
  }

  // The adaptive clip's step: the share of this round's updates within the clip, its centred
  // count noised (sigma_b, from the stream (seed, "dp-count-noise", round)), moves the clip
  // towards the quantile (core/adaptive_clip.h). Rounds without updates move it too.
  void move_clip(const Engine& engine) {
    const size_t k = draws_per_round(s_, engine.num_clients);
    const double noise =
        s_.privacy.noised() ? count_noise_std(s_.privacy.adaptive, k) *
                                  Rng(s_.seed, "dp-count-noise", 0, uint32_t(engine.round)).normal()
                            : 0.0;
    clip_ = next_clip(clip_, noised_share(within_, aggregated_, noise, k), s_.privacy.adaptive);
  }

  // How many of `updates` have an L2 norm above `bound` (those the clip shortens).
  static uint64_t count_longer(std::span<const ClientUpdate> updates, double bound) {
    return uint64_t(std::ranges::count_if(
        updates, [&](const ClientUpdate& u) { return l2_norm(u.values) > bound; }));
  }

  // A round that aggregated no update: the model stays, but under [privacy]'s noise the noise
  // alone moves it, as the mechanism's output may not tell an empty round from another.
  std::string noise_alone(uint64_t round, std::string why) {
    if (!noise_.stddev) return why + "; the model stays";
    strategy_->apply_noise_only(round, run_.params);
    return why + "; the noise alone moved the model ([privacy])";
  }

  // The round's clients: drawn from all of them, or (network.sample_from = "available") from
  // those available this round and still in the run (a dropped process's are not checked in),
  // whose count the record keeps.
  RoundSample draw(const Engine& engine, RoundRecord& rec) const {
    const size_t k = draws_per_round(s_, engine.num_clients);
    if (!s_.network.sample_available)
      return sample_round(s_.client_sampling, client_weights_, k, s_.seed, engine.round);
    if (engine.all_lost())
      throw RunFailed("every client process has been dropped from the run: none is left to train");
    std::vector<uint32_t> available;
    for (uint32_t c = 0; c < engine.num_clients; ++c)
      if (client_available(s_.network, s_.seed, c, engine.round) &&
          !engine.lost.count(engine.owner.at(c)))
        available.push_back(c);
    rec.available = available.size();
    return sample_round(s_.client_sampling, client_weights_, available, k, s_.seed, engine.round);
  }

  // The updates of the participants whose processes are still in the run; with backup_clients,
  // the first of them to come in: all but that many of the round's `participants` (Chen et al.'s
  // N - b of N: a client of a dropped process is one of the b).
  CollectSpec collect_spec(size_t participants) const {
    CollectSpec spec{.kind = gradient_ ? TaskKind::kGradient : TaskKind::kLocalTrain,
                     .seconds = s_.real_wait_seconds(),
                     .batch = s_.sgd_batch};
    // the update [, its linear part] [, SCAFFOLD's control change]
    spec.floats.assign(1 + drift_ + scaffold_, run_.params.size());
    for (const auto& [id, ids] : per_peer_)
      spec.expected.insert(spec.expected.end(), ids.begin(), ids.end());
    std::sort(spec.expected.begin(), spec.expected.end());
    if (s_.backup_clients > 0) spec.want = quorum(participants);
    return spec;
  }

  // A participant without an update stops the gradient regime (unless configured to go on);
  // otherwise the round goes on with the rest, and a process none of whose updates came is
  // dropped after drop_after_missed_rounds such rounds in a row. SCAFFOLD and a delta downlink
  // drop a process at its first absent update: a lost message leaves its control variate or its
  // model replica out of step with the server's.
  // network.drop_late: the updates in `c` that the simulated clock brings in after wait_seconds
  // (the same inputs as the round's clock: the TASK's bytes, the update's bytes less a drift
  // diagnostic's, and compute) are taken out of it, and returned. Not a miss: the process stays
  // in the run.
  std::vector<uint32_t> leave_out_late(uint64_t round, Collected& c) const {
    if (!s_.network.drop_late || c.got.empty()) return {};
    std::vector<SimulatedClient> in;
    for (const auto& [client, r] : c.got)
      in.push_back(
          {client, model_bytes_, r.in.msg.bytes() - drift_bytes_each(), r.update.compute_seconds});
    const auto at = simulated_reply_seconds(s_.network, s_.seed, round, in);
    std::vector<uint32_t> late;
    for (size_t i = 0; i < in.size(); ++i)
      if (at[i] > s_.wait_seconds) late.push_back(in[i].client);
    for (uint32_t client : late) c.got.erase(client);
    return late;
  }

  // The updates a round of `participants` needs: all but backup_clients of them (at least one).
  size_t quorum(size_t participants) const {
    const auto b = size_t(s_.backup_clients);
    return participants > b ? participants - b : 1;
  }

  // backup_clients: a released client is no miss while its process is heard from (a slow one's
  // late updates keep coming); one silent for wait_seconds counts toward its drop as any miss
  // does (a process that hangs with its connection open would be released every round and never
  // dropped, nor replaced). The gradient regime stops only when more than b updates are absent
  // or released: a dead or dropped worker is one of the b.
  void count_misses(Engine& engine, const Collected& c, const std::vector<uint32_t>& absent) {
    std::vector<uint32_t> asked;
    for (const auto& [id, clients] : per_peer_)
      asked.insert(asked.end(), clients.begin(), clients.end());
    std::vector<uint32_t> missed = absent;
    for (uint32_t client : c.released)
      if (seconds_since(engine.peers.at(engine.owner.at(client)).last_heard) >= s_.wait_seconds)
        missed.push_back(client);
    const bool strict = scaffold_ || engine.downlink_delta();
    const int limit = strict ? 1 : s_.drop_after_missed_rounds;
    if (!absent.empty()) {
      const std::string what =
          fmt::format("round {}: no update from client(s) {}{}", engine.round + 1,
                      fmt::join(absent, ", "), c.missing_because());
      if (gradient_ && !s_.continue_without_missing &&
          absent.size() + c.released.size() > size_t(s_.backup_clients))
        throw RunFailed(what +
                        " (gradient regime stops; set continue_without_missing = true to go on)");
      engine.log(what + (!c.got.empty()  ? "; continuing with the rest"
                         : noise_.stddev ? "; the noise alone moves the model ([privacy])"
                                         : "; the model stays"));
    }
    engine.count_misses(asked, missed, limit, /*any_absent=*/strict);
    // SCAFFOLD's and a delta downlink's rule, not the config's drop_after_missed_rounds
    const std::string rule =
        scaffold_ ? "local.algorithm = \"scaffold\" drops a process at its first missing update"
        : strict  ? "compression.downlink_delta drops a process at its first missing update"
                  : fmt::format("drop_after_missed_rounds = {}", limit);
    if (engine.all_lost())
      throw RunFailed(fmt::format(
          "round {}: every client process has been dropped from the run ({}): none is left to "
          "train. If they were alive but their rounds take longer than {:g} s (slow links, many "
          "clients a process), raise wait_seconds",
          engine.round + 1, rule, s_.real_wait_seconds()));
  }

  void record(RoundRecord& rec, const Collected& c, const std::vector<uint32_t>& absent,
              const std::vector<ClientUpdate>& updates, const std::vector<ClientUpdate>& linear,
              size_t participants) const {
    // Diagnostics are measurements, not part of the round: computed after its clock stops.
    const UpdateDiagnostics diag = diagnose_updates(updates);
    std::vector<ClientRecord> clients;
    double loss_sum = 0, samples = 0;
    for (const auto& [client, r] : c.got) {
      const UpdateMsg& u = r.update;
      clients.push_back({client, r.process, r.in.msg.bytes(), u.compute_seconds,
                         u.samples_processed, u.parameter_bytes, u.activation_bytes,
                         u.loss_sum / std::max<double>(1.0, double(u.samples_processed)),
                         diag.norms[clients.size()]});
      if (!sampled_weights_.empty()) clients.back().weight = sampled_weights_.at(client);
      // a mean over the passes made: local steps and epochs see other than n_k samples
      loss_sum += u.loss_sum;
      samples += double(u.samples_processed);
    }
    rec.participants = participants;
    rec.received = c.got.size();
    rec.missing = absent;
    if (samples > 0) rec.train_loss = loss_sum / samples;
    rec.bytes_down_per_task = model_bytes_;
    rec.clients = std::move(clients);
    rec.mean_pairwise_cosine = diag.mean_pairwise_cosine;
    rec.gradient_diversity = diag.gradient_diversity;
    if (drift_ && !updates.empty()) {
      rec.update_drift = update_drift(updates, linear, applied_weighting_);
      rec.diagnostic_bytes_up = linear.size() * drift_bytes_each();
    }
  }

  // diagnostics.drift: each update carries its linearized twin, a measurement that neither the
  // byte counts nor the simulated clock (NetworkClock::end_round) take as the round's traffic,
  // so turning it on changes no late client and no model.
  uint64_t drift_bytes_each() const { return drift_ ? run_.params.size() * sizeof(float) : 0; }

  RunContext& run_;
  const RunSpec& s_;
  const bool gradient_, drift_, scaffold_;
  std::vector<float> control_ = std::vector<float>(run_.params.size(), 0.0f);  // SCAFFOLD's c
  // For checkpoints: SCAFFOLD's copy of every client's c_i (the sum of the changes it sent), and
  // the error-feedback residuals of the last pull_state
  ClientState clients_;
  static constexpr std::string_view kClientControl = "scaffold.c_i.";
  static constexpr std::string_view kClientResidual = "feedback.e_i.";
  const Weighting applied_weighting_;  // the strategy's: `weighting`, or kSum under a scheme
  // [privacy]: the clip this round (adaptive: it moves), the first round's noise, and how many
  // of this round's updates were no longer than the clip
  double clip_ = s_.privacy.clip_norm;
  const AggregateNoise noise_ = privacy_noise(s_, run_.manifest.clients.size(), clip_);
  size_t within_ = 0, aggregated_ = 0;
  std::unique_ptr<Strategy> strategy_;
  std::vector<uint64_t> client_weights_;        // every client's raw weight: n_k, or 1
  std::map<uint32_t, double> sampled_weights_;  // a scheme's weight for each of this round's draws
  std::map<std::string, std::vector<uint32_t>> per_peer_;  // this round's tasks per process
  uint64_t model_bytes_ = 0;  // the model frame of this round's TASK, as sent
  NetworkClock clock_{s_.network, s_.seed, s_.wait_seconds};  // [network]: the rounds' time axis
  bool said_over_deadline_ = false;  // the warning that the deadline capped a simulated round
  bool said_median_ = false;         // why Krum fell back to the median, said in full once
};

}  // namespace

std::unique_ptr<Plan> make_sync_plan(RunContext& run) { return std::make_unique<SyncPlan>(run); }

}  // namespace fedpar
