// The model-parallel topologies' server side as one plan: `pipeline` (each process a stage, a
// contiguous slice of the layers) and `tensor` (each process a rank holding column/row slices of
// the dense pairs), each optionally replicated data-parallel ([grid] data = d: process i is part
// i % parts of replica i / parts). The rendezvous tells every process its neighbours (pipeline:
// previous and next stage; tensor: the next rank of its ring) and, in a grid, the same part of
// the next replica; then per round a small TASK to every process and one report back. When the
// model is to be evaluated or saved, replica 0's parts send their parameters and the server puts
// the model together; in a grid the replicas' hashes are compared part by part. Activations and
// gradients never pass through the server. See plan.h and docs/pipeline.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "core/check.h"
#include "core/network.h"
#include "core/simulated_parallel.h"
#include "core/stage.h"
#include "core/tensor_shard.h"
#include "server/plan.h"
#include "server/rendezvous.h"
#include "server/worker_velocity.h"

namespace fedpar {
namespace {

class ModelParallelPlan final : public Plan {
 public:
  explicit ModelParallelPlan(RunContext& run)
      : run_(run),
        s_(run.s),
        pipeline_(s_.topology == Topology::kPipeline),
        parts_(s_.model_parts()),
        replicas_(s_.grid_data) {
    const Shape in = run.data.train.shape;
    const int classes = run.data.train.num_classes;
    if (pipeline_) {
      const auto ranges = [&] {
        try {
          return pipeline_split(s_.model, in, classes, parts_, s_.pipeline.split);
        } catch (const Error& e) {  // the stages come from processes: say so
          throw Error(fmt::format(
              "{} (the stages: processes = {}{})", e.what(), s_.processes,
              replicas_ > 1 ? fmt::format(" / grid.data = {}", replicas_) : std::string()));
        }
      }();
      slices_ = stage_slices(s_.model, in, classes, ranges);
      split_ = describe_stages(s_.model, in, classes, ranges);
    } else {  // each rank's layout, to place its slices in the model (on the host)
      layout_backend_ = make_backend("cpu");
      for (int r = 0; r < parts_; ++r)
        shards_.push_back(
            std::make_unique<TensorShard>(*layout_backend_, s_.model, in, classes, r, parts_));
      split_ = fmt::format("{}", fmt::join(tensor_split(s_.model, in, classes, parts_), "; "));
    }
    size_t smallest = SIZE_MAX, largest = 0;
    for (const auto& c : run_.manifest.clients) {
      smallest = std::min(smallest, c.indices.size());
      largest = std::max(largest, c.indices.size());
    }
    if (s_.sgd_batch == 0 && smallest != largest)
      throw Error(fmt::format(
          "full-batch steps over {} replicas need equal shards ({} to {} samples here): set "
          "sgd.batch",
          replicas_, smallest, largest));
    // Every replica steps on one batch size: the smallest shard's would be a smaller batch than
    // data parallelism's, where each client takes min(batch, its shard) (it was, silently).
    if (s_.sgd_batch > int64_t(smallest) && smallest != largest)
      throw Error(fmt::format(
          "sgd.batch = {} is more than the smallest of the {} replicas' shards ({} to {} samples "
          "here), and every replica steps on the same batch: lower sgd.batch to {} or less, or "
          "give the replicas equal shards",
          s_.sgd_batch, replicas_, smallest, largest, smallest));
    batch_ =
        s_.sgd_batch > 0 ? std::min<int64_t>(s_.sgd_batch, int64_t(smallest)) : int64_t(smallest);
    if (pipeline_ && batch_ < s_.pipeline.micro_batches)
      throw Error(fmt::format("a batch of {} samples cannot make pipeline.micro_batches = {}",
                              batch_, s_.pipeline.micro_batches));
  }

  const char* topology() const override { return pipeline_ ? "pipeline" : "tensor"; }
  // what a process is called in messages
  const char* rank_name() const { return replicas_ > 1 ? "process" : pipeline_ ? "stage" : "rank"; }
  bool holds_model_after(int r) const override { return model_due(s_, r); }

  // Replica 0's parts, and on checkpoint rounds their optimizer velocities, put together as the
  // whole model's are the run's state (the other replicas hold the same bits: the hash checks);
  // a resumed run's first task gives every part its slices of both.
  std::string checkpoint_refusal() const override {
    return s_.optimizer.precision == Precision::kF16 ? "fp16's loss scale lives in the workers"
                                                     : "";
  }
  void save_state(Checkpoint& c) const override {
    velocity_.save(c);
    clock_.save(c);
  }
  void load_state(const Checkpoint& c) override {
    velocity_.load(c, run_.params.size());
    clock_.load(c);
  }

