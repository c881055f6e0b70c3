// Tensor parallelism in one process (t ranks on t threads, an in-memory all-reduce that sums in
// rank order): the slices cover the model once, the gradients match the whole model's within the
// rounding of a re-summed batch, replicated tensors agree bit for bit on every rank, and the
// all-reduced floats follow the one-forward-one-backward-per-pair formula.
#include "core/tensor_shard.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <memory>
#include <thread>

#include "core/backend.h"
#include "core/model.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::error_of;
using testing::random_vector;

// Sums every rank's span in rank order; every rank ends with the same bits.
class MemoryAllReduce {
 public:
  explicit MemoryAllReduce(int ways) : spans_(size_t(ways)), sync_(ways), floats_(size_t(ways)) {}
  void operator()(int rank, std::span<float> v) {
    spans_[size_t(rank)] = v;
    sync_.arrive_and_wait();
    std::vector<float> sum(spans_[0].begin(), spans_[0].end());
    for (size_t r = 1; r < spans_.size(); ++r)
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += spans_[r][i];
    sync_.arrive_and_wait();
    std::copy(sum.begin(), sum.end(), v.begin());
    floats_[size_t(rank)] += v.size();
  }
  size_t floats(int rank) { return floats_[size_t(rank)]; }

 private:
  std::vector<std::span<float>> spans_;
  std::barrier<> sync_;
  std::vector<size_t> floats_;  // an element per rank, written by its thread, read after the join
};

struct Result {
  std::vector<float> grads;  // the ranks' gradients put together in the whole model's layout
  std::vector<std::vector<float>> per_rank;
  double loss = 0;
  size_t floats = 0;
};

Result tensor_parallel_grads(const ModelSpec& spec, Shape in, int ways,
                             const std::vector<float>& whole, const std::vector<float>& x,
                             const std::vector<int32_t>& y, int batch) {
  std::vector<std::unique_ptr<Backend>> bes;
  std::vector<std::unique_ptr<TensorShard>> shards;
  for (int r = 0; r < ways; ++r) {
    bes.push_back(make_backend("cpu"));
    shards.push_back(std::make_unique<TensorShard>(*bes.back(), spec, in, 10, r, ways));
    shards.back()->set_params_from_whole(whole);
  }
  MemoryAllReduce ar(ways);
  std::vector<double> loss(static_cast<size_t>(ways));
  std::vector<std::thread> threads;
  for (int r = 0; r < ways; ++r)
    threads.emplace_back([&, r] {
      loss[size_t(r)] = shards[size_t(r)]
                            ->forward_backward(x.data(), y.data(), batch, 1.0f / batch,
                                               [&](std::span<float> v) { ar(r, v); })
                            .loss_sum;
    });
  for (auto& t : threads) t.join();
  Result out;
  out.grads.assign(whole.size(), 0.0f);
  for (int r = ways; r-- > 0;) {  // rank 0 last: its replicated tensors are written last
    out.per_rank.insert(out.per_rank.begin(), shards[size_t(r)]->grads_host());
    shards[size_t(r)]->place_in_whole(out.per_rank.front(), out.grads);
    EXPECT_EQ(loss[size_t(r)], loss[0]) << "every rank computes the same loss";
    EXPECT_EQ(ar.floats(r), size_t(batch) * shards[size_t(r)]->allreduce_floats_per_sample());
  }
  out.loss = loss[0];
  out.floats = ar.floats(0);
  return out;
}

