// PipelineWorker; see pipeline_worker.h.
#include "clients/pipeline_worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/check.h"
#include "core/local_update.h"
#include "core/pipeline_local.h"

namespace fedpar {

namespace {
template <typename T>
std::span<const uint8_t> bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}
}  // namespace

PipelineWorker::PipelineWorker(zmq::context_t& ctx, const RunSpec& s, const LinkSecurity& security,
                               Backend& be, Shape input, int classes)
    : s_(s),
      be_(be),
      input_(input),
      classes_(classes),
      link_(ctx, s.pipeline.bind, s.pipeline.deadline_seconds, &security),
      replicas_(ctx, s, security),
      sgd_(s.optimizer.sgd) {}

void PipelineWorker::join(int stage, int stages, const LinkPeer& prev, const LinkPeer& next,
                          int replica, int replicas, const LinkPeer& replica_next) {
  FEDPAR_CHECK(stages >= 1 && stage >= 0 && stage < stages)
      << "stage " << stage << " of " << stages;
  const std::vector<LayerRange> ranges =
      pipeline_split(s_.model, input_, classes_, stages, s_.pipeline.split);
  stage_ = stage, stages_ = stages;
  const int slots = pipe_slots(s_.pipeline.schedule, stage, stages, s_.pipeline.micro_batches);
  stage_model_ =
      std::make_unique<Stage>(be_, s_.model, input_, classes_, ranges[size_t(stage)], slots);
  link_.connect(prev, next);
  replicas_.join(replica, replicas, replica_next);
}

void PipelineWorker::set_params(std::span<const float> part) {
  FEDPAR_CHECK(stage_model_) << "the model came before the stage assignment";
  check_part_size(part.size(), stage_model_->num_params(), "stage", stage_);
  params_.assign(part.begin(), part.end());
  stage_model_->set_params_host(params_);
}

void PipelineWorker::set_velocity(std::span<const float> part) {
  FEDPAR_CHECK(stage_model_) << "the velocity came before the stage assignment";
  check_part_size(part.size(), stage_model_->num_params(), "stage", stage_);
  sgd_.set_velocity(part);
}

