// Pipeline stages and schedules: splits, the slice's init, gradients bit for bit equal to the
// whole model's, slots and the bubble of GPipe and 1F1B.
#include "core/stage.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>

#include "core/backend.h"
#include "core/optimizer.h"
#include "core/pipeline_local.h"
#include "core/pipeline_schedule.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::error_of;
using testing::random_vector;

class Stages : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> be = make_backend("cpu");
  const Shape mnist{28, 28, 1};
  const ModelSpec mlp{"mlp", {64, 48, 32}};

  std::vector<std::unique_ptr<Stage>> make_stages(const ModelSpec& spec,
                                                  const std::vector<LayerRange>& ranges,
                                                  PipeSchedule sched, int m, uint64_t seed) {
    std::vector<std::unique_ptr<Stage>> out;
    const int p = int(ranges.size());
    for (int s = 0; s < p; ++s) {
      out.push_back(std::make_unique<Stage>(*be, spec, mnist, 10, ranges[size_t(s)],
                                            pipe_slots(sched, s, p, m)));
      out.back()->init(seed);
    }
    return out;
  }
  static std::vector<float> concat_grads(const std::vector<std::unique_ptr<Stage>>& stages) {
    std::vector<float> g;
    for (const auto& s : stages) {
      const auto part = s->grads_host();
      g.insert(g.end(), part.begin(), part.end());
    }
    return g;
  }
};

TEST_F(Stages, SplitBalancesParametersOverTheAllowedStarts) {
  // 2nn: fc1 (157,000), relu, fc2 (40,200), relu, fc3 (2,010); stages start at a dense layer.
  EXPECT_EQ(split_by_params({"2nn"}, mnist, 10, 2), (std::vector<LayerRange>{{0, 2}, {2, 5}}));
  EXPECT_EQ(split_by_params({"2nn"}, mnist, 10, 3),
            (std::vector<LayerRange>{{0, 2}, {2, 4}, {4, 5}}));
  // 784-1024-1024-1024-10: fc1 803,840 and fc2, fc3 1,049,600 each; fc4 10,250. The best
  // 2-way split puts fc1+fc2 (1.85M) against fc3+fc4 (1.06M).
  const ModelSpec big{"mlp", {1024, 1024, 1024}};
  EXPECT_EQ(split_by_params(big, mnist, 10, 2), (std::vector<LayerRange>{{0, 4}, {4, 7}}));
  EXPECT_EQ(split_by_params(big, mnist, 10, 4).size(), 4u);
  // cnn: conv1 conv2 | fc1 | fc2 splits between and inside the convolution and dense parts.
  EXPECT_EQ(split_by_params({"cnn"}, mnist, 10, 4),
            (std::vector<LayerRange>{{0, 3}, {3, 6}, {6, 8}, {8, 9}}));
  EXPECT_EQ(split_at({"cnn"}, mnist, 10, {"fc1"}), (std::vector<LayerRange>{{0, 6}, {6, 9}}));
}

TEST_F(Stages, RefusesSplitsTheModelCannotTake) {
  EXPECT_NE(error_of([&] { split_by_params({"2nn"}, mnist, 10, 4); })
                .find("splits into 1 to 3 stages (a stage starts at a layer with parameters: "
                      "fc1, fc2, fc3), not 4"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              split_at({"cnn"}, mnist, 10, {"pool"});
            }).find("cannot start at 'pool' (it may start at: conv2, fc1, fc2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              split_at({"cnn"}, mnist, 10, {"fc1", "conv2"});
            }).find("'conv2' comes too early"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              Stage(*be, {"2nn"}, mnist, 10, {1, 3}, 1);
            }).find("are not a stage"),
            std::string::npos);
}

TEST_F(Stages, SlicesHoldTheWholeModelsParametersOnce) {
  for (const ModelSpec& spec : {ModelSpec{"2nn"}, ModelSpec{"cnn"}, mlp}) {
    Model whole(*be, spec, mnist, 10);
    whole.init(3);
    const auto all = whole.params_host();
    const auto ranges = split_by_params(spec, mnist, 10, 3);
    size_t at = 0;
    for (const LayerRange& r : ranges) {
      Stage st(*be, spec, mnist, 10, r, 1);
      st.init(3);
      EXPECT_EQ(st.model_offset(), at) << spec.name;
      const auto mine = st.params_host();
      ASSERT_EQ(std::vector<float>(all.begin() + long(at), all.begin() + long(at + mine.size())),
                mine)
          << spec.name << " stage at layer " << r.first;
      EXPECT_LT(st.parameter_bytes(), whole.parameter_bytes());
      at += mine.size();
    }
    EXPECT_EQ(at, all.size()) << spec.name;
  }
}

