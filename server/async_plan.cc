// The `async` regime as a plan: a parameter server without a barrier. Every virtual client always
// holds a task; each gradient is applied the moment it arrives, and its sender gets the newest
// model back. An update carries the model version it was computed on (the TASK's header round); its
// staleness is the number of updates applied since. updates.jsonl logs every arrival in order
// (client, version, batch draw, staleness, whether applied, the learning rate used): `fedpar
// replay` recomputes the run from it bit for bit. A "round" here is num_clients applied updates.
// With [network] mode = "simulated" the updates are applied in the order they reach the server on
// the simulated clock (core/async_arrivals.h), not in the order the real ones came in.
// A task unanswered for wait_seconds (its TASK or UPDATE lost on an emulated link, a hung
// process) is sent again on the newest model; a process whose tasks went unanswered
// drop_after_missed_rounds times in a row is dropped from the run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/async_arrivals.h"
#include "core/check.h"
#include "server/plan.h"
#include "server/strategy.h"

namespace fedpar {
namespace {

class AsyncPlan final : public Plan {
 public:
  explicit AsyncPlan(RunContext& run)
      : run_(run),
        s_(run.s),
        log_(run.out.path() / "updates.jsonl"),
        sgd_(s_.optimizer.sgd),
        current_(std::make_shared<const std::vector<float>>(run.params)) {}

  const char* topology() const override { return "async"; }

  void begin(Engine& engine) override {
    engine.await_ready();  // the elapsed clock starts with every process's data loaded
    t_start_ = Clock::now();
  }

  // The tasks sent this round, per process (each client's first in round 1).
  std::map<std::string, std::vector<uint32_t>> tasks(const Engine&) const override { return sent_; }

  std::string round(Engine& engine, RoundRecord& rec) override {
    const auto t0 = Clock::now();
    sent_.clear();
    // the first tasks go out within round 1, so that its record counts their bytes
    if (outstanding_.empty() && draws_.empty())
      for (uint32_t c = 0; c < engine.num_clients; ++c) dispatch(engine, c);
    Tally t;
    const double sim_start = sim_now_;
    while (t.applied < engine.num_clients) {
      if (arrivals_) {  // the simulated clock's next update, once it is decided
        if (const auto next = arrivals_->next()) {
          auto held = held_.extract(next->client);
          arrivals_->applied(next->client);
          sim_now_ = next->arrival;
          apply(engine, held.mapped().got.begin()->second, t);
          continue;
        }
      }
      Collected c = engine.collect(one_update(engine));
      if (!arrivals_) {
        if (!c.got.empty()) apply(engine, c.got.begin()->second, t);
        resend_expired(engine, t);
        continue;
      }
      if (c.got.empty())  // the simulated clock waits for every update: none is ever lost
        throw RunFailed(fmt::format("async: no update within {} s (clients {} hold tasks)",
                                    s_.wait_seconds, fmt::join(holders(), ", ")));
      const auto& [client, r] = *c.got.begin();
      arrivals_->computed(client, r.update.compute_seconds, r.in.msg.bytes());
      held_.emplace(client, std::move(c));  // (moving the map keeps the reply where it is)
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    busy_seconds_ += seconds;  // the training time, evaluations left out
    const uint64_t tau_max = *std::max_element(t.taus.begin(), t.taus.end());
    double tau_mean = 0;
    for (uint64_t tau : t.taus) tau_mean += double(tau) / double(t.taus.size());
    rec.updates_applied = t.applied;
    rec.updates_rejected = t.rejected;
    rec.model_version = version_;
    rec.staleness_mean = tau_mean;
    rec.staleness_max = tau_max;
    if (t.samples > 0) rec.train_loss = t.loss_sum / t.samples;
    rec.samples_processed = t.processed;
    rec.wait_seconds = seconds;
    rec.elapsed_seconds = busy_seconds_;
    if (!arrivals_) rec.tasks_resent = t.resent;  // simulated links lose nothing
    if (arrivals_) {
      rec.simulated_seconds = sim_now_ - sim_start;
      rec.simulated_time = sim_now_;
    }
    return fmt::format(
        "{} updates (staleness mean {:.2f}, max {}, {} rejected{})", t.applied, tau_mean, tau_max,
        t.rejected,
        t.resent.empty() ? ""
                         : fmt::format("; tasks sent again: client {}", fmt::join(t.resent, ", ")));
  }

 private:
  struct Outstanding {
    uint64_t version, draw;
    Clock::time_point sent;
  };
  struct Tally {
    uint64_t applied = 0, rejected = 0;
    double loss_sum = 0, samples = 0, processed = 0;  // processed: rejected updates' samples too
    std::vector<uint64_t> taus;
    std::vector<uint32_t> resent;  // a client each time its task was sent again
  };

  // Client c's next task: a gradient of batch draw `draws_[c]` on the current model.
  void dispatch(Engine& engine, uint32_t c) { send_task(engine, c, draws_[c]++); }

  void send_task(Engine& engine, uint32_t c, uint64_t draw) {
    TaskMsg task{.kind = TaskKind::kGradient,
                 .clients = {c},
                 .batch = s_.sgd_batch,
                 .steps = 1,
                 .epochs = 0,
                 .lr = s_.optimizer.lr.at(int64_t(version_)),
                 .momentum = 0.0,
                 .drift = false,
                 .draw = draw};
    // the header names the client, so its process can skip a task sent again behind this one
    const WireMessage m = engine.encode_model_task(task, current_, {c, engine.run_id, version_});
    engine.send(engine.owner[c], m);
    sent_[engine.owner[c]].push_back(c);
    outstanding_[c] = {version_, draw, Clock::now()};
    if (arrivals_) arrivals_->dispatch(c, draw, sim_now_, m.bytes());
  }

  // The next update from any client that holds a task, computed on the version it was given.
  CollectSpec one_update(const Engine& engine) {
    CollectSpec spec{.kind = TaskKind::kGradient,
                     .want = 1,
                     .seconds = arrivals_ ? s_.wait_seconds : until_a_task_expires(engine),
                     .check_round = false,
                     .batch = s_.sgd_batch,
                     .floats = {run_.params.size()}};
    spec.expected = engine.all_clients();
    spec.accept = [this](const Reply& r) -> std::string {
      const auto it = outstanding_.find(r.key);
      if (it != outstanding_.end() && it->second.version == r.in.parsed.header.round) return "";
      return fmt::format("client {} holds no task on model version {}", r.key,
                         r.in.parsed.header.round);
    };
    spec.withdrawn = [this, &engine](uint32_t c, uint64_t version) {  // (a task sent again
      const auto it = outstanding_.find(c);                           // as it was is wanted)
      if (!withdrawn_.count({c, version}) ||
          (it != outstanding_.end() && it->second.version == version))
        return false;
      heard_[engine.owner.at(c)] = Clock::now();  // late, but its process is there
      return true;
    };
    return spec;
  }

  // A task expires once it and its process waited wait_seconds (a process serving its clients'
  // tasks one after another is heard between them; one slower than that answers late, and one
  // more task each time keeps its queue from growing), or at once when its process answered a
  // task sent after it: a process answers in order, so this one's TASK or UPDATE was lost.
  Clock::time_point expires(const Engine& engine, uint32_t c, const Outstanding& o) const {
    if (lost_.count(c)) return o.sent;
    const auto h = heard_.find(engine.owner.at(c));
    const Clock::time_point from = h == heard_.end() ? o.sent : std::max(o.sent, h->second);
    return from + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(std::min(s_.wait_seconds, 1e9)));
  }

