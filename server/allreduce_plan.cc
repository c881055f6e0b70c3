// The `allreduce` topology's server side as a plan: rendezvous, then per round a small TASK to each
// rank, one report back, replica hash checks, and the model from rank 0 when it is to be evaluated
// or saved. The gradients never pass through the server. With allreduce.elastic, a round whose
// ring broke because a worker died is redone by the others in a ring re-formed without it. See
// plan.h and docs/topologies.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/check.h"
#include "core/device_collective.h"
#include "core/hash.h"
#include "core/network.h"
#include "server/plan.h"
#include "server/rendezvous.h"
#include "server/worker_velocity.h"
#include "transport/mpi_job.h"

namespace fedpar {
namespace {

// What lets a ring go on without a dead worker, said where one stops it
constexpr const char* kElasticHint =
    "; allreduce.elastic = true re-forms the ring without the dead";

class AllReducePlan final : public Plan {
 public:
  // Refuses, before any client is waited for, a backend this process cannot serve.
  explicit AllReducePlan(RunContext& run) : run_(run), s_(run.s) {
    if (s_.ring_backend == RingBackend::kMpi && !mpi_job_active())
      throw Error(
          "allreduce.backend = \"mpi\" sums through MPI, and this server is no rank of an MPI "
          "job: start the server and its clients with mpirun -n P+1 fedpar launch CONFIG "
          "(docs/cluster.md)");
    if (s_.ring_backend == RingBackend::kNccl) nccl();  // makes the ids: says why it cannot
  }

  const char* topology() const override { return "allreduce"; }
  bool holds_model_after(int r) const override { return model_due(s_, r); }

  // Every replica holds the same model and velocity (the hash checks say so): rank 0's, fetched
  // on checkpoint rounds, are the ring's state; a resumed run's first task gives them back.
  std::string checkpoint_refusal() const override {
    if (s_.compression.uplink == "randk" || s_.compression.uplink == "powersgd")
      return "randk and powersgd keep per-worker state in the ring";
    if (s_.optimizer.precision == Precision::kF16) return "fp16's loss scale lives in the workers";
    return "";
  }
  void save_state(Checkpoint& c) const override {
    velocity_.save(c);
    clock_.save(c);
  }
  void load_state(const Checkpoint& c) override {
    velocity_.load(c, run_.params.size());
    clock_.load(c);
  }

  // The ring: every process sends RING with the endpoint it listens on; each then hears its rank
  // (HELLO order), the ring size and its next neighbour's endpoint.
  void begin(Engine& engine) override {
    at_ = collect_endpoints(engine, s_.start_wait_seconds, s_.security.on());
    members_ = engine.all_ranks();  // without those dropped before a resumed run's checkpoint
    std::erase_if(members_, [&](uint32_t p) { return engine.lost.count(engine.order[p]) > 0; });
    form_ring(engine);
  }

  std::string round(Engine& engine, RoundRecord& rec) override {
    const auto t0 = Clock::now();
    const auto bytes_before = engine.bytes_snapshot();
    const int r = int(engine.round);
    const bool check = hash_due(s_, r);
    // Rank 0's replica comes back when the server evaluates or saves it.
    const bool need_params = model_due(s_, r);
    const bool need_state = checkpoint_due(s_, r);
    send_tasks(engine, check, need_params, need_state);
    const Collected c = engine.collect(report_spec(check, need_params));
    if (s_.ring_elastic && !c.missing.empty() && c.missing.size() < members_.size()) {
      reform_without(engine, c.missing);
      return round(engine, rec);  // the survivors redo the round from where it began
    }
    if (!c.missing.empty())
      throw RunFailed(engine.no_report("worker", c, "ring", s_.ring_elastic ? "" : kElasticHint));
    if (!c.failed.empty())  // every worker alive, yet the ring failed: nothing to re-form
      throw RunFailed(fmt::format("round {}: worker {} failed: {}", r + 1, c.failed.begin()->first,
                                  c.failed.begin()->second));
    if (need_params) {
      const auto& vs = c.got.at(members_[0]).update.vectors;
      std::copy(vs[0].begin(), vs[0].end(), run_.params.begin());
      if (need_state)
        velocity_.whole =
            vs.size() == 2 ? std::vector<float>(vs[1].begin(), vs[1].end()) : std::vector<float>{};
    }
    if (check) check_replicas(c, need_params, r);
    record(rec, c, check, std::chrono::duration<double>(Clock::now() - t0).count());
    // the replica rank 0 sends for the server to evaluate or save is not the step's: a parameter
    // server evaluates its own model without sending it (the MB and the clock leave it out)
    const uint64_t replica = need_params ? c.got.at(members_[0]).update.vector_bytes() : 0;
    if (replica) rec.diagnostic_bytes_up = replica;
    if (need_params) rec.model_sent_up = true;
    if (s_.network.mode == NetworkMode::kSimulated) {
      clock_.end_ring_round(
          rec, engine.round,
          simulated_workers(engine, rec, engine.per_process_bytes(bytes_before, {}), replica));
    }
    return fmt::format("{} workers{}", c.got.size(), check ? ", replicas identical" : "");
  }