// The pipeline adds the micro-batches' gradients in micro-batch order, as one process looping
// over the same micro-batches does: equal bit for bit, for every split, schedule and m; with
// m = 1 it is the whole batch's forward_backward itself.
TEST_F(Stages, PipelineGradientsEqualTheWholeModelsBitForBit) {
  const int batch = 12;
  for (const ModelSpec& spec : {ModelSpec{"2nn"}, ModelSpec{"cnn"}, mlp}) {
    const auto x = random_vector(size_t(batch) * mnist.size(), 11, 0.0f, 1.0f);
    std::vector<int32_t> y(batch);
    for (int i = 0; i < batch; ++i) y[size_t(i)] = (i * 7) % 10;
    for (int m : {1, 3, 4}) {
      Model whole(*be, spec, mnist, 10);
      whole.init(5);
      double loss = 0;
      for (const MicroBatch mb : split_micro_batches(batch, m))
        loss += whole
                    .forward_backward(x.data() + size_t(mb.offset) * mnist.size(),
                                      y.data() + mb.offset, mb.size, 1.0f / batch)
                    .loss_sum;
      const auto expect = whole.grads_host();
      for (int p = 1; p <= 3; ++p) {
        for (PipeSchedule sched : {PipeSchedule::kGPipe, PipeSchedule::k1F1B}) {
          auto stages = make_stages(spec, split_by_params(spec, mnist, 10, p), sched, m, 5);
          std::vector<Stage*> ptrs;
          for (auto& s : stages) ptrs.push_back(s.get());
          const BatchStats st = pipeline_step_local(ptrs, sched, m, x.data(), y.data(), batch);
          ASSERT_EQ(concat_grads(stages), expect)
              << spec.name << " p=" << p << " m=" << m << " " << pipe_schedule_name(sched);
          EXPECT_EQ(st.loss_sum, loss);
          EXPECT_EQ(st.samples, batch);
        }
      }
    }
  }
}

TEST_F(Stages, OneFOneBRunsWarmupThenAlternates) {
  using F = PipeOp;
  const auto f = [](int j) { return PipeOp{F::kForward, j}; };
  const auto b = [](int j) { return PipeOp{F::kBackward, j}; };
  EXPECT_EQ(pipe_ops(PipeSchedule::k1F1B, 0, 4, 6),
            (std::vector<PipeOp>{f(0), f(1), f(2), f(3), b(0), f(4), b(1), f(5), b(2), b(3), b(4),
                                 b(5)}));
  EXPECT_EQ(pipe_ops(PipeSchedule::k1F1B, 3, 4, 3),
            (std::vector<PipeOp>{f(0), b(0), f(1), b(1), f(2), b(2)}));
  EXPECT_EQ(pipe_ops(PipeSchedule::kGPipe, 1, 4, 2), (std::vector<PipeOp>{f(0), f(1), b(0), b(1)}));
  // In flight: GPipe all m; 1F1B at most p - s (and never more than m).
  EXPECT_EQ(pipe_slots(PipeSchedule::kGPipe, 0, 4, 16), 16);
  EXPECT_EQ(pipe_slots(PipeSchedule::k1F1B, 0, 4, 16), 4);
  EXPECT_EQ(pipe_slots(PipeSchedule::k1F1B, 3, 4, 16), 1);
  EXPECT_EQ(pipe_slots(PipeSchedule::k1F1B, 0, 4, 2), 2);
}

TEST_F(Stages, BubbleIsTheTextbookFraction) {
  for (PipeSchedule sched : {PipeSchedule::kGPipe, PipeSchedule::k1F1B})
    for (int p : {1, 2, 4})
      for (int m : {1, 2, 4, 8, 16}) {
        const PipeTiming t = pipe_timing(sched, p, m, 1.0, 2.0);
        EXPECT_DOUBLE_EQ(t.makespan, 3.0 * (m + p - 1)) << p << " " << m;
        EXPECT_NEAR(t.bubble, double(p - 1) / (m + p - 1), 1e-12) << p << " " << m;
      }
}