  // The seconds until the first task expires (then it is sent again).
  double until_a_task_expires(const Engine& engine) const {
    double least = s_.wait_seconds;
    for (const auto& [c, o] : outstanding_)
      least = std::min(least,
                       std::chrono::duration<double>(expires(engine, c, o) - Clock::now()).count());
    return std::max(least, 0.001);
  }

  void apply(Engine& engine, const Reply& r, Tally& t) {
    const uint32_t c = r.key;
    const Outstanding o = outstanding_.at(c);
    outstanding_.erase(c);
    const std::string& process = engine.owner.at(c);
    unanswered_[process] = 0;
    heard_[process] = Clock::now();
    for (const auto& [k, other] : outstanding_)  // it answers in order: these were lost
      if (engine.owner.at(k) == process && other.sent < o.sent) lost_.insert(k);
    // it answers in order: no answer to a task it was given before this one can follow
    std::erase_if(withdrawn_, [&](const auto& w) { return w.first == c && w.second < o.version; });
    t.processed += double(r.update.num_samples);
    const uint64_t tau = version_ - o.version;
    const bool accept = s_.staleness_bound == 0 || tau <= uint64_t(s_.staleness_bound);
    // the schedule counts applied updates: this one would be number version_
    const float base = s_.optimizer.lr.at(int64_t(version_));
    const float lr = s_.staleness_lr ? base / float(std::max<uint64_t>(1, tau)) : base;
    if (accept) {
      sgd_.step(run_.params, r.update.vectors[0], lr);
      ++version_;
      current_ = std::make_shared<const std::vector<float>>(run_.params);
      ++t.applied;
      t.taus.push_back(tau);
      t.loss_sum += r.update.loss_sum;
      t.samples += double(r.update.num_samples);
    } else {
      ++t.rejected;
      engine.log(fmt::format("rejected client {}'s update: staleness {} > bound {}", c, tau,
                             s_.staleness_bound));
    }
    nlohmann::json line = {
        {"seq", seq_++},
        {"client", c},
        {"computed_on", o.version},
        {"draw", o.draw},
        {"staleness", tau},
        {"applied", accept},
        {"lr", lr},
        {"version_after", version_},
        {"compute_seconds", r.update.compute_seconds},
        {"seconds", std::chrono::duration<double>(Clock::now() - t_start_).count()}};
    if (arrivals_) line["simulated_seconds"] = sim_now_;  // when it reached the server
    log_.write(line);
    dispatch(engine, c);
  }