 private:
  // Rank k of the ring is members_[k]; each hears where its next neighbour listens (and its key).
  void form_ring(Engine& engine) {
    const int64_t n = int64_t(members_.size());
    // allreduce.backend = "nccl": one communicator per ring, its bootstrap root in this process
    const std::string nccl_id =
        s_.ring_backend == RingBackend::kNccl ? nccl_id_hex(nccl().unique_id()) : "";
    std::vector<std::string> ring;
    for (const uint32_t p : members_) ring.push_back(at_[p].link);
    for (int64_t rank = 0; rank < n; ++rank) {
      const WorkerEndpoints& next = at_[members_[size_t((rank + 1) % n)]];
      RingAssignmentMsg a{.rank = rank, .size = n, .next = next.link};
      a.next_key = next.key;
      a.keys = link_keys(at_);
      a.epoch = epoch_;
      a.nccl_id = nccl_id;
      engine.send(engine.order[members_[size_t(rank)]], encode(a, engine.envelope()));
    }
    weight_ = total_weight(engine);
    member_clients_ = 0;
    for (const uint32_t p : members_)
      member_clients_ += engine.peers.at(engine.order[p]).clients.size();
    engine.log(
        fmt::format("ring of {} workers {}: {}{}", n, epoch_ > 0 ? "re-formed" : "formed",
                    fmt::join(ring, " -> "),
                    nccl_id.empty() ? "" : fmt::format(" (summing with {})", nccl().version)));
  }

  // allreduce.elastic: the dead leave the run with their virtual clients; the ring re-forms.
  void reform_without(Engine& engine, const std::vector<uint32_t>& dead) {
    for (const uint32_t p : dead)  // one merely late is told that it is out
      engine.drop(engine.order[p], fmt::format("did not answer round {} in time (the ring "
                                               "re-forms without it)",
                                               engine.round + 1));
    std::erase_if(members_,
                  [&](uint32_t p) { return std::find(dead.begin(), dead.end(), p) != dead.end(); });
    ++epoch_;
    engine.log(fmt::format(
        "round {}: worker(s) {} did not answer (dead?); re-forming the ring with the other {} "
        "and redoing the round without their virtual clients",
        engine.round + 1, fmt::join(dead, ", "), members_.size()));
    form_ring(engine);
  }

  // Sum of the weights the ring divides by: every member's clients' n_k (or 1 each with uniform
  // weighting).
  double total_weight(const Engine& engine) const {
    double t = 0;
    for (const uint32_t p : members_)
      for (const uint32_t c : engine.peers.at(engine.order[p]).clients) {
        const auto n = uint64_t(run_.manifest.clients[c].indices.size());
        t += raw_weight(s_.weighting,
                        s_.sgd_batch > 0 ? std::min<uint64_t>(n, uint64_t(s_.sgd_batch)) : n);
      }
    return t;
  }

  // The starting model (and a resumed run's velocity) goes out once, with the first TASK; later
  // TASKs carry no vector.
  void send_tasks(Engine& engine, bool check, bool need_params, bool need_state) {
    const auto start = velocity_.first_task(run_.params);
    for (size_t rank = 0; rank < members_.size(); ++rank) {
      TaskMsg task{.kind = TaskKind::kAllReduce,
                   .batch = s_.sgd_batch,
                   .total_weight = weight_,
                   .send_state = need_state && rank == 0,
                   .hash = check,
                   .send_params = need_params && rank == 0};
      if (start) task.vectors.assign(start->begin(), start->end());
      engine.send(engine.order[members_[rank]], encode(task, engine.envelope(), start));
    }
  }

