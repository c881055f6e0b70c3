// The client's loop; see client.h.
#include "clients/client.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <optional>

#include "clients/allreduce_worker.h"
#include "clients/master_worker.h"
#include "clients/pipeline_worker.h"
#include "clients/straggle.h"
#include "clients/tensor_worker.h"
#include "core/attack.h"
#include "core/build_info.h"
#include "core/check.h"
#include "core/codec/error_feedback.h"
#include "core/feature_noise.h"
#include "core/fednova.h"
#include "core/hash.h"
#include "core/local_update.h"
#include "core/model.h"
#include "core/peak_memory.h"
#include "core/run_spec.h"
#include "core/scaffold.h"
#include "protocol/messages.h"
#include "transport/curve.h"
#include "transport/link_security.h"
#include "transport/shaped_link.h"
#include "transport/transport.h"

namespace fedpar {
namespace {

// A first answer that has not come after this many seconds is waited for with a line that says so.
constexpr double kFirstAnswerNoteSeconds = 3;

template <typename T>
T checked(Decoded<T> d, const char* what) {
  if (auto* e = std::get_if<ProtocolError>(&d))
    throw Error(fmt::format("malformed {} from the server: {}", what, e->reason));
  return std::move(std::get<T>(d));
}

// Every row the WELCOME's shards name, ascending, once each.
std::vector<uint32_t> hosted_rows(const WelcomeMsg& w) {
  std::vector<uint32_t> rows;
  for (const auto& shard : w.shards) rows.insert(rows.end(), shard.begin(), shard.end());
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

// The training rows this process's clients hold (never the whole set: a process stays small).
TrainingRows load_hosted_rows(const RunSpec& s, const WelcomeMsg& w) {
  try {
    return load_training_rows(s.data, hosted_rows(w));
  } catch (const RowOutOfRange& e) {
    throw Error(fmt::format("the server's WELCOME does not fit this machine's data: {}", e.what()));
  }
}

// The run as this process sees it: the server's config, with this machine's --data-dir.
RunSpec local_run_spec(const ClientOptions& o, const WelcomeMsg& w) {
  RunSpec s = run_spec_from_toml(w.config_toml, "WELCOME");
  if (!o.data_dir.empty()) s.data.data_dir = o.data_dir;
  return s;
}

// What a STOP means for the process's exit, said unless quiet.
int stopped(const StopMsg& stop, bool quiet) {
  if (stop.outcome == StopOutcome::kCompleted) {
    if (!quiet) fmt::print(stderr, "client {}: the run completed\n", ::getpid());
    return 0;
  }
  if (!quiet)
    fmt::print(stderr, "client {}: the server ended the run ({}): {}\n", ::getpid(),
               stop_outcome_name(stop.outcome), stop.reason);
  return kExitEndedByServer;
}

// One client process after WELCOME: its run, data, model and the virtual clients it hosts.
class ClientProcess {
 public:
  ClientProcess(const ClientOptions& o, Channel& channel, zmq::context_t& ctx, const WelcomeMsg& w,
                uint64_t run)
      : o_(o),
        channel_(channel),
        s_(local_run_spec(o, w)),
        run_(run),
        be_(make_backend(o.device.empty() ? s_.device : o.device, s_.threads)),
        data_(load_hosted_rows(s_, w)),
        layout_(model_layout(s_.model, data_.data.shape, data_.data.num_classes)),
        num_params_(layout_.total()),
        buffer_(*be_, data_.data.dim()),
        uplink_(make_codec(s_.compression.uplink, with_layout(s_.compression.params, layout_))) {
    downlink_.add(make_codec(s_.compression.downlink, with_layout(s_.compression.params, layout_)));
    be_->set_precision(s_.optimizer.precision);  // every matrix product of this process
    if (uplink_ && s_.compression.error_feedback) feedback_.emplace(*uplink_);
    log(fmt::format("computing on {}", be_->describe()));
    if (w.num_params != num_params_)
      throw Error(fmt::format("WELCOME announces a model of {} parameters, this run's {} has {}",
                              w.num_params, s_.model.name, num_params_));
    // A pipeline stage or tensor rank holds only its part (PipelineWorker, TensorWorker); every
    // other process the model.
    if (!s_.model_parallel())
      model_.emplace(*be_, s_.model, data_.data.shape, data_.data.num_classes);
    if (data_.content_hash != w.dataset_hash)
      throw Error(
          "this machine's dataset differs from the server's (content hash mismatch): "
          "fetch the same data (scripts/setup.sh) or pass the same data options");
    // Shards renumbered to the rows held, in order: every batch a shard draws is the same samples.
    const std::vector<uint32_t> held = hosted_rows(w);
    for (size_t i = 0; i < w.clients.size(); ++i) {
      auto& shard = shards_[w.clients[i]];
      for (uint32_t row : w.shards[i])
        shard.push_back(uint32_t(std::lower_bound(held.begin(), held.end(), row) - held.begin()));
    }
    for (size_t k = 0; k < w.control_clients.size(); ++k)  // a resumed SCAFFOLD run's c_i
      controls_[w.control_clients[k]].assign(w.controls[k].begin(), w.controls[k].end());
    for (size_t k = 0; k < w.residual_clients.size(); ++k) {  // a resumed run's residuals
      if (!feedback_)
        throw Error("WELCOME brings error-feedback residuals to a run without error feedback");
      feedback_->restore(w.residual_clients[k], w.residuals[k], w.residual_lrs[k]);
    }
    // feature-noise: each hosted client's samples get its own noise, on this process's copy;
    // [attack] label-flip: an attacking client's labels are flipped
    for (const auto& [c, rows] : shards_) {
      if (s_.attack.kind == AttackKind::kLabelFlip && s_.attack.attacks(c))
        flip_labels(data_.data.y, rows, data_.data.num_classes);
      add_feature_noise(data_.data.x, data_.data.dim(), c,
                        feature_noise_level(s_.partition, c, size_t(s_.partition.clients)), rows,
                        s_.partition.seed);
    }
    log(fmt::format("hosting {} virtual client(s), {} of {} training samples in memory",
                    shards_.size(), data_.data.size(), data_.full_size));
    if (s_.topology == Topology::kAllReduce || s_.model_parallel()) make_link_security(ctx);
    if (s_.topology == Topology::kAllReduce) {
      ring_.emplace(ctx, s_, *links_);
      channel_.send(
          encode(RingEndpointMsg{ring_->endpoint(), "", links_->public_key()}, {0, run_, 0}));
    }
    if (s_.topology == Topology::kPipeline) {
      pipe_.emplace(ctx, s_, *links_, *be_, data_.data.shape, data_.data.num_classes);
      channel_.send(encode(
          RingEndpointMsg{pipe_->endpoint(), pipe_->replica_endpoint(), links_->public_key()},
          {0, run_, 0}));
    }
    if (s_.topology == Topology::kTensor) {
      tensor_.emplace(ctx, s_, *links_, *be_, data_.data.shape, data_.data.num_classes);
      channel_.send(encode(
          RingEndpointMsg{tensor_->endpoint(), tensor_->replica_endpoint(), links_->public_key()},
          {0, run_, 0}));
    }
    if (s_.topology == Topology::kMaster) master_.emplace(*be_, s_.model, data_.data);
    // the server starts round 1's clock now (a ring's or a model-parallel worker's RING said so)
    if (s_.topology != Topology::kAllReduce && !s_.model_parallel())
      channel_.send(encode_ready({0, run_, 0}));
  }

  // Serves tasks until STOP (returns run_client's code); throws Error when the server goes silent
  // or a ring fails.
  int serve() {
    while (true) {
      auto msg = next_message(deadline_after(o_.wait_seconds));
      if (!msg)
        throw RunFailed(fmt::format("the server was silent for {} s; giving up", o_.wait_seconds));
      auto parsed = parse_message(msg->spans(), {}, false, &downlink_, num_params_);
      if (auto* e = std::get_if<ProtocolError>(&parsed)) {
        log("dropped a malformed message from the server: " + e->reason);
        continue;
      }
      const ParsedMessage& m = std::get<ParsedMessage>(parsed);
      switch (m.header.type) {
        case MessageType::kStop:
          return stopped(checked(decode_stop(m), "STOP"), o_.quiet);
        case MessageType::kPing:  // the server asked whether this process is connected: it is
          break;
        case MessageType::kError:
          log("the server rejected a message: " + checked(decode_error(m), "ERROR").reason);
          break;
        case MessageType::kRing:
          join_ring(checked(decode_ring_assignment(m), "RING"), m.header.round);
          break;
        case MessageType::kTask:
          if (superseded(m.header)) {
            log(s_.regime == Regime::kAsync
                    ? fmt::format("skipped client {}'s TASK on model version {}: the server sent "
                                  "it again, and that one is queued",
                                  m.header.client, m.header.round)
                    : fmt::format("skipped the TASK of round {}: the server has moved on (this "
                                  "process fell behind)",
                                  m.header.round + 1));
            break;
          }
          serve(checked(decode_task(m), "TASK"), m.header.round);
          break;
        default:
          log(fmt::format("ignored an unexpected {} message", message_type_name(m.header.type)));
      }
    }
  }

 private:
  std::optional<Received> next_message(Clock::time_point deadline) {
    if (pending_.empty()) return channel_.receive(deadline);
    Received r = std::move(pending_.front());
    pending_.pop_front();
    return r;
  }

  // Whether a synchronous round's TASK is stale: a message of a later round has come, so the
  // server has ended this round (it starts round r + 1 only once round r is over) and an answer
  // would come after its deadline and be refused. A process that fell behind then serves the
  // newest round instead of working through those it missed. Not with a delta downlink (every
  // TASK moves the replica) or the other topologies. In async each task is one client's: one is
  // stale when the server sent that client another (it took this one for lost) now queued.
  bool superseded(const Header& task) {
    const bool async = s_.regime == Regime::kAsync;
    if (s_.topology != Topology::kParameterServer || s_.compression.downlink_delta) return false;
    while (auto more = channel_.receive(Clock::now())) pending_.push_back(std::move(*more));
    return std::any_of(pending_.begin(), pending_.end(), [&](const Received& r) {
      if (r.frames.empty()) return false;
      const auto h = peek_header(r.spans()[0]);
      // async: a TASK the server sent the same client again (it took this one for lost), on a
      // newer model or as the same task; else any later round's
      return h && (async ? h->type == MessageType::kTask && h->client == task.client &&
                               h->round >= task.round
                         : h->round > task.round);
    });
  }

  void log(const std::string& line) const {
    if (!o_.quiet) fmt::print(stderr, "client {}: {}\n", ::getpid(), line);
  }

  // The links to other workers refuse frames larger than this process's rows of the widest
  // activation, or than the model, at up to 8 bytes a value, plus a body; with [security] they
  // speak CURVE with a key pair of this process's own.
  void make_link_security(zmq::context_t& ctx) {
    const size_t widest = widest_activation(s_.model, data_.data.shape, data_.data.num_classes);
    const auto max_frame =
        int64_t(8 * std::max(num_params_, data_.data.size() * widest) + (size_t(1) << 20));
    if (s_.security.on())
      links_.emplace(ctx, max_frame, o_.quiet);
    else
      links_.emplace(max_frame);
  }

  void join_ring(const RingAssignmentMsg& r, uint64_t round) {
    if (!links_)
      throw Error("the server sent a ring assignment to a run whose topology has no ring");
    links_->allow({r.keys.begin(), r.keys.end()});
    const LinkPeer next{r.next, r.next_key}, prev{r.prev, r.prev_key},
        replica_next{r.replica_next, r.replica_next_key};
    if (pipe_)
      return pipe_->join(int(r.rank), int(r.size), prev, next, int(r.replica), int(r.replicas),
                         replica_next);
    if (tensor_)
      return tensor_->join(int(r.rank), int(r.size), next, int(r.replica), int(r.replicas),
                           replica_next);
    if (r.epoch > 0) {
      log(fmt::format("the ring re-formed without the dead: rank {} of {}; redoing round {}",
                      r.rank, r.size, round + 1));
      return ring_->reform(int(r.rank), int(r.size), next, uint32_t(r.epoch), round);
    }
    // NCCL's join can fail (no GPU here): the server hears why
    or_tell_server(int(r.rank), round,
                   [&] { ring_->join(int(r.rank), int(r.size), next, r.nccl_id); });
  }

  void serve(const TaskMsg& task, uint64_t round) {
    switch (task.kind) {
      case TaskKind::kAllReduce:
        return allreduce_step(task, round);
      case TaskKind::kPipeline:
        return part_step(pipe_ ? &*pipe_ : nullptr, task, round);
      case TaskKind::kTensor:
        return part_step(tensor_ ? &*tensor_ : nullptr, task, round);
      case TaskKind::kForward:
      case TaskKind::kBackward:
        return master_half(task, round);
      case TaskKind::kGradient:
      case TaskKind::kLocalTrain:
        return train(task, round);
      case TaskKind::kState:
        return send_state(task, round);
    }
  }

  // Before a checkpoint: each listed client's error-feedback residual and the rate it stands
  // for (no vector for a client without one yet).
  void send_state(const TaskMsg& task, uint64_t round) {
    for (const uint32_t c : task.clients) {
      const auto shard = shards_.find(c);
      if (shard == shards_.end()) continue;  // another process's
      std::vector<std::vector<float>> vs;
      if (feedback_ && !feedback_->residual(c).empty()) {
        const auto e = feedback_->residual(c);
        vs = {{e.begin(), e.end()}, {feedback_->residual_lr(c)}};
      }
      reply(c, round, {.kind = TaskKind::kState, .num_samples = shard->second.size()},
            std::move(vs));
    }
  }

  // Replies with `vs` (the update and what goes with it), owned by the message until sent.
  void reply(uint32_t client, uint64_t round, UpdateMsg u, std::vector<std::vector<float>> vs) {
    auto owned = std::make_shared<std::vector<std::vector<float>>>(std::move(vs));
    u.vectors.assign(owned->begin(), owned->end());
    send_update(client, round, std::move(u), std::move(owned));
  }

  // Sends `u` with this process's memory accounting; `owner` holds what its vectors view.
  void send_update(uint32_t client, uint64_t round, UpdateMsg u,
                   std::shared_ptr<const void> owner = {}) {
    u.parameter_bytes = pipe_     ? pipe_->parameter_bytes()
                        : tensor_ ? tensor_->parameter_bytes()
                                  : model_->parameter_bytes();
    u.activation_bytes = pipe_     ? pipe_->activation_bytes()
                         : tensor_ ? tensor_->activation_bytes()
                                   : model_->activation_bytes_held();
    u.peak_rss_bytes = peak_rss_bytes();
    channel_.send(encode(std::move(u), {client, run_, round}, std::move(owner)));
  }

  // Replies with one training update through the uplink codec (and the client's residual with
  // error feedback), encoded for the header this reply carries.
  void reply_encoded(uint32_t client, uint64_t round, UpdateMsg u, std::span<const float> update) {
    const CodecContext ctx{round, client};
    std::vector<uint8_t> bytes;
    // the residual stands for a step at the rate the server applies: SGD's lr, or 1 for deltas
    const float lr = u.kind == TaskKind::kGradient ? s_.optimizer.lr.at(int64_t(round)) : 1.0f;
    if (feedback_)
      feedback_->encode(client, update, ctx, lr, bytes);
    else
      uplink_->encode(update, ctx, bytes);
    u.encoded.codec = uplink_->id();
    u.encoded.frames.push_back(std::move(bytes));
    send_update(client, round, std::move(u));
  }

  void allreduce_step(const TaskMsg& task, uint64_t round) {
    if (!ring_)
      throw Error("the server sent an allreduce task to a run without the allreduce topology");
    if (!task.vectors.empty()) {  // the first task carries the model (and a resumed velocity)
      check_model(task.vectors[0]);
      ring_->set_replica(task.vectors[0]);
      if (task.vectors.size() == 2) {
        check_model(task.vectors[1]);
        ring_->set_velocity(task.vectors[1]);
      }
    }
    const auto step = [&] {
      return ring_->step(*model_, data_.data, shards_, task.batch, round, task.total_weight,
                         buffer_);
    };
    if (s_.ring_elastic) {  // a broken ring is the server's to re-form: tell it, and stay
      try {
        step_reported(step(), task, round);
      } catch (const Error& e) {
        log(fmt::format("round {}: {}; waiting for the ring to re-form", round + 1, e.what()));
        channel_.send(encode(ErrorMsg{e.what()}, {uint32_t(ring_->rank()), run_, round}));
      }
      return;
    }
    step_reported(or_tell_server(ring_->rank(), round, step), task, round);
  }

  void step_reported(const AllReduceStep& st, const TaskMsg& task, uint64_t round) {
    std::vector<float> velocity;
    if (task.send_state) velocity = ring_->velocity();
    report_worker(ring_->rank(), round, task, ring_->replica(), std::move(velocity),
                  {.kind = TaskKind::kAllReduce,
                   .num_samples = st.num_samples,
                   .loss_sum = st.loss_sum,
                   .samples_processed = int64_t(st.num_samples),
                   .compute_seconds = st.compute_seconds,
                   .allreduce_seconds = st.allreduce_seconds,
                   .ring_bytes_sent = st.ring_bytes_sent,
                   .ring_bytes_received = st.ring_bytes_received});
  }

  // A ring rank's or a pipeline stage's step; when it fails, the server hears why before this
  // process leaves (it stops the run with that reason), and the process exits as a run that could
  // not go on (kExitRunFailed), not as one given bad input.
  template <typename Step>
  auto or_tell_server(int worker, uint64_t round, Step step) -> decltype(step()) {
    try {
      return step();
    } catch (const Error& e) {
      channel_.send(encode(ErrorMsg{e.what()}, {uint32_t(worker), run_, round}));
      throw RunFailed(e.what());
    }
  }

  // A worker's report: `u`, with the hash of what it holds (`held`: its replica or its slice)
  // and `held` itself when the task asks for them.
  // A ring worker's `velocity`, when not empty, follows `held` (for a checkpoint).
  void report_worker(int worker, uint64_t round, const TaskMsg& task,
                     const std::vector<float>& held, std::vector<float> velocity, UpdateMsg u) {
    if (task.hash) u.hash = hash_hex(hash_bytes(held.data(), held.size() * sizeof(float)));
    std::vector<std::vector<float>> vs;
    if (task.send_params) vs.push_back(held);
    if (task.send_params && !velocity.empty()) vs.push_back(std::move(velocity));
    reply(uint32_t(worker), round, std::move(u), std::move(vs));
  }

  // One batch through this process's part (a pipeline stage, a tensor rank); the report carries
  // the part when asked for.
  template <typename Worker>
  void part_step(Worker* worker, const TaskMsg& task, uint64_t round) {
    if (!worker || !worker->joined())
      throw Error(fmt::format("the server sent a {} task to a process that is not one of its parts",
                              task_kind_name(task.kind)));
    if (!task.vectors.empty()) {  // the first task carries this part (and a resumed velocity)
      worker->set_params(task.vectors[0]);
      if (task.vectors.size() == 2) worker->set_velocity(task.vectors[1]);
    }
    const auto data = shards_.begin();  // this replica's client: every part hosts it
    if (data == shards_.end())
      throw Error("this process hosts no client: it has no data for the batch");
    const auto t0 = Clock::now();
    PartStep st = or_tell_server(worker->part(), round, [&] {
      return worker->step(data_.data, data->second, data->first, task.batch, round, buffer_);
    });
    const double secs = seconds_since(t0);  // [stragglers]: as slow as this replica's client
    st.compute_seconds += straggle(s_, data->first, secs) - secs;
    report_part(worker->part(), round, task, worker->params(),
                task.send_state ? worker->velocity() : std::vector<float>{}, st);
  }

  // A model-parallel process's report of its step, with its part (and its velocity) when asked.
  void report_part(int part, uint64_t round, const TaskMsg& task, const std::vector<float>& held,
                   std::vector<float> velocity, const PartStep& st) {
    report_worker(part, round, task, held, std::move(velocity),
                  {.kind = task.kind,
                   .num_samples = st.num_samples,
                   .loss_sum = st.loss_sum,
                   .samples_processed = int64_t(st.num_samples),
                   .compute_seconds = st.compute_seconds,
                   .allreduce_seconds = st.link_seconds,
                   .ring_bytes_sent = st.bytes_sent,
                   .ring_bytes_received = st.bytes_received,
                   .replica_seconds = st.replica_seconds,
                   .replica_bytes_sent = st.replica_bytes_sent,
                   .replica_bytes_received = st.replica_bytes_received,
                   .op_seconds = st.op_seconds,
                   .op_bytes = st.op_bytes,
                   .ring_steps = st.ring_steps});
  }

  // Forward: the logits of each hosted client's rows; backward: its gradients from the dlogits
  // (one vector per listed client, in order).
  void master_half(const TaskMsg& task, uint64_t round) {
    if (!master_) throw Error("the server sent a master task to a run without the master topology");
    if (task.kind == TaskKind::kForward) check_model(task.vectors[0]);
    for (size_t i = 0; i < task.clients.size(); ++i) {
      const uint32_t c = task.clients[i];
      const auto shard = shards_.find(c);
      if (shard == shards_.end()) continue;
      const auto t0 = Clock::now();
      UpdateMsg u{.kind = task.kind};
      std::vector<std::vector<float>> vs;
      if (task.kind == TaskKind::kForward) {
        const auto rows = gradient_batch(shard->second, task.batch, s_.seed, c, round);
        vs.push_back(master_->forward(c, rows, task.vectors[0]));
        u.num_samples = rows.size();
      } else {
        vs.push_back(master_->backward(c, task.vectors[i]));
      }
      u.compute_seconds = straggle(s_, c, seconds_since(t0));
      reply(c, round, std::move(u), std::move(vs));
    }
  }

  void check_model(std::span<const float> v) const {
    if (v.size() != num_params_)
      throw Error(
          fmt::format("malformed TASK from the server: a model of {} values, this run's has {}",
                      v.size(), num_params_));
  }

  // The model a training task starts from: the one it carries, or with a delta downlink the
  // replica this process keeps plus the change it carries (the same float adds as the server's).
  std::span<const float> task_model(const TaskMsg& t) {
    check_model(t.vectors[0]);
    if (!s_.compression.downlink_delta) return t.vectors[0];
    if (!t.delta) {
      replica_.assign(t.vectors[0].begin(), t.vectors[0].end());
      return replica_;
    }
    if (replica_.empty())
      throw Error("malformed TASK from the server: a model change before any model");
    for (size_t i = 0; i < replica_.size(); ++i) replica_[i] = replica_[i] + t.vectors[0][i];
    return replica_;
  }

  // SCAFFOLD's server control c, the TASK's second vector (empty for other algorithms).
  std::span<const float> scaffold_control(const TaskMsg& t) const {
    if (s_.algorithm != FlAlgorithm::kScaffold || t.kind != TaskKind::kLocalTrain) return {};
    if (!t.control || t.vectors.size() != 2 || t.vectors[1].size() != num_params_)
      throw Error(fmt::format(
          "malformed TASK from the server: SCAFFOLD needs the model and a control of {} values",
          num_params_));
    return t.vectors[1];
  }

  void train(const TaskMsg& t, uint64_t round) {
    if (!model_) throw Error("the server sent a training task to a pipeline stage");
    const std::span<const float> start = task_model(t);
    const Task task{
        .kind = t.kind == TaskKind::kGradient ? LocalWork::kGradient : LocalWork::kLocalTrain,
        .round = t.draw.value_or(round),  // async tasks name their batch draw
        .batch = t.batch,
        .local_steps = int(t.steps),
        .local_epochs = int(t.epochs),
        .lr = float(t.lr),
        .sgd = s_.optimizer.sgd,
        .prox_mu = s_.prox_mu,
        .drift = t.drift,
        .local_steps_max = s_.local_steps_max,
        .local_epochs_max = s_.local_epochs_max,
        .independent_batches = s_.local_sampling == LocalSampling::kIndependent,
        .accumulate = s_.optimizer.accumulate};
    const std::span<const float> control = scaffold_control(t);
    for (uint32_t c : t.clients) {
      const auto shard = shards_.find(c);
      if (shard == shards_.end()) continue;  // the TASK lists every participant
      const auto t0 = Clock::now();
      std::vector<float> correction;
      if (!control.empty()) {
        auto& mine = controls_[c];  // c_i, zero before the client's first round
        if (mine.empty()) mine.assign(num_params_, 0.0f);
        correction = scaffold_correction(control, mine);
      }
      Task local = task;
      if (s_.optimizer.precision == Precision::kF16) local.scaler = &scalers_[c];
      local.correction = correction;
      local.correction_after_step = s_.scaffold_correction == ScaffoldCorrection::kAfterStep;
      LocalResult r =
          compute_update(*model_, data_.data, shard->second, start, local, s_.seed, c, &buffer_);
      const double secs = seconds_since(t0);
      std::vector<float> control_change;  // SCAFFOLD's dc_i, from the honest delta
      if (!control.empty()) {
        // the work that makes (x - y) / (work lr) the mean corrected gradient; after-step
        // divides by the step count as NIID-Bench does, whatever the momentum
        const double work = local.correction_after_step
                                ? double(r.local_steps)
                                : fednova_work(r.local_steps, task.sgd.momentum);
        control_change = scaffold_control_change(control, r.values, work, task.lr);
        auto& mine = controls_[c];
        for (size_t i = 0; i < mine.size(); ++i) mine[i] += control_change[i];
      }
      corrupt_update(s_.attack, c, round, s_.seed, r.values);  // [attack]: a faulty client's lie
      UpdateMsg u{.kind = t.kind,
                  .num_samples = r.num_samples,
                  .loss_sum = r.loss_sum,
                  .samples_processed = r.samples_processed,
                  .compute_seconds = straggle(s_, c, secs)};
      if (uplink_) {  // drift needs the raw uplink (the run spec refuses both)
        reply_encoded(c, round, std::move(u), r.values);
        continue;
      }
      // the update [, its linear part] [, SCAFFOLD's control change]: sent without a copy
      std::vector<std::vector<float>> vs;
      vs.push_back(std::move(r.values));
      if (task.drift) vs.push_back(std::move(r.linear));
      if (!control.empty()) vs.push_back(std::move(control_change));
      reply(c, round, std::move(u), std::move(vs));
    }
  }

  const ClientOptions& o_;
  Channel& channel_;
  std::deque<Received> pending_;  // messages read ahead by superseded(), served first
  const RunSpec s_;
  const uint64_t run_;
  std::unique_ptr<Backend> be_;
  TrainingRows data_;  // the rows its virtual clients hold, not the whole set (nor the test set)
  const ParamLayout layout_;  // the whole model's, whatever part of it this process holds
  const size_t num_params_;
  std::optional<Model> model_;                        // all but pipeline stages and tensor ranks
  BatchBuffer buffer_;                                // a full shard stays loaded across rounds
  std::map<uint32_t, std::vector<uint32_t>> shards_;  // rows of data_.data
  std::optional<LinkSecurity> links_;                 // what the links to other workers check
  std::optional<AllReduceWorker> ring_;
  std::optional<MasterWorker> master_;
  std::optional<PipelineWorker> pipe_;
  std::optional<TensorWorker> tensor_;
  CodecSet downlink_;                      // how TASKs may carry the model
  std::unique_ptr<Codec> uplink_;          // how updates go (null: raw float32)
  std::optional<ErrorFeedback> feedback_;  // the hosted clients' residuals
  std::vector<float> replica_;             // the model, with a delta downlink
  // SCAFFOLD: each hosted virtual client's control variate c_i, kept across rounds
  std::map<uint32_t, std::vector<float>> controls_;
  // fp16: each hosted client's loss scale, carried from its gradient to its next (one per client,
  // not per process, so the model does not depend on how clients share processes)
  std::map<uint32_t, LossScaler> scalers_;
};

}  // namespace

int run_client(const ClientOptions& o) {
  if (o.slots < 1) throw Error("--slots must be >= 1");
  if (o.max_frame_mib < 1 || o.max_frame_mib > (int64_t(1) << 20))
    throw Error("--max-frame-mib must be between 1 and 1048576");
  std::unique_ptr<zmq::context_t> own;
  zmq::context_t& ctx = o.context ? *o.context : *(own = std::make_unique<zmq::context_t>());
  std::optional<CurveClient> curve;
  if (!o.key_file.empty() || !o.server_key_file.empty()) {
    if (o.key_file.empty() || o.server_key_file.empty())
      throw Error(
          "CURVE needs both --key (this client's .key) and --server-key (the server's .pub)");
    const CurveKeyPair server = read_curve_keys(o.server_key_file);
    // a secret there works, and invites copying the server's secret to every client host
    if (!server.secret_key.empty())
      throw Error(fmt::format(
          "--server-key {} holds the server's secret key: give the client its .pub, and keep "
          "the .key on the server alone",
          o.server_key_file));
    curve = CurveClient{read_curve_keys(o.key_file), server.public_key};
    if (curve->keys.secret_key.empty())
      throw Error(fmt::format("--key {} holds only a public key; give the .key file", o.key_file));
  }
  const auto channel =
      connect_zmq_channel(o.server, &ctx, o.max_frame_mib << 20, curve ? &*curve : nullptr);
  const HelloMsg hello{.slots = o.slots,
                       .pid = ::getpid(),
                       .run_config = o.run_config,
                       .device = o.device,
                       .build = build_description(),
                       .machine = machine_description()};
  channel->send(encode(hello));
  // a server not there yet is waited for; after a few silent seconds the wait says so
  const auto deadline = deadline_after(o.wait_seconds);
  // A PING (the server checking that this process is connected) is no answer; after a
  // reconnection HELLO goes again: a server that saw the connection gone for long freed its place.
  int sessions = 0;
  const auto answer = [&](Clock::time_point until) -> std::optional<Received> {
    while (true) {
      auto m = channel->receive(std::min(until, deadline_after(0.5)));
      if (!m) {
        if (const int now = channel->sessions(); now > sessions) {
          if (sessions > 0) channel->send(encode(hello));
          sessions = now;
        }
        if (Clock::now() >= until) return std::nullopt;
        continue;
      }
      const auto peek = m->frames.empty()
                            ? std::nullopt
                            : peek_header({static_cast<const uint8_t*>(m->frames[0].data()),
                                           m->frames[0].size()});
      if (!peek || peek->type != MessageType::kPing) return m;
    }
  };
  auto first = answer(std::min(deadline, deadline_after(kFirstAnswerNoteSeconds)));
  if (!first && Clock::now() < deadline) {
    if (!o.quiet) {
      const std::string state = describe(channel->state());
      fmt::print(stderr,
                 "client {}: no answer yet from the server at {}{}; waiting up to {} s (--wait)\n",
                 ::getpid(), o.server, state.empty() ? "" : " (" + state + ")", o.wait_seconds);
    }
    first = answer(deadline);
  }
  if (!first) {
    const auto state = channel->state();
    throw RunFailed(fmt::format(
        "no answer from the server at {} within {} s: {}{}", o.server, o.wait_seconds,
        state == Channel::State::kUnknown ? "is it running, at that host and port?"
                                          : describe(state),
        state != Channel::State::kUnknown ? ""  // (keys that do not match fail the handshake)
        : curve ? " (with CURVE: is this key on the server's allow-list, and --server-key the "
                  "server's public key?)"
                : " (a server with [security] keys answers only clients with --key and "
                  "--server-key)"));
  }
  auto parsed = parse_message(first->spans());
  if (auto* e = std::get_if<ProtocolError>(&parsed)) throw Error("bad WELCOME: " + e->reason);
  const ParsedMessage& w = std::get<ParsedMessage>(parsed);
  if (w.header.type == MessageType::kError)
    throw Error("the server refused us: " + checked(decode_error(w), "ERROR").reason);
  if (w.header.type == MessageType::kStop)  // the run ended before it started (or before we came)
    return stopped(checked(decode_stop(w), "STOP"), o.quiet);
  const WelcomeMsg welcome = checked(decode_welcome(w), "WELCOME");
  // A TASK carries the model at up to 8 bytes a value (a sparse codec's index and value): a
  // limit below that would drop it unread, which would look like a silent server.
  if (const uint64_t need = 8 * welcome.num_params + (uint64_t(1) << 20);
      need > uint64_t(o.max_frame_mib) << 20)
    throw Error(
        fmt::format("this run's model ({} values) needs frames of up to {} MiB: start the "
                    "client with --max-frame-mib {} or more",
                    welcome.num_params, (need >> 20) + 1, (need >> 20) + 1));
  const RunSpec spec = run_spec_from_toml(welcome.config_toml, "WELCOME");  // [network]
  const auto link = shape_channel(*channel, spec.network, spec.seed, welcome.clients);
  std::optional<ClientProcess> process;
  try {
    process.emplace(o, *link, ctx, welcome, w.header.run);
  } catch (const std::exception& e) {  // the server's run fails at once, saying why
    link->send(encode(ErrorMsg{e.what()}, {0, w.header.run, 0}));
    throw;
  }
  return process->serve();
}

}  // namespace fedpar
