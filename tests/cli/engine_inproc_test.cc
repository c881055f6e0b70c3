// The round engine on threads: the server and its client processes as threads of this test,
// talking over inproc://, end with the very model bytes that `fedpar run` with real processes over
// tcp gets, for every way of training (so a whole run is a unit test of well under a second).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "clients/client.h"
#include "core/codec/powersgd.h"
#include "core/codec/randk.h"
#include "core/dataset.h"
#include "core/model.h"
#include "core/run_spec.h"
#include "server/server.h"
#include "tests/util/inproc_run.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

constexpr const char* kEngineRun =
    "seed = 3\nrounds = 6\nprocesses = 2\n[partition]\nclients = 4\n"
    "[data]\nname = 'synthetic'\niid = true\n[model]\nname = 'mlp'\nhidden = [32]\n";

using testing::model_hash;

// The run on threads: one server, `processes` clients, one ZeroMQ context shared for inproc.
std::string hash_on_threads(const TempDir& tmp, const std::string& name,
                            const std::vector<std::string>& sets) {
  return testing::run_on_threads(kEngineRun, tmp / "threads", name, sets).hash;
}

std::string run_as_processes(const TempDir& tmp, const std::string& name,
                             const std::vector<std::string>& sets) {
  std::ofstream(tmp / "run.toml") << kEngineRun;
  std::string args = fmt::format("run {} --set name={} --set results_dir={}",
                                 (tmp / "run.toml").string(), name, (tmp / "processes").string());
  for (const auto& s : sets) args += " --set " + s;
  const auto r = testing::run_fedpar(args, tmp.path());
  EXPECT_EQ(r.code, 0) << r.err;
  return model_hash(tmp / "processes" / name);
}

struct Case {
  const char* name;
  std::vector<std::string> sets;
};

TEST(EngineInproc, ThreadsGetTheProcessRunsBytesInEveryWayOfTraining) {
  const std::vector<Case> cases = {
      {"gradient", {"regime=gradient", "sgd.batch=20"}},
      {"model", {"regime=model", "local.steps=3", "local.batch=10"}},
      {"model-sampled", {"regime=model", "fraction=0.5", "local.epochs=1", "local.batch=25"}},
      {"master", {"regime=gradient", "topology=master", "sgd.batch=20"}},
      {"allreduce",
       {"regime=gradient", "topology=allreduce", "sgd.batch=20", "allreduce.hash_every=2"}},
      {"gradient-compressed",
       {"regime=gradient", "sgd.batch=20", "compression.uplink=fp16", "compression.downlink=bf16",
        "compression.error_feedback=true"}},
      {"allreduce-compressed",
       {"regime=gradient", "topology=allreduce", "sgd.batch=20", "allreduce.hash_every=1",
        "compression.uplink=fp16"}},
      {"model-sampled-compressed",
       {"regime=model", "fraction=0.5", "local.batch=25", "compression.uplink=bf16",
        "compression.error_feedback=true", "compression.downlink=fp16",
        "compression.downlink_delta=true"}},
  };
  TempDir tmp;
  for (const auto& c : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string threads = hash_on_threads(tmp, c.name, c.sets);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(threads, run_as_processes(tmp, c.name, c.sets)) << c.name;
    RecordProperty(fmt::format("{}_inproc_seconds", c.name), fmt::format("{:.3f}", seconds));
  }
}

// The last round's record of a run on threads.
nlohmann::json last_round(const TempDir& tmp, const std::string& name) {
  std::ifstream in(tmp / "threads" / name / "metrics.jsonl");
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return nlohmann::json::parse(last);
}

// Each client's UPDATE is the codec's bytes plus header and body (under 512 bytes); the TASK's
// model frame is the downlink codec's; and the compressed run ends elsewhere than the raw one.
TEST(EngineInproc, CompressedLinksCarryTheCodecsBytes) {
  TempDir tmp;
  const std::vector<std::string> raw = {"regime=gradient", "sgd.batch=20"};
  std::vector<std::string> packed = raw;
  packed.insert(packed.end(), {"compression.uplink=fp16", "compression.downlink=bf16"});
  const std::string raw_hash = hash_on_threads(tmp, "raw", raw);
  const std::string packed_hash = hash_on_threads(tmp, "packed", packed);
  EXPECT_NE(raw_hash, packed_hash);
  const auto r = last_round(tmp, "raw"), p = last_round(tmp, "packed");
  const uint64_t floats = r.at("bytes_down_per_task").get<uint64_t>() / 4;
  ASSERT_GT(floats, 1000u);
  EXPECT_EQ(p.at("bytes_down_per_task").get<uint64_t>(), 2 * floats);
  for (const auto& [record, per_value] : {std::pair{r, 4u}, std::pair{p, 2u}}) {
    ASSERT_EQ(record.at("clients").size(), 4u);
    for (const auto& c : record.at("clients")) {
      EXPECT_GT(c.at("bytes_up").get<uint64_t>(), per_value * floats);
      EXPECT_LT(c.at("bytes_up").get<uint64_t>(), per_value * floats + 512);
    }
  }
}