  // One report per rank. The ranks leave the all-reduce together, so once one has reported the
  // others have at most the ring's deadline: a rank that died after its part of the ring is found
  // that fast too.
  CollectSpec report_spec(bool check, bool need_params) const {
    CollectSpec spec{.kind = TaskKind::kAllReduce,
                     .key = CollectSpec::Key::kRank,
                     .seconds = s_.wait_seconds,
                     .errors_are_fatal = !s_.ring_elastic,
                     .fatal_hint = kElasticHint};
    spec.expected = members_;
    // Elastic, the survivors' ERRORs come up to a ring deadline after the first answer (each
    // waits that long for its dead neighbour): they get two before one is taken for dead.
    const double after = s_.ring_deadline_seconds * (s_.ring_elastic ? 2 : 1);
    if (after < s_.wait_seconds) spec.after_first = after;
    const size_t params = run_.params.size();
    const uint32_t first = members_[0];
    spec.accept = [check, need_params, params, first](const Reply& r) -> std::string {
      const size_t want = need_params && r.key == first ? 1 : 0;
      if (check && r.update.hash.empty()) return "report without the replica hash asked for";
      // the model, and on checkpoint rounds the velocity once the optimizer has one
      const auto& vs = r.update.vectors;
      const bool sizes_ok =
          std::all_of(vs.begin(), vs.end(), [&](const auto& v) { return v.size() == params; });
      if (!sizes_ok || vs.size() < want || vs.size() > 2 * want)
        return fmt::format("report with {} vector(s), expected {} of {} values", vs.size(), want,
                           params);
      return "";
    };
    return spec;
  }

  // Every replica must hold the same bytes, and rank 0's copy here must match.
  void check_replicas(const Collected& c, bool need_params, int r) const {
    std::map<std::string, std::vector<uint32_t>> by_hash;
    for (const auto& [rank, reply] : c.got) by_hash[reply.update.hash].push_back(rank);
    if (need_params)
      by_hash[hash_hex(hash_bytes(run_.params.data(), run_.params.size() * sizeof(float)))];
    if (by_hash.size() <= 1) return;
    std::vector<std::string> parts;
    for (const auto& [h, ranks] : by_hash)
      parts.push_back(ranks.empty() ? fmt::format("{} (the model rank 0 sent)", h)
                                    : fmt::format("{} (worker(s) {})", h, fmt::join(ranks, ", ")));
    throw RunFailed(
        fmt::format("round {}: the replicas drifted apart: {}", r + 1, fmt::join(parts, "; ")));
  }

  void record(RoundRecord& rec, const Collected& c, bool check, double seconds) const {
    double loss_sum = 0, samples = 0;
    std::vector<WorkerRecord> workers;
    for (const auto& [rank, reply] : c.got) {
      const UpdateMsg& u = reply.update;
      loss_sum += u.loss_sum;
      samples += double(u.num_samples);
      workers.push_back(worker_record(rank, reply));
    }
    rec.participants = rec.received = member_clients_;
    if (samples > 0) rec.train_loss = loss_sum / samples;
    rec.samples_processed = samples;
    rec.workers = std::move(workers);
    rec.replicas_checked = check;
    rec.wait_seconds = seconds;
  }

  // [network] simulated: each worker's links (its first virtual client's profile, and its next
  // neighbour's) and this round's bytes and compute, for the round's simulated seconds; rank 0's
  // report without the `replica_bytes` it carried for the server.
  std::vector<SimulatedWorker> simulated_workers(const Engine& engine, const RoundRecord& rec,
                                                 const std::vector<ProcessRecord>& bytes,
                                                 uint64_t replica_bytes) const {
    std::vector<SimulatedWorker> out;
    const size_t n = members_.size();
    const auto first_client = [&](uint32_t p) {
      return engine.peers.at(engine.order[p]).clients.front();
    };
    for (const WorkerRecord& w : *rec.workers) {
      const auto p = uint32_t(w.process);
      const size_t rank = size_t(std::find(members_.begin(), members_.end(), p) - members_.begin());
      out.push_back({.client = first_client(p),
                     .next_client = first_client(members_[(rank + 1) % n]),
                     .down_bytes = bytes[p].bytes_down,
                     .up_bytes = bytes[p].bytes_up - (p == members_[0] ? replica_bytes : 0),
                     .ring_bytes = w.ring_bytes_sent,
                     .ring_steps = uint32_t(2 * (n - 1)),
                     .compute_seconds = w.compute_seconds});
    }
    return out;
  }

  RunContext& run_;
  const RunSpec& s_;
  NetworkClock clock_{s_.network, s_.seed,
                      s_.wait_seconds};       // [network] simulated: the rounds' time
  std::vector<WorkerEndpoints> at_;           // every process's, in HELLO order
  std::vector<uint32_t> members_;             // the ring's processes (HELLO indices), by rank
  int64_t epoch_ = 0;                         // times the ring re-formed
  double weight_ = 0;                         // total_weight() of the members
  WorkerVelocity velocity_{"ring.velocity"};  // rank 0's, the replicas' own
  size_t member_clients_ = 0;                 // the virtual clients they host
};

}  // namespace

std::unique_ptr<Plan> make_allreduce_plan(RunContext& run) {
  return std::make_unique<AllReducePlan>(run);
}

}  // namespace fedpar