// Hand-worked: 2 stages, 2 micro-batches, GPipe, every op 1 s; each message 3 s on its link and
// 0.5 s of latency. Stage 0's F1 output waits for F0's to leave the link (7.5, not 5.5), and so do
// stage 1's backward messages (arriving at 13 and 16).
TEST_F(Stages, APipelinesMessagesQueueOnTheirLink) {
  std::vector<PipeStageCosts> costs(2);
  for (PipeStageCosts& c : costs) {
    c.op_seconds = {1, 1, 1, 1};
    c.send_seconds = {3, 3, 3, 3};  // a stage's sends that have no neighbour are never made
    c.latency_seconds = {0.5, 0.5, 0.5, 0.5};
  }
  // stage 0: F0 0-1, F1 1-2, B0 13-14, B1 16-17; stage 1: F0 4.5-5.5, F1 7.5-8.5, B0, B1 to 10.5
  EXPECT_EQ(pipe_finish(PipeSchedule::kGPipe, 2, 2, costs), (std::vector<double>{17, 10.5}));
  // Without messages' costs: the unit-time schedule, 2 + 1 forward and backward slots.
  for (PipeStageCosts& c : costs) c.send_seconds.clear(), c.latency_seconds.clear();
  EXPECT_EQ(pipe_finish(PipeSchedule::kGPipe, 2, 2, costs), (std::vector<double>{6, 5}));
}

// Hand-worked: 3 stages, 3 micro-batches, 1F1B, every op 1 s, every message 2 s on its link, no
// latency. The middle stage runs F0 F1 B0 F2 B1 B2: its B0 gradient leaves at 11 and holds its
// uplink to 13, so F2's output, ready at 12, leaves behind it (one uplink carries both
// directions) and reaches the last stage at 15, not 14.
TEST_F(Stages, AStagesForwardAndBackwardSendsShareItsUplink) {
  std::vector<PipeStageCosts> costs(3);
  for (PipeStageCosts& c : costs) {
    c.op_seconds.assign(6, 1);
    c.send_seconds.assign(6, 2);
    c.latency_seconds.assign(6, 0);
  }
  // stage 2: F2 15-16, B2 16-17 (its gradient in at 19); stage 1: B2 19-20 (in at 22); stage 0:
  // B2 22-23
  EXPECT_EQ(pipe_finish(PipeSchedule::k1F1B, 3, 3, costs), (std::vector<double>{23, 20, 17}));
}

// A stage begins no earlier than its start (its TASK's arrival), and what waits on it waits too.
TEST_F(Stages, AStageBeginsWhenItsTaskIsIn) {
  std::vector<PipeStageCosts> costs(2);
  costs[0].op_seconds = costs[1].op_seconds = {1, 1};
  costs[1].start = 5;
  // stage 0: F0 0-1, B0 after stage 1's B0 (7) to 8; stage 1: F0 5-6, B0 6-7
  EXPECT_EQ(pipe_finish(PipeSchedule::k1F1B, 2, 1, costs), (std::vector<double>{8, 7}));
  costs[1].op_seconds = {1, 1, 1};
  EXPECT_THROW(pipe_finish(PipeSchedule::k1F1B, 2, 1, costs), Error);
  costs.pop_back();
  EXPECT_THROW(pipe_finish(PipeSchedule::k1F1B, 2, 1, costs), Error);
}

// 1F1B's point: the first stage holds p micro-batches' activations, GPipe's all m.
TEST_F(Stages, OneFOneBHoldsFewerActivationsThanGPipe) {
  const int batch = 32, m = 8, p = 4;
  const ModelSpec big{"mlp", {256, 256, 256}};
  const auto x = random_vector(size_t(batch) * mnist.size(), 2, 0.0f, 1.0f);
  std::vector<int32_t> y(batch, 3);
  size_t held[2];
  for (PipeSchedule sched : {PipeSchedule::kGPipe, PipeSchedule::k1F1B}) {
    auto stages = make_stages(big, split_by_params(big, mnist, 10, p), sched, m, 1);
    std::vector<Stage*> ptrs;
    for (auto& s : stages) ptrs.push_back(s.get());
    pipeline_step_local(ptrs, sched, m, x.data(), y.data(), batch);
    held[sched == PipeSchedule::k1F1B] = stages[0]->activation_bytes_held();
  }
  // m slots against p, each a micro-batch of 4's input and its layers' outputs (stage 0: 784
  // inputs, fc1 256, relu 256), plus one gradient pair for the stage whatever its slots: twice its
  // widest output (its first layer's input gradient is the caller's buffer, or none at stage 0)
  const size_t f = sizeof(float), slot = size_t(batch / m) * (784 + 256 + 256) * f,
               pair = 2 * size_t(batch / m) * 256 * f;
  EXPECT_EQ(held[0], size_t(m) * slot + pair);
  EXPECT_EQ(held[1], size_t(p) * slot + pair);
}