TEST(TensorShard, GradientsMatchTheWholeModelWithinTheRoundingFloor) {
  const Shape mnist{28, 28, 1};
  auto be = make_backend("cpu");
  const int batch = 16;
  const auto x = random_vector(size_t(batch) * mnist.size(), 4, 0.0f, 1.0f);
  std::vector<int32_t> y(batch);
  for (int i = 0; i < batch; ++i) y[size_t(i)] = (i * 3) % 10;
  for (const ModelSpec& spec :
       {ModelSpec{"2nn"}, ModelSpec{"mlp", {64, 32, 48}}, ModelSpec{"cnn"}}) {
    Model whole(*be, spec, mnist, 10);
    whole.init(9);
    const BatchStats st = whole.forward_backward(x.data(), y.data(), batch, 1.0f / batch);
    const auto expect = whole.grads_host();
    // The floor: the same gradient summed in another order (the batch in two halves).
    Model halves(*be, spec, mnist, 10);
    halves.init(9);
    for (int h = 0; h < 2; ++h)
      halves.forward_backward(x.data() + size_t(h * batch / 2) * mnist.size(),
                              y.data() + h * batch / 2, batch / 2, 1.0f / batch);
    const double floor = testing::relative_distance(halves.grads_host(), expect);
    for (int ways : {2, 4}) {
      const Result tp = tensor_parallel_grads(spec, mnist, ways, whole.params_host(), x, y, batch);
      const double d = testing::relative_distance(tp.grads, expect);
      EXPECT_LE(d, 10 * floor) << spec.name << " t=" << ways << ": " << d << " vs floor " << floor;
      RecordProperty(spec.name + "_t" + std::to_string(ways),
                     fmt::format("{:.3g} (floor {:.3g})", d, floor));
      EXPECT_NEAR(tp.loss, st.loss_sum, 1e-5 * st.loss_sum) << spec.name;
      // A replicated tensor (a bias of a row-parallel layer, the CNN's convolutions) has the
      // same gradient bits on every rank.
      TensorShard r0(*be, spec, mnist, 10, 0, ways);
      for (const ParamView& v : r0.layout().views()) {
        const ParamView& w = whole.layout().find(v.name);
        if (v.size != w.size) continue;  // a slice
        for (int r = 1; r < ways; ++r)
          ASSERT_TRUE(std::equal(tp.per_rank[0].begin() + long(v.offset),
                                 tp.per_rank[0].begin() + long(v.offset + v.size),
                                 tp.per_rank[size_t(r)].begin() + long(v.offset)))
              << spec.name << " " << v.name << " rank " << r;
      }
    }
  }
}

// Training, the equivalence experiment's way: 20 SGD steps of tensor-parallel ranks stay within
// 10x the rounding floor of the whole model's steps, the floor being the same steps with the
// batch summed in another order (two halves, the second first), measured at every step. With a
// [grid] of data replicas, each replica's ranks take their own rows of the batch and each rank's
// gradients are summed over the replicas as the replica ring sums them.
TEST(TensorShard, TwentyStepsStayWithinTheRoundingFloor) {
  const Shape mnist{28, 28, 1};
  const int batch = 16, steps = 20;  // per replica
  const float lr = 0.1f;
  struct Case {
    ModelSpec spec;
    int ways, data;
  };
  for (const auto& [spec, ways, data] :
       {Case{ModelSpec{"2nn"}, 2, 1}, Case{ModelSpec{"mlp", {64, 32, 48}}, 4, 1},
        Case{ModelSpec{"2nn"}, 2, 2}, Case{ModelSpec{"mlp", {64, 32, 48}}, 2, 2}}) {
    const std::string name = fmt::format("{}_t{}_d{}", spec.name, ways, data);
    const int total = batch * data;
    auto be = make_backend("cpu");
    Model whole(*be, spec, mnist, 10), halves(*be, spec, mnist, 10);
    whole.init(5);
    auto start = whole.params_host();
    halves.set_params_host(start);
    std::vector<std::unique_ptr<Backend>> bes;
    std::vector<std::unique_ptr<TensorShard>> shards;  // replica d's rank r at d * ways + r
    std::vector<std::vector<float>> shard_params;
    for (int i = 0; i < ways * data; ++i) {
      bes.push_back(make_backend("cpu"));
      shards.push_back(std::make_unique<TensorShard>(*bes.back(), spec, mnist, 10, i % ways, ways));
      shards.back()->set_params_from_whole(start);
      shard_params.push_back(shards.back()->params_host());
    }
    double worst_ratio = 0;
    for (int step = 0; step < steps; ++step) {
      const auto x = random_vector(size_t(total) * mnist.size(), 200 + step, 0.0f, 1.0f);
      std::vector<int32_t> y(static_cast<size_t>(total));
      for (int i = 0; i < total; ++i) y[size_t(i)] = (i * 7 + step) % 10;
      for (Model* m : {&whole, &halves}) m->zero_grads();
      whole.forward_backward(x.data(), y.data(), total, 1.0f / float(total));
      for (int h = 2; h-- > 0;)
        halves.forward_backward(x.data() + size_t(h * total / 2) * mnist.size(),
                                y.data() + h * total / 2, total / 2, 1.0f / float(total));
      for (Model* m : {&whole, &halves}) {
        auto p = m->params_host();
        testing::host_sgd(p, m->grads_host(), lr);
        m->set_params_host(p);
      }
      std::vector<std::unique_ptr<MemoryAllReduce>> ars;  // one per replica
      for (int d = 0; d < data; ++d) ars.push_back(std::make_unique<MemoryAllReduce>(ways));
      std::vector<std::thread> threads;
      for (int i = 0; i < ways * data; ++i)
        threads.emplace_back([&, i] {
          const int d = i / ways, r = i % ways;
          const size_t row = size_t(d * batch);
          shards[size_t(i)]->zero_grads();
          // the worker's scale: the mean over every replica's rows
          shards[size_t(i)]->forward_backward(x.data() + row * mnist.size(), y.data() + row, batch,
                                              1.0f / float(total),
                                              [&](std::span<float> v) { (*ars[size_t(d)])(r, v); });
        });
      for (auto& t : threads) t.join();
      std::vector<float> tp(whole.num_params());
      for (int r = 0; r < ways; ++r) {
        auto g = shards[size_t(r)]->grads_host();  // replica 0's, plus the others' in order
        for (int d = 1; d < data; ++d) {
          const auto other = shards[size_t(d * ways + r)]->grads_host();
          for (size_t k = 0; k < g.size(); ++k) g[k] += other[k];
        }
        for (int d = 0; d < data; ++d) {
          auto& p = shard_params[size_t(d * ways + r)];
          testing::host_sgd(p, g, lr);
          shards[size_t(d * ways + r)]->set_params_host(p);
        }
        shards[size_t(r)]->place_in_whole(shard_params[size_t(r)], tp);
      }
      const auto ref = whole.params_host();
      const double floor = testing::relative_distance(halves.params_host(), ref);
      const double d = testing::relative_distance(tp, ref);
      ASSERT_GT(floor, 0) << name << " step " << step << ": the reordered sum floors nothing";
      ASSERT_LE(d, 10 * floor) << name << " step " << step;
      worst_ratio = std::max(worst_ratio, d / floor);
    }
    RecordProperty(name + "_worst_distance_over_floor", fmt::format("{:.2f}", worst_ratio));
  }
}

