// The `master` topology as a plan (the single-process DataParallel scheme, across processes): the
// server sends the model; workers return the logits of their slice of the batch; the server takes
// the loss over the whole batch and returns each worker d(loss)/d(its logits); workers return
// parameter gradients, which the server sums (client order), steps and broadcasts. The server
// holds the loss, so it sends and receives N times a worker's traffic. See plan.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/check.h"
#include "core/local_update.h"
#include "core/network.h"
#include "server/plan.h"
#include "server/strategy.h"

namespace fedpar {
namespace {

class MasterPlan final : public Plan {
 public:
  explicit MasterPlan(RunContext& run)
      : run_(run),
        s_(run.s),
        classes_(size_t(run.data.train.num_classes)),
        strategy_(make_gradient_averaging(Weighting::kSum, s_.optimizer.lr, s_.optimizer.sgd)) {}

  const char* topology() const override { return "master"; }

  // The workers keep nothing from one round to the next (the model comes with every forward
  // task): the server's model and optimizer are the whole state.
  std::string checkpoint_refusal() const override { return ""; }
  void save_state(Checkpoint& c) const override {
    strategy_->save_state(c);
    clock_.save(c);
  }
  void load_state(const Checkpoint& c) override {
    strategy_->load_state(c);
    clock_.load(c);
  }

  std::string round(Engine& engine, RoundRecord& rec) override {
    const auto t0 = Clock::now();
    draw_batch(engine);
    // 1. The model out, logits back.
    const auto snapshot = std::make_shared<const std::vector<float>>(run_.params);
    TaskMsg forward{.kind = TaskKind::kForward, .clients = everyone_, .batch = s_.sgd_batch};
    forward.vectors = {*snapshot};
    const WireMessage model = encode(forward, engine.envelope(), snapshot);
    engine.send_all(model);
    const Collected logits =
        collect(engine, TaskKind::kForward, [&](uint32_t c) { return rows_[c].size() * classes_; });
    // 2. The loss over the whole batch, each slice's share of d(mean loss)/d(logits) back.
    const auto t_loss = Clock::now();
    std::map<uint32_t, uint64_t> dlogits_bytes;  // each client's share of its backward TASK
    const double loss_sum = send_dlogits(engine, logits, dlogits_bytes);
    const double loss_seconds = std::chrono::duration<double>(Clock::now() - t_loss).count();
    // 3. Parameter gradients back: summed in client order, one SGD step.
    const Collected grads =
        collect(engine, TaskKind::kBackward, [&](uint32_t) { return run_.params.size(); });
    const auto t_agg = Clock::now();
    std::vector<ClientUpdate> updates;
    for (const auto& [c, r] : grads.got)
      updates.push_back({c, engine.round, rows_[c].size(), r.update.vectors[0]});
    strategy_->apply(updates, run_.params);
    const auto t_done = Clock::now();
    rec.participants = rec.received = engine.num_clients;
    if (total_ > 0) rec.train_loss = loss_sum / double(total_);
    rec.batch = total_;
    rec.samples_processed = double(total_);
    rec.worker_forward_seconds = slowest(logits);
    rec.worker_backward_seconds = slowest(grads);
    rec.master_loss_seconds = loss_seconds;
    rec.aggregate_seconds = std::chrono::duration<double>(t_done - t_agg).count();
    rec.wait_seconds = std::chrono::duration<double>(t_agg - t0).count() - loss_seconds;
    if (s_.network.mode == NetworkMode::kSimulated)
      clock_.end_master_round(rec, engine.round,
                              simulated_slices(model.bytes(), dlogits_bytes, logits, grads));
    else  // emulated: the step's wall time, its transfers held as the links allow
      clock_.end_round(rec, engine.round, std::chrono::duration<double>(t_done - t0).count());
    return fmt::format("batch of {} over {} clients", total_, engine.num_clients);
  }

 private:
  // The batch: each client's rows, the same ones the workers draw (gradient_batch).
  void draw_batch(const Engine& engine) {
    everyone_ = engine.all_clients();
    total_ = 0;
    for (uint32_t c : everyone_) {
      rows_[c] =
          gradient_batch(run_.manifest.clients[c].indices, s_.sgd_batch, s_.seed, c, engine.round);
      total_ += rows_[c].size();
    }
  }