  void begin(Engine& engine) override {
    const std::vector<WorkerEndpoints> at =
        collect_endpoints(engine, s_.start_wait_seconds, s_.security.on(), replicas_ > 1);
    const int64_t p = parts_, d = replicas_;
    auto process = [p](int64_t replica, int64_t part) { return size_t(replica * p + part); };
    for (int64_t i = 0; i < int64_t(engine.order.size()); ++i) {
      const int64_t replica = i / p, part = i % p;
      RingAssignmentMsg a{.rank = part, .size = p, .replica = replica, .replicas = d};
      a.keys = link_keys(at);
      // a pipeline's last stage has no next and its first no previous; a tensor group is a ring
      const bool has_next = !pipeline_ || part + 1 < p, has_prev = pipeline_ && part > 0;
      if (has_next) {
        const WorkerEndpoints& w = at[process(replica, (part + 1) % p)];
        a.next = w.link, a.next_key = w.key;
      }
      if (has_prev) {
        const WorkerEndpoints& w = at[process(replica, part - 1)];
        a.prev = w.link, a.prev_key = w.key;
      }
      if (d > 1) {
        const WorkerEndpoints& w = at[process((replica + 1) % d, part)];
        a.replica_next = w.replica, a.replica_next_key = w.key;
      }
      engine.send(engine.order[size_t(i)], encode(a, engine.envelope()));
    }
    std::vector<std::string> sizes;
    for (int k = 0; k < parts_; ++k) sizes.push_back(fmt::format("{}", part_size(k)));
    const std::string grid =
        d > 1 ? fmt::format(" x {} data-parallel replicas (a ring across each part's)", d) : "";
    if (pipeline_)
      engine.log(fmt::format(
          "pipeline of {} stages ({}: {} parameters){}, {} schedule, {} micro-batch(es) of a "
          "batch of {}",
          p, split_, fmt::join(sizes, " + "), grid, pipe_schedule_name(s_.pipeline.schedule),
          s_.pipeline.micro_batches, batch_));
    else
      engine.log(fmt::format(
          "tensor parallelism over {} rank(s) ({} parameters per rank){}, batch {}; per rank: {}",
          p, fmt::join(sizes, ", "), grid, batch_, split_));
  }

  std::string round(Engine& engine, RoundRecord& rec) override {
    const auto t0 = Clock::now();
    const auto bytes_before = engine.bytes_snapshot();
    const int r = int(engine.round);
    const bool need_params = model_due(s_, r);
    const bool need_state = checkpoint_due(s_, r);
    const bool check = replicas_ > 1 && hash_due(s_, r);
    send_tasks(engine, need_params, need_state, check);
    const Collected c = engine.collect(report_spec(engine, need_params, check));
    if (!c.missing.empty()) throw RunFailed(engine.no_report(rank_name(), c, topology()));
    if (need_params)
      for (const auto& [process, reply] : c.got)
        if (int(process) < parts_) place(int(process), reply.update.vectors[0], run_.params);
    if (need_state) {  // the parts' velocities, once the optimizer has them
      velocity_.whole.clear();
      for (const auto& [process, reply] : c.got)
        if (int(process) < parts_ && reply.update.vectors.size() == 2) {
          velocity_.whole.resize(run_.params.size(), 0.0f);
          place(int(process), reply.update.vectors[1], velocity_.whole);
        }
    }
    if (check) check_replicas(c, r);
    record(rec, c, check, std::chrono::duration<double>(Clock::now() - t0).count());
    // bytes that measure or save, not train: the parts sent for the server to evaluate or
    // checkpoint (a parameter server holds its model), and a simulated step's timings
    uint64_t extra = 0;
    for (const auto& [process, reply] : c.got)
      extra +=
          reply.update.vector_bytes() +
          (s_.network.mode == NetworkMode::kSimulated ? simulation_extra_bytes(reply.update) : 0);
    if (extra) rec.diagnostic_bytes_up = extra;
    if (need_params) rec.model_sent_up = true;
    if (s_.network.mode == NetworkMode::kSimulated) {
      clock_.add_simulated_seconds(
          rec, simulated_seconds(engine, c, engine.per_process_bytes(bytes_before, {}), rec));
    }
    return fmt::format("{} processes{}", c.got.size(), check ? ", replicas identical" : "");
  }

 private:
  size_t part_size(int part) const {
    return pipeline_ ? slices_[size_t(part)].size : shards_[size_t(part)]->num_params();
  }

