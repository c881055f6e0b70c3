// eval_clients with real processes: the server scores its model on each client's own shard (or,
// with partition.holdout, on the samples it held out of training) at the evaluated rounds
// (client_accuracy, client_loss in metrics.jsonl), in client id order, as the final model loaded
// again scores there; the log, README, plot and compare summarize the spread.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/backend.h"
#include "core/dataset.h"
#include "core/model.h"
#include "core/safetensors.h"
#include "core/trainer.h"
#include "partitioners/manifest.h"
#include "tests/util/distributed_run.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

testing::CliRun clients_run(const TempDir& tmp, const std::string& name, const std::string& sets) {
  return testing::run_config(tmp.path(),
                             "seed = 3\nprocesses = 2\nrounds = 10\neval_every = 2\n"
                             "[partition]\nclients = 12\n"
                             "[data]\nname = 'synthetic'\niid = true\n"
                             "[model]\nname = 'logreg'\n"
                             "[local]\nsteps = 5\nbatch = 10\n",
                             name, sets);
}

// The final model, loaded again, scores each client's training shard (or its held-out samples) as
// the last metrics record says, client by client; returns those accuracies.
std::vector<double> expect_final_model_scores(const std::filesystem::path& dir, const Manifest& m,
                                              const nlohmann::json& last, bool held_out) {
  DataOptions d;
  d.name = "synthetic", d.iid = true, d.seed = 3;
  const TrainTest data = load_dataset(d);
  auto be = make_backend("cpu");
  Model model(*be, {"logreg"}, data.train.shape, data.train.num_classes);
  model.set_params_host(load_params(dir / "model.safetensors", model.layout()));
  EXPECT_EQ(last["client_accuracy"].size(), m.clients.size());
  std::vector<double> acc;
  for (size_t k = 0; k < m.clients.size() && k < last["client_accuracy"].size(); ++k) {
    const BatchStats st =
        evaluate(model, data.train, held_out ? m.clients[k].held_out : m.clients[k].indices);
    acc.push_back(double(st.correct) / double(st.samples));
    EXPECT_DOUBLE_EQ(last["client_accuracy"][k].get<double>(), acc.back()) << k;
    EXPECT_NEAR(last["client_loss"][k].get<double>(), st.loss_sum / double(st.samples), 1e-9);
  }
  return acc;
}

TEST(EvalClients, TheServerScoresItsModelOnEachClientsShardInIdOrder) {
  TempDir tmp;
  const auto r = clients_run(tmp, "each", "--set eval_clients=true --set eval_train=true");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("clients' accuracy mean"), std::string::npos) << r.err;
  const auto dir = tmp / "res" / "each";
  const auto rounds = testing::jsonl(dir / "metrics.jsonl");
  ASSERT_EQ(rounds.size(), 10u);
  const Manifest m = read_manifest(dir / "manifest.json", 1000000);
  ASSERT_EQ(m.clients.size(), 12u);
  for (const auto& rec : rounds) {
    const bool evaluated = rec["round"].get<int>() % 2 == 0;
    ASSERT_EQ(rec.contains("client_accuracy"), evaluated) << rec.dump();
    EXPECT_EQ(rec.contains("client_loss"), evaluated) << rec.dump();
    if (!evaluated) continue;
    ASSERT_EQ(rec["client_accuracy"].size(), 12u);
    // the IID shards hold every training sample once: weighted by their sizes, the clients'
    // correct answers are the whole set's, which eval_train counts on its own path
    double correct = 0, samples = 0;
    for (size_t k = 0; k < 12; ++k) {
      correct += rec["client_accuracy"][k].get<double>() * double(m.clients[k].indices.size());
      samples += double(m.clients[k].indices.size());
    }
    EXPECT_NEAR(correct / samples, rec["global_train_accuracy"].get<double>(), 1e-12) << rec.dump();
  }
  const std::vector<double> acc =
      expect_final_model_scores(dir, m, rounds.back(), /*held_out=*/false);
  ASSERT_EQ(acc.size(), 12u);
  const size_t lowest = size_t(std::min_element(acc.begin(), acc.end()) - acc.begin());
  std::vector<double> sorted = acc;
  std::sort(sorted.begin(), sorted.end());
  const double worst10 = (sorted[0] + sorted[1]) / 2;  // 12 clients: the lowest two
  const std::string readme = testing::slurp(dir / "README.md");
  EXPECT_NE(readme.find(fmt::format("worst 10% {:.2f}%, lowest {:.2f}% (client {})", 100 * worst10,
                                    100 * acc[lowest], lowest)),
            std::string::npos)
      << readme;
  EXPECT_TRUE(std::filesystem::exists(dir / "plots" / "client-accuracy-vs-round.svg.dat"));

  // compare puts runs side by side on their worst 10%, and refuses a run that did not record it
  ASSERT_EQ(clients_run(tmp, "plain", "").code, 0);
  EXPECT_FALSE(
      testing::jsonl(tmp / "res" / "plain" / "metrics.jsonl").back().contains("client_accuracy"));
  testing::expect_refused("compare --metric client-worst10 --out " + (tmp / "cmp").string() + " " +
                              dir.string() + " " + (tmp / "res" / "plain").string(),
                          tmp.path(), 2,
                          "has no clients' accuracy: --metric client-worst10 needs runs with "
                          "eval_clients = true");
  const auto drawn = testing::run_fedpar(
      "compare --metric client-worst10 --out " + (tmp / "cmp").string() + " " + dir.string(),
      tmp.path());
  ASSERT_EQ(drawn.code, 0) << drawn.err;
  const auto cmp = nlohmann::json::parse(testing::slurp(tmp / "cmp" / "compare.json"));
  EXPECT_EQ(cmp["metric"], "client-worst10");
  EXPECT_NE(drawn.out.find(fmt::format("| {:.2f}% |", 100 * worst10)), std::string::npos)
      << drawn.out;
}