TEST(TensorShard, SlicesCoverTheModelOnceAndShrinkWithTheWays) {
  const Shape mnist{28, 28, 1};
  auto be = make_backend("cpu");
  const ModelSpec big{"mlp", {1024, 1024, 1024}};
  Model whole(*be, big, mnist, 10);
  whole.init(1);
  const auto p = whole.params_host();
  std::vector<float> back(p.size(), 0.0f);
  size_t local = 0;
  for (int r = 0; r < 4; ++r) {
    TensorShard s(*be, big, mnist, 10, r, 4);
    s.set_params_from_whole(p);
    s.place_in_whole(s.params_host(), back);
    local += s.num_params();
    // fc1 784->256 and fc2 256->1024 (+ its bias), fc3 1024->256, fc4 256->10 (+ its bias)
    EXPECT_EQ(s.num_params(),
              784u * 256 + 256 + 1024u * 256 + 1024 + 1024u * 256 + 256 + 10u * 256 + 10);
    // forward: fc2's and fc4's outputs; backward: fc3's input (fc1's is the data's)
    EXPECT_EQ(s.allreduce_floats_per_sample(), 1024u + 10 + 1024);
  }
  EXPECT_EQ(back, p);
  EXPECT_LT(local, 4 * p.size());
}

TEST(TensorShard, RefusesSplitsThatDoNotDivide) {
  const Shape mnist{28, 28, 1};
  auto be = make_backend("cpu");
  EXPECT_NE(error_of([&] { TensorShard(*be, {"2nn"}, mnist, 10, 0, 3); })
                .find("splits fc1's 200 outputs 3 ways: it needs a multiple of 3 (the ways are "
                      "processes / grid.data; ways that split every pair: 2, 4, 5, 8, 10)"),
            std::string::npos);
  // two pairs, 200 and 150 wide: 4 splits the first, not the second; the ways named split both
  EXPECT_NE(error_of([&] {
              TensorShard(*be, {"mlp", {200, 64, 150}}, mnist, 10, 0, 4);
            })
                .find("splits fc3's 150 outputs 4 ways: it needs a multiple of 4 (the ways are "
                      "processes / grid.data; ways that split every pair: 2, 5, 10)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              TensorShard(*be, {"logreg"}, mnist, 10, 0, 2);
            }).find("model 'logreg' has no pair of dense layers"),
            std::string::npos);
  EXPECT_EQ(tensor_split_summary({"2nn"}, mnist, 10, 2),
            "fc1 column-parallel 784->100 of 200\nrelu on the local 100 of 200\n"
            "fc2 row-parallel 100->200 of 200 inputs, then all-reduce\nrelu replicated\n"
            "fc3 replicated\n");
}

}  // namespace
}  // namespace fedpar
