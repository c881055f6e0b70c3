// eval_train with real processes: the server scores its model on the whole training set at the
// evaluated rounds, as the model itself scores there (the final model, loaded again and evaluated
// here, gives the last round's numbers); on labels split two per client the clients' own loss
// (train_loss) lies far below it; compare draws it, and refuses runs that did not record it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "core/backend.h"
#include "core/dataset.h"
#include "core/model.h"
#include "core/safetensors.h"
#include "core/trainer.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

testing::CliRun eval_train_run(const TempDir& tmp, const std::string& name,
                               const std::string& sets) {
  return testing::run_config(tmp.path(),
                             "seed = 2\nprocesses = 2\nrounds = 10\neval_every = 2\n"
                             "[partition]\nclients = 4\n"
                             "[data]\nname = 'synthetic'\niid = true\n"
                             "[model]\nname = 'logreg'\n",
                             name, sets);
}

TEST(EvalTrain, TheServerScoresItsModelOnTheTrainingSetAtEvaluatedRounds) {
  TempDir tmp;
  const auto r = eval_train_run(
      tmp, "labels",
      "--set eval_train=true --set partition.scheme=labels-k "
      "--set partition.labels_per_client=2 --set local.steps=20 --set local.batch=10");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("local loss"), std::string::npos) << r.err;  // the clients' steps'
  EXPECT_NE(r.err.find("global train loss"), std::string::npos) << r.err;
  const auto rounds = testing::jsonl(tmp / "res" / "labels" / "metrics.jsonl");
  ASSERT_EQ(rounds.size(), 10u);
  for (const auto& rec : rounds) {
    const bool evaluated = rec["round"].get<int>() % 2 == 0;
    EXPECT_EQ(rec.contains("global_train_loss"), evaluated) << rec.dump();
    EXPECT_EQ(rec.contains("global_train_accuracy"), evaluated) << rec.dump();
    // each client fits its two labels: its loss says nothing of the model's on all ten
    if (evaluated) {
      EXPECT_GT(rec["global_train_loss"].get<double>(), 1.4 * rec["train_loss"].get<double>())
          << rec.dump();
    }
  }
  DataOptions d;
  d.name = "synthetic", d.iid = true, d.seed = 2;
  const TrainTest data = load_dataset(d);
  auto be = make_backend("cpu");
  Model model(*be, {"logreg"}, data.train.shape, data.train.num_classes);
  model.set_params_host(load_params(tmp / "res" / "labels" / "model.safetensors", model.layout()));
  const BatchStats st = evaluate(model, data.train);
  EXPECT_NEAR(rounds.back()["global_train_loss"].get<double>(), st.loss_sum / double(st.samples),
              1e-9);
  EXPECT_DOUBLE_EQ(rounds.back()["global_train_accuracy"].get<double>(),
                   double(st.correct) / double(st.samples));
  EXPECT_TRUE(
      std::filesystem::exists(tmp / "res" / "labels" / "plots" / "train-loss-vs-round.svg.dat"));

  ASSERT_EQ(eval_train_run(tmp, "plain", "").code, 0);
  // the machine's load beside the times it measured (this box runs other tests meanwhile)
  const auto plain = nlohmann::json::parse(testing::slurp(tmp / "res" / "plain" / "summary.json"));
  ASSERT_TRUE(plain.contains("load_average")) << plain.dump();
  EXPECT_GE(plain["load_average"].get<double>(), 0.0);
  // it says the times were slowed only where the load reached the cores (it once always did)
  const double load = plain["load_average"].get<double>();
  const unsigned cores = std::thread::hardware_concurrency();
  const std::string readme = testing::slurp(tmp / "res" / "plain" / "README.md");
  EXPECT_NE(readme.find(fmt::format("load average was {:.2f} as the run ended ({} its {} cores",
                                    load, load >= double(cores) ? "at or above" : "below", cores)),
            std::string::npos)
      << readme;
  EXPECT_FALSE(
      testing::jsonl(tmp / "res" / "plain" / "metrics.jsonl").back().contains("global_train_loss"));
  const auto refused = testing::run_fedpar(
      "compare --metric train-loss --out " + (tmp / "cmp").string() + " " +
          (tmp / "res" / "labels").string() + " " + (tmp / "res" / "plain").string(),
      tmp.path());
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.err.find("has no global train loss: --metric train-loss needs runs with "
                             "eval_train = true"),
            std::string::npos)
      << refused.err;
  const auto drawn =
      testing::run_fedpar("compare --metric train-loss --out " + (tmp / "cmp").string() + " " +
                              (tmp / "res" / "labels").string(),
                          tmp.path());
  ASSERT_EQ(drawn.code, 0) << drawn.err;
  EXPECT_TRUE(std::filesystem::exists(tmp / "cmp" / "train-loss-vs-round.svg.dat"));
}

}  // namespace
}  // namespace fedpar