// Training, the equivalence experiment's way: 20 SGD steps of the 2NN through 3 stages with 4
// micro-batches stay within 10x the rounding floor of the whole model's full-batch steps, the
// floor being the same steps with the batch summed in another order (the batch's rows in two
// halves, the second first), measured at the same step. With a [grid] of 2 data replicas, each
// replica's stages take their own rows and each stage's gradients are summed over the replicas
// as the replica ring sums them (that the processes' replicas stay identical is checked by
// hash in tests/cli/model_parallel_test.cc).
TEST_F(Stages, TwentyPipelinedStepsStayWithinTheRoundingFloor) {
  const ModelSpec spec{"2nn"};
  const int batch = 24, m = 4, steps = 20;  // batch per replica
  const float lr = 0.1f;
  const auto ranges = split_by_params(spec, mnist, 10, 3);
  const size_t p = ranges.size();
  for (int data : {1, 2}) {
    const int total = batch * data;
    std::vector<std::vector<std::unique_ptr<Stage>>> replicas;
    std::vector<std::vector<Stage*>> ptrs;
    for (int d = 0; d < data; ++d) {
      replicas.push_back(make_stages(spec, ranges, PipeSchedule::k1F1B, m, 7));
      ptrs.emplace_back();
      for (auto& st : replicas.back()) ptrs.back().push_back(st.get());
    }
    Model whole(*be, spec, mnist, 10), halves(*be, spec, mnist, 10);
    whole.init(7);
    halves.init(7);
    double worst_ratio = 0;
    for (int step = 0; step < steps; ++step) {
      const auto x = random_vector(size_t(total) * mnist.size(), 100 + step, 0.0f, 1.0f);
      std::vector<int32_t> y(static_cast<size_t>(total));
      for (int i = 0; i < total; ++i) y[size_t(i)] = (i * 7 + step) % 10;
      for (Model* md : {&whole, &halves}) md->zero_grads();
      whole.forward_backward(x.data(), y.data(), total, 1.0f / float(total));
      for (int h = 2; h-- > 0;)
        halves.forward_backward(x.data() + size_t(h * total / 2) * mnist.size(),
                                y.data() + h * total / 2, total / 2, 1.0f / float(total));
      for (Model* md : {&whole, &halves}) {
        auto params = md->params_host();
        testing::host_sgd(params, md->grads_host(), lr);
        md->set_params_host(params);
      }
      for (int d = 0; d < data; ++d) {
        for (auto* st : ptrs[size_t(d)]) st->zero_grads();
        const size_t row = size_t(d * batch);
        pipeline_step_local(ptrs[size_t(d)], PipeSchedule::k1F1B, m, x.data() + row * mnist.size(),
                            y.data() + row, batch);
      }
      std::vector<float> piped;
      for (size_t s = 0; s < p; ++s) {
        // Replica 0's mean-loss gradient plus the others' in order, over `data` replicas: the
        // worker scales each by 1 / (batch * data) instead, the same bits for data = 2 (halving
        // is exact, so it commutes with every rounding).
        auto g = ptrs[0][s]->grads_host();
        for (int d = 1; d < data; ++d) {
          const auto other = ptrs[size_t(d)][s]->grads_host();
          for (size_t k = 0; k < g.size(); ++k) g[k] += other[k];
        }
        for (float& v : g) v /= float(data);
        for (int d = 0; d < data; ++d) {
          auto params = ptrs[size_t(d)][s]->params_host();
          testing::host_sgd(params, g, lr);
          ptrs[size_t(d)][s]->set_params_host(params);
        }
        const auto part = ptrs[0][s]->params_host();
        piped.insert(piped.end(), part.begin(), part.end());
      }
      const auto ref = whole.params_host();
      const double floor = testing::relative_distance(halves.params_host(), ref);
      const double dist = testing::relative_distance(piped, ref);
      ASSERT_GT(floor, 0) << "step " << step
                          << ": a reordered sum that rounds alike floors nothing";
      ASSERT_LE(dist, 10 * floor) << "data " << data << " step " << step;
      worst_ratio = std::max(worst_ratio, dist / floor);
    }
    RecordProperty(fmt::format("data{}_worst_distance_over_floor", data),
                   fmt::format("{:.2f}", worst_ratio));
  }
}

}  // namespace
}  // namespace fedpar