// The floats PowerSGD at rank 2 sends for kEngineRun's model: factors of each matrix, raw biases.
size_t powersgd_floats(const std::vector<std::string>& sets) {
  Config cfg = make_run_config();
  cfg.merge_toml(kEngineRun, "the test");
  cfg.set_all(sets);
  const RunSpec s = resolve_run_spec(cfg);
  const auto be = make_backend("cpu", 1);
  const TrainTest data = load_dataset(s.data);
  const Model model(*be, s.model, data.train.shape, data.train.num_classes);
  const auto shapes = with_layout({}, model.layout()).shapes;
  return powersgd_wire_floats(powersgd_plan(shapes, 2), 2);
}

// PowerSGD as the uplink (gradients and model deltas, with error feedback) and on the ring (with
// and without): every UPDATE is the factors' bytes plus header and body, each ring worker sends
// 2 (N - 1) / N of the two all-reduces' floats, the replicas stay bitwise equal (checked every
// round: a mismatch stops the run), and the runs learn what the raw run learns, give or take.
TEST(EngineInproc, PowerSgdSendsTheFactorsAndStillLearns) {
  TempDir tmp;
  const std::vector<std::string> gradient = {"regime=gradient", "sgd.batch=20", "rounds=30"};
  const size_t floats = powersgd_floats(gradient);
  const auto raw = testing::run_on_threads(kEngineRun, tmp / "threads", "raw", gradient);
  const double raw_accuracy = raw.rounds.back().at("test_accuracy").get<double>();
  const uint64_t params = raw.rounds.back().at("bytes_down_per_task").get<uint64_t>() / 4;
  ASSERT_LT(4 * floats, params);  // the factors are smaller
  RecordProperty("raw_accuracy", fmt::format("{:.4f}", raw_accuracy));
  const std::vector<Case> cases = {
      {"ps-gradient", {"compression.uplink=powersgd", "compression.error_feedback=true"}},
      {"ps-model",
       {"regime=model", "local.steps=3", "local.batch=10", "compression.uplink=powersgd",
        "compression.error_feedback=true"}},
      {"ring", {"topology=allreduce", "allreduce.hash_every=1", "compression.uplink=powersgd"}},
      {"ring-ef",
       {"topology=allreduce", "allreduce.hash_every=1", "compression.uplink=powersgd",
        "compression.error_feedback=true"}},
      {"ring-randk",
       {"topology=allreduce", "allreduce.hash_every=1", "compression.uplink=randk",
        "compression.ratio=0.5", "compression.error_feedback=true"}},
  };
  for (const auto& c : cases) {
    std::vector<std::string> sets = gradient;
    sets.insert(sets.end(), c.sets.begin(), c.sets.end());
    const auto r = testing::run_on_threads(kEngineRun, tmp / "threads", c.name, sets);
    ASSERT_EQ(r.rounds.size(), 30u) << c.name;
    const double accuracy = r.rounds.back().at("test_accuracy").get<double>();
    RecordProperty(fmt::format("{}_accuracy", c.name), fmt::format("{:.4f}", accuracy));
    EXPECT_GT(accuracy, raw_accuracy - 0.15) << c.name;
    const bool ring = std::string(c.name).starts_with("ring");
    const bool randk = std::string(c.name) == "ring-randk";
    for (const auto& rec : r.rounds) {
      if (ring) {
        EXPECT_TRUE(rec.at("replicas_checked").get<bool>()) << c.name;
        // N = 2: each worker sends 2 (N - 1) / N = all of each all-reduce's floats, plus an
        // 8-byte tag per message
        const double want = 4.0 * double(randk ? randk_count(params, 0.5) : floats);
        for (const auto& w : rec.at("workers"))
          EXPECT_NEAR(w.at("ring_bytes_sent").get<double>(), want, 64.0) << c.name;
        continue;
      }
      for (const auto& cl : rec.at("clients")) {
        EXPECT_GT(cl.at("bytes_up").get<uint64_t>(), 4 * floats) << c.name;
        EXPECT_LT(cl.at("bytes_up").get<uint64_t>(), 4 * floats + 512) << c.name;
      }
    }
  }
}

}  // namespace
}  // namespace fedpar