  // A task that expired (above) is presumed lost: its TASK or UPDATE was dropped on a lossy
  // link, or its process died or hangs (each answer is awaited only until another client's
  // comes, so no deadline would notice), or it is slower than the deadline (as in a synchronous
  // round, its answers then come too late to count). It is sent again:
  // on the newest model as the next batch draw, or, where no update was applied since, as the
  // same task (the same draw, so either answer is the same work); the first answer counts and
  // the others are dropped without a word. A process whose clients' tasks expired
  // drop_after_missed_rounds times each in a row (none answered in between) is dropped, said in
  // the log and summary.json's hosts, and the run goes on with the others. (Simulated arrivals
  // lose nothing and wait for every client's update.)
  void resend_expired(Engine& engine, Tally& t) {
    std::vector<uint32_t> expired;
    for (const auto& [c, o] : outstanding_)
      if (Clock::now() >= expires(engine, c, o)) expired.push_back(c);
    for (uint32_t c : expired) {
      const auto it = outstanding_.find(c);
      if (it == outstanding_.end()) continue;  // its process was dropped a moment ago
      const Outstanding o = it->second;
      lost_.erase(c);
      const std::string& id = engine.owner.at(c);
      const auto& mine = engine.peers.at(id).clients;
      if (++unanswered_[id] >= uint64_t(s_.drop_after_missed_rounds) * mine.size()) {
        engine.drop(id, fmt::format("left {} task(s) of its {} client(s) unanswered in a row, each "
                                    "for wait_seconds = {:g} s (drop_after_missed_rounds = {} "
                                    "each): it died, hangs, is too slow, or its messages were lost",
                                    unanswered_[id], mine.size(), s_.wait_seconds,
                                    s_.drop_after_missed_rounds));
        for (uint32_t k : mine) outstanding_.erase(k), lost_.erase(k);
        continue;
      }
      withdrawn_.insert({c, o.version});
      t.resent.push_back(c);
      if (o.version == version_)
        send_task(engine, c, o.draw);
      else
        dispatch(engine, c);
    }
    if (engine.all_lost())
      throw RunFailed("every client process has been dropped from the run: none is left to train");
  }

  std::vector<uint32_t> holders() const {
    std::vector<uint32_t> v;
    for (const auto& [c, o] : outstanding_) v.push_back(c);
    return v;
  }

  RunContext& run_;
  const RunSpec& s_;
  JsonlWriter log_;
  HostSgd sgd_;  // each update applied alone, at its own learning rate
  std::shared_ptr<const std::vector<float>> current_;
  std::map<uint32_t, Outstanding> outstanding_;
  std::map<uint32_t, uint64_t> draws_;  // tasks sent per client: names its next batch draw
  std::map<std::string, std::vector<uint32_t>> sent_;  // this round's tasks, per process
  std::set<std::pair<uint32_t, uint64_t>> withdrawn_;  // (client, version) sent again
  std::map<std::string, uint64_t> unanswered_;  // per process: expired tasks since its last answer
  std::map<std::string, Clock::time_point> heard_;  // per process: its last update, late too
  std::set<uint32_t> lost_;  // clients whose task a later one's answer showed lost
  uint64_t version_ = 0, seq_ = 0;
  Clock::time_point t_start_;
  double busy_seconds_ = 0;
  // [network] simulated: the updates' order and time on the simulated clock; the updates in but
  // not yet due (each a Collected of one reply, which owns its message)
  std::optional<AsyncArrivals> arrivals_ =
      s_.network.mode == NetworkMode::kSimulated
          ? std::optional<AsyncArrivals>(std::in_place, s_.network, s_.seed)
          : std::nullopt;
  std::map<uint32_t, Collected> held_;
  double sim_now_ = 0;
};

}  // namespace

std::unique_ptr<Plan> make_async_plan(RunContext& run) { return std::make_unique<AsyncPlan>(run); }

}  // namespace fedpar
