// Training throughput of fedpar's core on the CPU or the GPU (--device cuda): samples/second of
// full SGD steps (gather a shuffled batch, copy it to the device, forward, loss, backward, update)
// for the models and batch sizes researchers use.
// Prints a table, or JSON lines with --json for scripts/bench.sh, which sets it beside PyTorch.
// Each row is the median of --reps repetitions, each at least --min-seconds long.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/batch_buffer.h"
#include "core/dataset.h"
#include "core/median.h"
#include "core/model.h"
#include "core/optimizer.h"
#include "core/rng.h"

namespace fedpar {
namespace {

struct Case {
  std::string model;
  int64_t batch;  // 0 = the whole training set
};

// Returns samples/second for each repetition.
std::vector<double> measure(const Dataset& data, const Case& c, const std::string& device,
                            int threads, int reps, double min_seconds) {
  auto be = make_backend(device, threads);
  Model model(*be, {c.model}, data.shape, data.num_classes);
  model.init(1);
  Sgd sgd(*be, model.num_params(), {});
  const size_t n = data.size();
  const size_t batch = c.batch == 0 ? n : size_t(c.batch);
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  Rng(1, "shuffle").shuffle(std::span(order));
  DeviceArray<float> x(*be, batch * data.dim());
  DeviceArray<int32_t> y(*be, batch);
  std::vector<float> hx(be->host_memory() ? 0 : x.size());  // staging for a device backend
  std::vector<int32_t> hy(be->host_memory() ? 0 : y.size());
  size_t cursor = 0;
  auto step = [&] {
    if (cursor + batch > n) cursor = 0;
    const auto rows = std::span(order).subspan(cursor, batch);
    if (be->host_memory()) {
      gather_on_host(*be, data, rows, x.data(), y.data());  // as BatchBuffer does
    } else {
      data.gather(rows, hx.data(), hy.data());
      be->upload(x.data(), hx.data(), hx.size() * sizeof(float));
      be->upload(y.data(), hy.data(), hy.size() * sizeof(int32_t));
    }
    cursor += batch;
    model.zero_grads();
    model.forward_backward(x.data(), y.data(), int(batch), 1.0f / float(batch));
    sgd.step(model.params(), model.grads(), 0.01f);
  };
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 3 && batch < n; ++i) step();  // warm-up: allocations, caches
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    int64_t steps = 0;
    const auto t0 = clock::now();
    double elapsed = 0;
    do {
      step();
      ++steps;
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    } while (elapsed < min_seconds);  // each step waits for its loss, so the device is done
    rates.push_back(double(steps) * double(batch) / elapsed);
  }
  return rates;
}

Dataset bench_data(bool* real) {
  try {
    TrainTest tt = load_dataset({.name = "mnist"});
    *real = true;
    return std::move(tt.train);
  } catch (const Error&) {
    // No MNIST: random images of the same shape measure the same arithmetic.
    *real = false;
    Dataset d{.name = "random-mnist-shape", .shape = {28, 28, 1}, .num_classes = 10};
    Rng rng(1, "bench-data");
    d.x.resize(60000 * 784);
    for (float& v : d.x) v = rng.uniform();
    d.y.resize(60000);
    for (int32_t& v : d.y) v = int32_t(rng.below(10));
    return d;
  }
}

}  // namespace
}  // namespace fedpar

int main(int argc, char** argv) {
  using namespace fedpar;
  CLI::App app{"fedpar training throughput"};
  std::string device = "cpu";
  bool json = false;
  int reps = 5;
  double min_seconds = 0.3;
  std::vector<int> threads = {1, 2};
  std::string only, only_batch;
  app.add_flag("--json", json, "JSON lines instead of a table");
  app.add_option("--reps", reps, "repetitions per row (median reported)");
  app.add_option("--min-seconds", min_seconds, "minimum length of one repetition");
  app.add_option("--threads", threads, "thread counts")->delimiter(',');
  app.add_option("--only", only, "run only rows of this model");
  app.add_option("--batch", only_batch, "run only rows of this batch (10, 50, 600, full)");
  app.add_option("--device", device, "cpu or cuda")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::vector<Case> cases =
      device == "cpu" ? std::vector<Case>{{"2nn", 10}, {"2nn", 50},     {"2nn", 600},
                                          {"2nn", 0},  {"logreg", 600}, {"cnn", 50}}
                      : std::vector<Case>{{"2nn", 10}, {"2nn", 50}, {"2nn", 600},
                                          {"cnn", 10}, {"cnn", 50}, {"cnn", 600}};
  if (device != "cpu") threads = {1};  // host threads do not matter to a device backend
  bool real = false;
  const Dataset data = bench_data(&real);
  std::unique_ptr<Backend> be;
  try {
    be = make_backend(device, 1);
  } catch (const Error& e) {
    fmt::print(stderr, "bench_train: {}\n", e.what());
    return 2;
  }
  if (!json) {
    fmt::print("fedpar training throughput ({}; data: {})\n", be->describe(),
               real ? "MNIST train set" : "random, MNIST-shaped");
    fmt::print("{:<8} {:>7} {:>8} {:>14}   {}\n", "model", "batch", "threads", "samples/s",
               "all reps");
  }
  for (int t : threads)
    for (const auto& c : cases) {
      const std::string batch = c.batch == 0 ? "full" : std::to_string(c.batch);
      if ((!only.empty() && c.model != only) || (!only_batch.empty() && batch != only_batch))
        continue;
      const auto rates = measure(data, c, device, t, reps, min_seconds);
      const double med = median(rates);
      if (json) {
        nlohmann::json j = {
            {"side", "fedpar"},     {"model", c.model},
            {"batch", batch},       {"threads", t},
            {"samples_per_s", med}, {"reps", rates},
            {"device", device},     {"backend", make_backend(device, t)->describe()}};
        fmt::print("{}\n", j.dump());
      } else {
        std::string all;
        for (double r : rates) all += fmt::format("{:.0f} ", r);
        fmt::print("{:<8} {:>7} {:>8} {:>14.0f}   {}\n", c.model, batch, t, med, all);
      }
      std::fflush(stdout);
    }
  return 0;
}