// partition.holdout: each client's held-out samples never reach its process (which loads only
// what it trains on) and are what the server scores it on.
TEST(EvalClients, HoldoutScoresEachClientOnSamplesItsProcessNeverHeld) {
  TempDir tmp;
  const auto server = testing::spawn_server(
      tmp, "held", 1,
      {"seed=3", "rounds=4", "eval_every=2", "partition.clients=12", "local.steps=5",
       "local.batch=10", "eval_clients=true", "partition.holdout=0.25"});
  const pid_t client =
      testing::spawn_fedpar({"client", "--wait", "60", "--server", server.endpoint},
                            tmp / "held.cout", tmp / "held.cerr");
  const std::string err = [&] {
    const auto code = testing::wait_exit(server.pid, 120);
    EXPECT_EQ(code, 0);
    return testing::slurp(tmp / "held.err");
  }();
  ASSERT_EQ(testing::wait_exit(client, 30), 0) << testing::slurp(tmp / "held.cerr");
  EXPECT_NE(err.find("clients' held-out accuracy mean"), std::string::npos) << err;
  const auto dir = tmp / "res" / "held";
  const Manifest m = read_manifest(dir / "manifest.json", 1000000);
  ASSERT_EQ(m.clients.size(), 12u);
  const auto summary = nlohmann::json::parse(testing::slurp(dir / "summary.json"));
  EXPECT_EQ(summary["client_holdout"], 0.25);
  const size_t total = summary["train_samples"].get<size_t>();
  ASSERT_EQ(m.assigned() + m.held_out(), total);  // IID: every sample, trained on or held out
  for (const auto& c : m.clients)
    EXPECT_EQ(c.held_out.size(),
              size_t(std::lround(0.25 * double(c.indices.size() + c.held_out.size()))));
  EXPECT_NE(testing::slurp(tmp / "held.cerr")
                .find(fmt::format("hosting 12 virtual client(s), {} of {} training samples in "
                                  "memory",
                                  m.assigned(), total)),
            std::string::npos)
      << testing::slurp(tmp / "held.cerr");
  const auto last = testing::jsonl(dir / "metrics.jsonl").back();
  expect_final_model_scores(dir, m, last, /*held_out=*/true);
  const std::string readme = testing::slurp(dir / "README.md");
  EXPECT_NE(readme.find("the model on each client's held-out samples (25% of its samples, kept "
                        "out of its training by `partition.holdout`) at round 4"),
            std::string::npos)
      << readme;
  EXPECT_NE(readme.find(fmt::format("; {} more held out of training (`partition.holdout` = 0.25)",
                                    m.held_out())),
            std::string::npos)
      << readme;
}

// Held-out samples that nothing scores are a warning, which the run's folder keeps (summary.json
// and the README: a suite's quiet runs print none).
TEST(EvalClients, HoldoutWithoutEvalClientsIsAWarningTheRunKeeps) {
  TempDir tmp;
  const auto r = clients_run(tmp, "unscored", "--set partition.holdout=0.25 --set rounds=2");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string warning =
      "partition.holdout = 0.25 keeps that share of each client's samples out of its training, "
      "and only eval_clients = true scores the model on them";
  EXPECT_NE(r.err.find("server: warning: " + warning), std::string::npos) << r.err;
  const auto dir = tmp / "res" / "unscored";
  const auto summary = nlohmann::json::parse(testing::slurp(dir / "summary.json"));
  ASSERT_TRUE(summary.contains("warnings")) << summary.dump();
  EXPECT_TRUE(std::any_of(
      summary["warnings"].begin(), summary["warnings"].end(),
      [&](const nlohmann::json& w) { return w.get<std::string>().starts_with(warning); }))
      << summary.dump();
  EXPECT_FALSE(summary.contains("client_holdout"));  // nothing scored held-out samples
  EXPECT_NE(testing::slurp(dir / "README.md").find("- **warning** (at the start): " + warning),
            std::string::npos);
}

// The feature-noise scheme's clients hold noisy copies of IID shards: the server scores each on
// its noise, drawn as its process draws it, so the clean client 0 outscores the noisiest.
TEST(EvalClients, FeatureNoiseClientsAreScoredOnTheirNoisyFeatures) {
  TempDir tmp;
  const auto r = clients_run(tmp, "noise",
                             "--set eval_clients=true --set partition.scheme=feature-noise "
                             "--set partition.sigma=4");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto last = testing::jsonl(tmp / "res" / "noise" / "metrics.jsonl").back();
  const auto acc = last["client_accuracy"];
  ASSERT_EQ(acc.size(), 12u);
  EXPECT_GT(acc[0].get<double>(), acc[11].get<double>() + 0.1) << last.dump();
  EXPECT_GT(last["client_loss"][11].get<double>(), last["client_loss"][0].get<double>())
      << last.dump();
}

}  // namespace
}  // namespace fedpar