  // Part `part`'s values (parameters, velocity) into their places in the whole model's `whole`.
  void place(int part, std::span<const float> v, std::vector<float>& whole) const {
    if (pipeline_)
      std::copy(v.begin(), v.end(), whole.begin() + long(slices_[size_t(part)].offset));
    else
      shards_[size_t(part)]->place_in_whole(v, whole);
  }

  // Part `part` of a vector laid out as the whole model: a stage's slice, a rank's pieces.
  std::vector<float> part_of(int part, std::span<const float> whole) const {
    if (!pipeline_) return shards_[size_t(part)]->part_of_whole(whole);
    const ParamSlice& sl = slices_[size_t(part)];
    return {whole.begin() + long(sl.offset), whole.begin() + long(sl.offset + sl.size)};
  }

  // The starting model (and a resumed run's velocity) goes out once, with the first TASK, each
  // process getting its own part alone (a part's memory and link carry its share, not the
  // model); the parts come back from replica 0 only.
  void send_tasks(Engine& engine, bool need_params, bool need_state, bool check) {
    const auto start = velocity_.first_task(run_.params);
    for (size_t i = 0; i < engine.order.size(); ++i) {
      const bool part_of_replica_0 = int(i) < parts_;
      TaskMsg task{.kind = pipeline_ ? TaskKind::kPipeline : TaskKind::kTensor,
                   .batch = batch_,
                   .send_state = need_state && part_of_replica_0,
                   .hash = check,
                   .send_params = need_params && part_of_replica_0};
      std::shared_ptr<std::vector<std::vector<float>>> mine;
      if (start) {
        mine = std::make_shared<std::vector<std::vector<float>>>();
        for (const auto& v : *start) mine->push_back(part_of(int(i) % parts_, v));
        task.vectors.assign(mine->begin(), mine->end());
      }
      engine.send(engine.order[i], encode(task, engine.envelope(), mine));
    }
  }

  // One report per process. They finish a batch together, so once one has reported the others
  // have at most the links' deadline.
  CollectSpec report_spec(const Engine& engine, bool need_params, bool check) const {
    CollectSpec spec{.kind = pipeline_ ? TaskKind::kPipeline : TaskKind::kTensor,
                     .key = CollectSpec::Key::kRank,
                     .seconds = s_.wait_seconds,
                     .errors_are_fatal = true,
                     .rank_name = rank_name()};
    spec.expected = engine.all_ranks();
    double deadline = pipeline_ ? s_.pipeline.deadline_seconds : s_.ring_deadline_seconds;
    if (replicas_ > 1) deadline = std::max(deadline, s_.ring_deadline_seconds);  // + replica ring
    if (deadline < s_.wait_seconds) spec.after_first = deadline;
    spec.accept = [this, need_params, check](const Reply& r) -> std::string {
      const bool sends = need_params && int(r.key) < parts_;
      const size_t want = sends ? part_size(int(r.key)) : 0;
      if (check && r.update.hash.empty()) return "report without the hash asked for";
      const size_t ops = 2 * size_t(s_.pipeline.micro_batches);
      if (pipeline_ && s_.network.mode == NetworkMode::kSimulated &&
          r.update.op_seconds.size() != ops)
        return fmt::format("report with {} op times, expected this stage's {} (simulated network)",
                           r.update.op_seconds.size(), ops);
      for (double t : r.update.op_seconds)  // an op longer than the round's deadline: not real
        if (t > s_.wait_seconds)
          return fmt::format("report with an op time of {:g} s, over wait_seconds = {:g}", t,
                             s_.wait_seconds);
      // a rank's ring sends: 2 (t - 1) steps an all-reduce, at most one all-reduce per tensor of
      // the model (a layer's forward and backward)
      const uint64_t per_allreduce = 2 * uint64_t(std::max(parts_ - 1, 0));
      if (!pipeline_ && r.update.ring_steps > 0 &&
          (per_allreduce == 0 || r.update.ring_steps % per_allreduce != 0 ||
           r.update.ring_steps > per_allreduce * run_.model.layout().views().size()))
        return fmt::format("report with {} ring steps, not a count of {}-step all-reduces",
                           r.update.ring_steps, per_allreduce);
      // the part, and on checkpoint rounds its velocity once the optimizer has one
      const auto& vs = r.update.vectors;
      const bool sizes_ok =
          std::all_of(vs.begin(), vs.end(), [&](const auto& v) { return v.size() == want; });
      if (!sizes_ok || vs.size() < (sends ? 1u : 0u) || vs.size() > (sends ? 2u : 0u))
        return fmt::format(
            "report with {} vector(s), expected {}", vs.size(),
            sends ? fmt::format("this part's {} parameters", want) : std::string("none"));
      return "";
    };
    return spec;
  }