  // One reply of `kind` from every client, each one vector of `floats(client)` values.
  Collected collect(Engine& engine, TaskKind kind, const std::function<size_t(uint32_t)>& floats) {
    CollectSpec spec{
        .kind = kind, .expected = everyone_, .seconds = s_.wait_seconds, .batch = s_.sgd_batch};
    spec.accept = [&](const Reply& r) -> std::string {
      if (r.update.vectors.size() == 1 && r.update.vectors[0].size() == floats(r.key)) return "";
      return fmt::format("{} of client {}: expected one vector of {} values", task_kind_name(kind),
                         r.key, floats(r.key));
    };
    Collected c = engine.collect(spec);
    if (!c.missing.empty())
      throw RunFailed(fmt::format(
          "round {}: no {} reply from client(s) {}{} (the master needs every slice of the "
          "batch)",
          engine.round + 1, task_kind_name(kind), fmt::join(c.missing, ", "), c.missing_because()));
    return c;
  }

  // The loss over the whole batch on the server's model (CPU backend: host pointers are its
  // device pointers), and each process its clients' dlogits slices. Returns the loss sum; `bytes`
  // gets each client's share of its process's message: its slice and an equal part of the rest.
  double send_dlogits(Engine& engine, const Collected& logits,
                      std::map<uint32_t, uint64_t>& bytes) {
    std::vector<float> all;
    std::vector<int32_t> labels;
    all.reserve(total_ * classes_);
    for (uint32_t c : everyone_) {
      const auto v = logits.got.at(c).update.vectors[0];
      all.insert(all.end(), v.begin(), v.end());
      for (uint32_t i : rows_[c]) labels.push_back(run_.data.train.y[i]);
    }
    auto dlogits = std::make_shared<std::vector<float>>(all.size());
    const double loss_sum = run_.model.loss_sum(dlogits->data(), all.data(), labels.data(),
                                                int(total_), 1.0f / float(total_));
    std::map<uint32_t, std::span<const float>> slice;
    size_t offset = 0;
    for (uint32_t c : everyone_) {
      slice[c] = std::span<const float>(*dlogits).subspan(offset, rows_[c].size() * classes_);
      offset += rows_[c].size() * classes_;
    }
    for (const auto& id : engine.order) {
      TaskMsg backward{.kind = TaskKind::kBackward, .clients = engine.peers[id].clients};
      for (uint32_t c : backward.clients) backward.vectors.push_back(slice[c]);
      const WireMessage m = encode(backward, engine.envelope(), dlogits);
      const uint64_t all = m.bytes(), k = backward.clients.size();
      uint64_t slices = 0;
      for (uint32_t c : backward.clients) slices += slice[c].size_bytes();
      for (uint32_t c : backward.clients) bytes[c] = slice[c].size_bytes() + (all - slices) / k;
      engine.send(id, m);
    }
    return loss_sum;
  }

  // [network] simulated: each client's four messages of the step as sent and received and its two
  // halves' compute. Each virtual client is on its own link, as in a simulated parameter-server
  // round: a process hosting several gets the model once, yet each of its clients is counted the
  // model's bytes (and its own share of the dlogits TASK).
  std::vector<SimulatedSlice> simulated_slices(uint64_t model_bytes,
                                               const std::map<uint32_t, uint64_t>& dlogits_bytes,
                                               const Collected& logits,
                                               const Collected& grads) const {
    std::vector<SimulatedSlice> out;
    for (uint32_t c : everyone_) {
      const Reply &l = logits.got.at(c), &g = grads.got.at(c);
      out.push_back({.client = c,
                     .model_bytes = model_bytes,
                     .logits_bytes = l.in.msg.bytes(),
                     .dlogits_bytes = dlogits_bytes.at(c),
                     .gradient_bytes = g.in.msg.bytes(),
                     .forward_seconds = l.update.compute_seconds,
                     .backward_seconds = g.update.compute_seconds});
    }
    return out;
  }

  static double slowest(const Collected& c) {
    double s = 0;
    for (const auto& [k, r] : c.got) s = std::max(s, r.update.compute_seconds);
    return s;
  }

  RunContext& run_;
  const RunSpec& s_;
  const size_t classes_;
  std::unique_ptr<Strategy> strategy_;
  std::vector<uint32_t> everyone_;
  std::map<uint32_t, std::vector<uint32_t>> rows_;
  size_t total_ = 0;
  NetworkClock clock_{s_.network, s_.seed,
                      s_.wait_seconds};  // [network] simulated: the steps' time
};

}  // namespace

std::unique_ptr<Plan> make_master_plan(RunContext& run) {
  return std::make_unique<MasterPlan>(run);
}

}  // namespace fedpar
