// The `pipeline` topology's server side as a plan: the stages' rendezvous (each hears where its
// neighbours listen), then per round a small TASK to every stage and one report back; when the
// model is to be evaluated or saved, every stage sends its slice and the server puts the model
// together. Activations and their gradients never pass through the server. See plan.h and
// docs/topologies.md#pipeline.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/check.h"
#include "core/stage.h"
#include "server/plan.h"
#include "server/rendezvous.h"

namespace fedpar {
namespace {

class PipelinePlan final : public Plan {
 public:
  explicit PipelinePlan(RunContext& run)
      : run_(run),
        s_(run.s),
        slices_(
            stage_slices(s_.model, run.data.train.shape, run.data.train.num_classes,
                         pipeline_split(s_.model, run.data.train.shape, run.data.train.num_classes,
                                        s_.processes, s_.pipeline.split))) {
    const size_t n = run_.manifest.clients.at(0).indices.size();
    batch_ = s_.sgd_batch > 0 ? std::min<int64_t>(s_.sgd_batch, int64_t(n)) : int64_t(n);
    if (batch_ < s_.pipeline.micro_batches)
      throw Error(fmt::format("a batch of {} samples cannot make pipeline.micro_batches = {}",
                              batch_, s_.pipeline.micro_batches));
  }

  const char* topology() const override { return "pipeline"; }

  void begin(Engine& engine) override {
    const std::vector<std::string> at = collect_endpoints(engine, s_.wait_seconds);
    const int64_t p = int64_t(engine.order.size());
    for (int64_t stage = 0; stage < p; ++stage) {
      RingAssignmentMsg a{stage, p, stage + 1 < p ? at[size_t(stage + 1)] : "",
                          stage > 0 ? at[size_t(stage - 1)] : ""};
      engine.send(engine.order[size_t(stage)], encode(a, engine.envelope()));
    }
    std::vector<std::string> sizes;
    for (const ParamSlice& s : slices_) sizes.push_back(fmt::format("{}", s.size));
    engine.log(
        fmt::format("pipeline of {} stages ({} parameters each), {} schedule, {} "
                    "micro-batch(es) of a batch of {}: {}",
                    p, fmt::join(sizes, " + "), pipe_schedule_name(s_.pipeline.schedule),
                    s_.pipeline.micro_batches, batch_, fmt::join(at, " -> ")));
  }

  std::string round(Engine& engine, RoundRecord& rec) override {
    const auto t0 = Clock::now();
    const int r = int(engine.round);
    const bool need_params = model_due(s_, r);
    send_tasks(engine, need_params);
    const Collected c = engine.collect(report_spec(engine, need_params));
    if (!c.missing.empty())
      throw Error(fmt::format(
          "round {}: no report from stage(s) {} within {} s{} (did it die? the pipeline cannot go "
          "on without it)",
          r + 1, fmt::join(c.missing, ", "), c.waited, c.got.empty() ? "" : " of the others'"));
    if (need_params)
      for (const auto& [stage, reply] : c.got) {
        const auto v = reply.update.vectors[0];
        std::copy(v.begin(), v.end(), run_.params.begin() + long(slices_[stage].offset));
      }
    record(rec, c, std::chrono::duration<double>(Clock::now() - t0).count());
    return fmt::format("{} stages", c.got.size());
  }

 private:
  // The starting model goes out once, with the first TASK (each stage keeps its slice).
  void send_tasks(Engine& engine, bool need_params) {
    const auto start =
        engine.round == 0 ? std::make_shared<const std::vector<float>>(run_.params) : nullptr;
    for (const auto& id : engine.order) {
      TaskMsg task{.kind = TaskKind::kPipeline, .batch = batch_, .send_params = need_params};
      if (start) task.vectors = {*start};
      engine.send(id, encode(task, engine.envelope(), start));
    }
  }

  // One report per stage. The stages finish a batch together, so once one has reported the
  // others have at most the links' deadline.
  CollectSpec report_spec(const Engine& engine, bool need_params) const {
    CollectSpec spec{.kind = TaskKind::kPipeline,
                     .key = CollectSpec::Key::kRank,
                     .seconds = s_.wait_seconds,
                     .errors_are_fatal = true};
    spec.expected = engine.all_ranks();
    if (s_.pipeline.deadline_seconds < s_.wait_seconds)
      spec.after_first = s_.pipeline.deadline_seconds;
    spec.accept = [this, need_params](const Reply& r) -> std::string {
      const size_t want = need_params ? slices_.at(r.key).size : 0;
      if (r.update.vectors.size() != (need_params ? 1u : 0u) ||
          (need_params && r.update.vectors[0].size() != want))
        return fmt::format(
            "report with {} vector(s), expected {}", r.update.vectors.size(),
            need_params ? fmt::format("this stage's {} parameters", want) : std::string("none"));
      return "";
    };
    return spec;
  }

  void record(RoundRecord& rec, const Collected& c, double seconds) const {
    double loss_sum = 0;
    std::vector<WorkerRecord> workers;
    for (const auto& [stage, reply] : c.got) {
      const UpdateMsg& u = reply.update;
      loss_sum += u.loss_sum;  // only the last stage takes the loss
      workers.push_back({stage, u.compute_seconds, u.allreduce_seconds, u.ring_bytes_sent,
                         u.ring_bytes_received, u.parameter_bytes, u.activation_bytes,
                         reply.in.msg.bytes()});
    }
    rec.participants = rec.received = 1;
    rec.train_loss = loss_sum / double(batch_);
    rec.samples_processed = double(batch_);
    rec.workers = std::move(workers);
    rec.wait_seconds = seconds;
  }

  RunContext& run_;
  const RunSpec& s_;
  const std::vector<ParamSlice> slices_;
  int64_t batch_ = 0;
};

}  // namespace

std::unique_ptr<Plan> make_pipeline_plan(RunContext& run) {
  return std::make_unique<PipelinePlan>(run);
}

}  // namespace fedpar