PartStep PipelineWorker::step(const Dataset& data, std::span<const uint32_t> shard, uint32_t client,
                              int64_t batch, uint64_t round, BatchBuffer& buffer) {
  using Clock = std::chrono::steady_clock;
  FEDPAR_CHECK(stage_model_ && !params_.empty()) << "a pipeline step before the model came";
  Stage& st = *stage_model_;
  const auto t0 = Clock::now();
  const double wait0 = link_.wait_seconds();
  const uint64_t sent0 = link_.bytes_sent(), received0 = link_.bytes_received();
  const int m = s_.pipeline.micro_batches;
  const PipeSchedule sched = s_.pipeline.schedule;
  if (batch < m)
    throw Error(fmt::format("a batch of {} samples cannot make {} micro-batches", batch, m));
  const std::vector<MicroBatch> micro = split_micro_batches(int(batch), m);
  const int slots = st.slots();
  const size_t in_floats = st.input_shape().size(), out_floats = st.output_shape().size();

  const float* x = nullptr;
  std::vector<std::vector<int32_t>> labels(static_cast<size_t>(m));  // per micro-batch, on the host
  if (st.is_first()) {
    const std::vector<uint32_t> rows = gradient_batch(shard, batch, s_.seed, client, round);
    if (rows.size() != size_t(batch))
      throw Error(fmt::format("the first stage's shard gives a batch of {}, the task says {}",
                              rows.size(), batch));
    buffer.load(data, rows);
    x = buffer.x();
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < micro[size_t(j)].size; ++i)
        labels[size_t(j)].push_back(data.y[rows[size_t(micro[size_t(j)].offset + i)]]);
  }

  PartStep out;
  out.num_samples = uint64_t(batch);
  st.zero_grads();
  // the mean over every replica's batch, once the replica ring has summed the parts
  const float scale = 1.0f / float(batch * replicas_.replicas());
  // [network] simulated: each op's compute (its time less its wait on the links) and what it sent
  const bool simulated = s_.network.mode == NetworkMode::kSimulated;
  // (the first op's includes drawing the batch, before it)
  auto op_start = t0;
  double op_wait = wait0;
  uint64_t op_sent = sent0;
  const auto end_op = [&] {
    if (!simulated) return;
    const auto now = Clock::now();
    const double wait = link_.wait_seconds();
    out.op_seconds.push_back(
        std::max(0.0, std::chrono::duration<double>(now - op_start).count() - (wait - op_wait)));
    out.op_bytes.push_back(link_.bytes_sent() - op_sent);
    op_start = now, op_wait = wait, op_sent = link_.bytes_sent();
  };
  for (const PipeOp op : pipe_ops(sched, stage_, stages_, m)) {
    const size_t j = size_t(op.micro);
    const MicroBatch mb = micro[j];
    const int slot = op.micro % slots;
    if (op.kind == PipeOp::kForward) {
      const float* in = nullptr;
      if (st.is_first()) {
        in = x + size_t(mb.offset) * in_floats;
      } else {
        const auto msg = link_.receive(pipe_tag(round, uint32_t(j), PipeDirection::kForward),
                                       size_t(mb.size) * in_floats * sizeof(float),
                                       size_t(mb.size) * sizeof(int32_t));
        in_.reserve(be_, size_t(mb.size) * in_floats);
        be_.upload(in_.data(), msg.payload.data(), msg.payload.size());
        labels[j].resize(size_t(mb.size));
        std::memcpy(labels[j].data(), msg.extra.data(), msg.extra.size());
        for (int32_t y : labels[j])
          if (y < 0 || y >= classes_)
            throw Error(fmt::format("pipeline: the previous stage sent label {} ({} classes)", y,
                                    classes_));
        in = in_.data();
      }
      const float* y = st.forward(slot, in, mb.size);
      if (!st.is_last()) {
        host_.resize(size_t(mb.size) * out_floats);
        be_.download(host_.data(), y, host_.size() * sizeof(float));
        link_.send(PipeDirection::kForward, pipe_tag(round, uint32_t(j), PipeDirection::kForward),
                   bytes_of(host_), bytes_of(labels[j]));
      }
      end_op();
      continue;
    }
    float* dx = nullptr;
    if (!st.is_first()) {
      dx_.reserve(be_, size_t(mb.size) * in_floats);
      dx = dx_.data();
    }
    if (st.is_last()) {
      labels_.reserve(be_, size_t(mb.size));
      labels_.upload(labels[j].data(), labels[j].size());
      out.loss_sum += st.loss_backward(slot, labels_.data(), scale, dx).loss_sum;
    } else {
      const auto msg = link_.receive(pipe_tag(round, uint32_t(j), PipeDirection::kBackward),
                                     size_t(mb.size) * out_floats * sizeof(float), 0);
      in_.reserve(be_, size_t(mb.size) * out_floats);
      be_.upload(in_.data(), msg.payload.data(), msg.payload.size());
      st.backward(slot, in_.data(), dx);
    }
    if (dx) {
      host_.resize(size_t(mb.size) * in_floats);
      be_.download(host_.data(), dx, host_.size() * sizeof(float));
      link_.send(PipeDirection::kBackward, pipe_tag(round, uint32_t(j), PipeDirection::kBackward),
                 bytes_of(host_));
    }
    end_op();
  }
  // One SGD step per batch on the host slice, as the parameter server steps its whole model.
  replicas_.apply(st.grads_host(), stage_, stages_, round, sgd_, params_, out);
  st.set_params_host(params_);
  out.link_seconds = link_.wait_seconds() - wait0;
  out.compute_seconds = std::chrono::duration<double>(Clock::now() - t0).count() -
                        out.link_seconds - out.replica_seconds;
  out.bytes_sent = link_.bytes_sent() - sent0;
  out.bytes_received = link_.bytes_received() - received0;
  return out;
}

}  // namespace fedpar