  // [network] simulated: each process's step as measured, on its first client's link (in a grid,
  // its replica's client). Its report's bytes leave out the parts replica 0 sent for the server to
  // evaluate or save (a parameter server evaluates its own model without sending it) and the
  // timings sent for this clock.
  double simulated_seconds(const Engine& engine, const Collected& c,
                           const std::vector<ProcessRecord>& bytes, const RoundRecord& rec) const {
    std::vector<SimulatedPart> parts;
    for (uint32_t i = 0; i < uint32_t(engine.order.size()); ++i) {
      const UpdateMsg& u = c.got.at(i).update;
      const uint64_t sent_part = simulation_extra_bytes(u) + u.vector_bytes();
      parts.push_back({.client = engine.peers.at(engine.order[i]).clients.front(),
                       .down_bytes = bytes[i].bytes_down,
                       .up_bytes = bytes[i].bytes_up - std::min(bytes[i].bytes_up, sent_part),
                       .compute_seconds = u.compute_seconds,
                       .op_seconds = u.op_seconds,
                       .op_bytes = u.op_bytes,
                       .ring_bytes = u.ring_bytes_sent,
                       .ring_steps = u.ring_steps,
                       .replica_bytes = u.replica_bytes_sent});
    }
    const double aggregate = rec.aggregate_seconds.value_or(0);
    return pipeline_
               ? simulated_pipeline_seconds(s_.network, s_.seed, engine.round, s_.pipeline.schedule,
                                            s_.pipeline.micro_batches, parts_, parts, aggregate)
               : simulated_tensor_seconds(s_.network, s_.seed, engine.round, parts_, parts,
                                          aggregate);
  }

  // The same part of every replica must hold the same bytes.
  void check_replicas(const Collected& c, int r) const {
    std::vector<std::string> drifted;
    for (int part = 0; part < parts_; ++part) {
      std::map<std::string, std::vector<int>> by_hash;
      for (int rep = 0; rep < replicas_; ++rep)
        by_hash[c.got.at(uint32_t(rep * parts_ + part)).update.hash].push_back(rep);
      if (by_hash.size() > 1) {
        std::vector<std::string> groups;
        for (const auto& [h, reps] : by_hash)
          groups.push_back(fmt::format("{} (replica(s) {})", h, fmt::join(reps, ", ")));
        drifted.push_back(fmt::format("part {}: {}", part, fmt::join(groups, "; ")));
      }
    }
    if (!drifted.empty())
      throw RunFailed(
          fmt::format("round {}: the replicas drifted apart: {}", r + 1, fmt::join(drifted, "; ")));
  }

  void record(RoundRecord& rec, const Collected& c, bool check, double seconds) const {
    double loss_sum = 0;
    std::vector<WorkerRecord> workers;
    // one process per replica computes the loss: the last stage, or rank 0
    const uint32_t loss_part = pipeline_ ? uint32_t(parts_ - 1) : 0;
    for (const auto& [process, reply] : c.got) {
      const UpdateMsg& u = reply.update;
      if (process % uint32_t(parts_) == loss_part) loss_sum += u.loss_sum;
      WorkerRecord w = worker_record(process, reply);
      if (replicas_ > 1) {
        w.replica_seconds = u.replica_seconds;
        w.replica_bytes_sent = u.replica_bytes_sent;
        w.replica_bytes_received = u.replica_bytes_received;
      }
      workers.push_back(w);
    }
    const double samples = double(batch_) * replicas_;
    rec.participants = rec.received = size_t(replicas_);
    rec.train_loss = loss_sum / samples;
    rec.samples_processed = samples;
    rec.workers = std::move(workers);
    rec.replicas_checked = check;
    rec.wait_seconds = seconds;
  }

  RunContext& run_;
  const RunSpec& s_;
  const bool pipeline_;
  const int parts_, replicas_;
  std::vector<ParamSlice> slices_;                    // pipeline: each stage's
  std::unique_ptr<Backend> layout_backend_;           // tensor: holds shards_
  std::vector<std::unique_ptr<TensorShard>> shards_;  // tensor: each rank's layout
  std::string split_;  // which layers each stage holds, or how each tensor rank splits them
  int64_t batch_ = 0;
  WorkerVelocity velocity_{"parts.velocity"};                 // replica 0's parts', put together
  NetworkClock clock_{s_.network, s_.seed, s_.wait_seconds};  // [network] simulated: the steps'
};

}  // namespace

std::unique_ptr<Plan> make_model_parallel_plan(RunContext& run) {
  return std::make_unique<ModelParallelPlan>(run);
}

}  // namespace fedpar
