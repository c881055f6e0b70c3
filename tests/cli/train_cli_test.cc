// `fedpar train` as a user runs it: a real process, real MNIST, the results folder, and one-line
// errors with exit code 2 that leave nothing behind.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "core/backend.h"
#include "core/dataset.h"
#include "core/model.h"
#include "core/run_spec.h"
#include "core/safetensors.h"
#include "kernels/cuda_info.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::CliRun;
using testing::run_fedpar;

// A plot's data file: each series' (x, y) points under its "# label" line.
std::map<std::string, std::vector<std::pair<double, double>>> plot_data(
    const std::filesystem::path& dat) {
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  std::ifstream in(dat);
  std::string label;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) == 0)
      label = line.substr(2);
    else if (!line.empty()) {
      std::istringstream xy(line);
      double x = 0, y = 0;
      xy >> x >> y;
      series[label].push_back({x, y});
    }
  }
  return series;
}

size_t entries(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  return size_t(std::distance(std::filesystem::directory_iterator(dir), {}));
}

TEST(TrainCli, TrainsOnMnistAndWritesResults) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST not fetched: run scripts/setup.sh";
  testing::TempDir tmp;
  const auto results = tmp / "results";
  CliRun r = run_fedpar(
      "train --model logreg --dataset mnist --epochs 2 --batch 10 --lr 0.1 "
      "--train-limit 3000 --test-limit 1000 --name t1 --results-dir " +
          results.string(),
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(test accuracy: (\d+\.\d\d)%\n$)")))
      << r.out;
  EXPECT_GT(std::stod(m[1]), 80.0);
  const auto dir = results / "t1";
  for (const char* f :
       {"config.resolved.toml", "metrics.jsonl", "model.safetensors", "summary.json", "README.md"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  EXPECT_EQ(entries(results), 1u);                               // no partial folder left
  const std::string readme = testing::slurp(dir / "README.md");  // what the flags chose
  for (const char* row : {"| `train.epochs` | `2` |", "| `model.name` | `'logreg'` |"})
    EXPECT_NE(readme.find(row), std::string::npos) << row << "\n" << readme;
  EXPECT_EQ(readme.find("| `train.shuffle` |"), std::string::npos) << "a default is not listed";
  // its rerun line names the config where it is, not a path only the folder itself resolves
  EXPECT_NE(readme.find("train --config " + (dir / "config.resolved.toml").string() + "`"),
            std::string::npos)
      << readme;

  std::ifstream metrics(dir / "metrics.jsonl");
  int evals = 0;
  std::vector<double> test_losses, train_losses;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["kind"] == "eval") ++evals, test_losses.push_back(j["test_loss"]);
    if (j["kind"] == "train") train_losses.push_back(j["loss"]);
  }
  EXPECT_EQ(evals, 2);
  // the plots draw what metrics.jsonl records: every train record, the test loss at epochs 1, 2
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    EXPECT_NE(readme.find("(no plot of the loss: gnuplot is not installed"), std::string::npos)
        << readme;
  } else {
    for (const char* svg : {"loss-vs-epoch.svg", "accuracy-vs-epoch.svg"}) {
      EXPECT_NE(readme.find(fmt::format("](plots/{})", svg)), std::string::npos) << readme;
      EXPECT_NE(testing::slurp(dir / "plots" / svg).find("<svg"), std::string::npos) << svg;
    }
    const auto drawn = plot_data(dir / "plots/loss-vs-epoch.svg.dat");
    ASSERT_EQ(drawn.at("training").size(), train_losses.size());
    EXPECT_NEAR(drawn.at("training").back().first, 2.0, 1e-9);  // 6000 samples seen of 3000
    EXPECT_NEAR(drawn.at("training").back().second, train_losses.back(), 1e-4);
    ASSERT_EQ(drawn.at("test").size(), 2u);
    for (size_t e = 0; e < 2; ++e) {
      EXPECT_NEAR(drawn.at("test")[e].first, double(e + 1), 1e-9);
      EXPECT_NEAR(drawn.at("test")[e].second, test_losses[e], 1e-4);
    }
  }
  const auto summary = nlohmann::json::parse(std::ifstream(dir / "summary.json"));
  EXPECT_NEAR(100.0 * summary["final"]["test_accuracy"].get<double>(), std::stod(m[1]), 0.006);

  auto be = make_backend("cpu");
  Model model(*be, {"logreg"}, {28, 28, 1}, 10);
  EXPECT_EQ(load_params(dir / "model.safetensors", model.layout()).size(), 7850u);

  // The resolved config reproduces the run bit for bit.
  CliRun again = run_fedpar(
      "train --quiet --no-plots --config " + (dir / "config.resolved.toml").string() + " --name t2",
      tmp.path());
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
  EXPECT_FALSE(std::filesystem::exists(results / "t2" / "plots"));
  EXPECT_NE(testing::slurp(results / "t2" / "README.md").find("(no plots drawn: `--no-plots`)"),
            std::string::npos);
  EXPECT_EQ(load_params(results / "t2" / "model.safetensors", model.layout()),
            load_params(dir / "model.safetensors", model.layout()));
}

// Full-batch gradient descent in a fixed order depends on the parameters alone: 2 epochs and 2 more
// from the saved model (model.init_from) are the 4-epoch training, bit for bit. (Shuffled, each
// epoch would sum its one batch in another order.)
TEST(TrainCli, GoesOnFromASavedModel) {
  testing::TempDir tmp;
  const std::string common =
      "train --quiet --model logreg --dataset synthetic --set data.iid=true --batch full --lr 0.5 "
      "--set train.shuffle=false "
      "--results-dir " +
      (tmp / "res").string();
  ASSERT_EQ(run_fedpar(common + " --epochs 4 --name whole", tmp.path()).code, 0);
  ASSERT_EQ(run_fedpar(common + " --epochs 2 --name first", tmp.path()).code, 0);
  const CliRun then = run_fedpar(common + " --epochs 2 --name then --set model.init_from=" +
                                     (tmp / "res" / "first" / "model.safetensors").string(),
                                 tmp.path());
  ASSERT_EQ(then.code, 0) << then.err;
  auto be = make_backend("cpu");
  Model model(*be, {"logreg"}, {60}, 10);
  const auto params = [&](const char* name) {
    return load_params(tmp / "res" / name / "model.safetensors", model.layout());
  };
  EXPECT_NE(params("first"), params("whole"));
  EXPECT_EQ(params("then"), params("whole"));
  EXPECT_NE(testing::slurp(tmp / "res" / "then" / "README.md").find("started from the parameters"),
            std::string::npos);
  // its summary names what it started from by the hash the pretraining's summary gives its model
  const auto summary = [&](const char* name) {
    return nlohmann::json::parse(testing::slurp(tmp / "res" / name / "summary.json"));
  };
  EXPECT_EQ(summary("then")["init_hash"], summary("first")["model_hash"]);
  EXPECT_EQ(summary("then")["model_hash"], summary("whole")["model_hash"]);
}

TEST(TrainCli, SyntheticDatasetNeedsNoFiles) {
  testing::TempDir tmp;
  CliRun r = run_fedpar(
      "train --quiet --model logreg --dataset synthetic --set data.alpha=0.5 "
      "--set data.beta=0.5 --batch 10 --lr 0.01 --results-dir " +
          (tmp / "res").string(),
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("test accuracy: "), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(tmp / "res" / "logreg-synthetic-e1-b10-s1" / "summary.json"));
}

// Without a test file there is no test accuracy: none is recorded (0% would read as measured),
// the README gives the training set's, and compare refuses it as a baseline with the reason.
TEST(TrainCli, WithoutATestSetNoTestAccuracyIsRecorded) {
  testing::TempDir tmp;
  {
    std::ofstream csv(tmp / "train.csv");
    for (int i = 0; i < 60; ++i) csv << i % 3 << "," << (i * 7) % 5 << "," << i % 3 << "\n";
  }
  const CliRun r = run_fedpar("train --dataset csv --csv-train " + (tmp / "train.csv").string() +
                                  " --model logreg --epochs 2 --results-dir " +
                                  (tmp / "res").string() + " --name notest",
                              tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: no test set (data.csv_test): no test accuracy is recorded"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("test accuracy: n/a (no test set; train accuracy "), std::string::npos);
  // what it read: a label column misread shows as the wrong count
  EXPECT_NE(r.err.find("(60 train / 0 test samples of 2 features, 3 classes;"), std::string::npos)
      << r.err;
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res/notest/summary.json"));
  EXPECT_FALSE(summary["final"].contains("test_accuracy")) << summary["final"];
  EXPECT_TRUE(summary["final"].contains("train_accuracy"));
  const std::string readme = testing::slurp(tmp / "res/notest/README.md");
  EXPECT_NE(readme.find("- final training accuracy: "), std::string::npos) << readme;
  EXPECT_NE(readme.find("; no test set, so no test accuracy"), std::string::npos) << readme;
  EXPECT_EQ(readme.find("test accuracy: 0.00%"), std::string::npos) << readme;
}

// A loss that is no longer finite ends the training (exit 4) with the last epoch's model kept,
// finite, and the README says where it diverged; before, it ran on and saved a NaN model.
TEST(TrainCli, ADivergedTrainingKeepsTheLastFiniteModelAndExitsFour) {
  testing::TempDir tmp;
  const CliRun r = run_fedpar(
      "train --quiet --dataset synthetic --model 2nn --lr 1e6 --epochs 3 "
      "--results-dir " +
          (tmp / "res").string() + " --name div",
      tmp.path());
  ASSERT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("fedpar: the training diverged at step "), std::string::npos) << r.err;
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res/div/summary.json"));
  EXPECT_TRUE(summary["diverged"].get<bool>());
  EXPECT_GE(summary["diverged_at"]["step"].get<int>(), 1);
  EXPECT_EQ(summary["final"]["epoch"], summary["epochs_run"]);
  EXPECT_TRUE(std::isfinite(summary["final"]["test_loss"].get<double>()));
  for (const auto& [name, t] : load_safetensors(tmp / "res/div/model.safetensors").tensors)
    for (const float w : t.values) ASSERT_TRUE(std::isfinite(w)) << name;
  EXPECT_NE(testing::slurp(tmp / "res/div/README.md").find("- **diverged** at step "),
            std::string::npos);
  // one full-batch step, the last: its loss (taken before its update) is finite, the parameters
  // it leaves (features of 1e30 at a rate of 1e9) are not; they are checked at the epoch's end
  {
    std::ofstream big(tmp / "big.csv");
    for (int i = 0; i < 40; ++i)
      big << (i % 3 + 1) * 1e30 << "," << (i % 5 + 1) * 1e30 << "," << i % 2 << "\n";
  }
  const CliRun full = run_fedpar(
      "train --quiet --dataset csv --csv-train " + (tmp / "big.csv").string() + " --csv-test " +
          (tmp / "big.csv").string() +
          " --model logreg --lr 1e9 --batch full --epochs 1 --set optimizer.warmup_steps=0 "
          "--results-dir " +
          (tmp / "res").string() + " --name full",
      tmp.path());
  ASSERT_EQ(full.code, 4) << full.err;
  for (const auto& [name, t] : load_safetensors(tmp / "res/full/model.safetensors").tensors)
    for (const float w : t.values) ASSERT_TRUE(std::isfinite(w)) << name;
  EXPECT_NE(testing::slurp(tmp / "res/full/README.md")
                .find("- **diverged** at step 1 (epoch 1): it left parameters that are not finite"),
            std::string::npos)
      << testing::slurp(tmp / "res/full/README.md");
}

struct BadInput {
  const char* args;
  const char* message;
  friend void PrintTo(const BadInput& b, std::ostream* os) { *os << b.args; }
};

class TrainCliErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(TrainCliErrors, OneLineErrorExitTwoNothingWritten) {
  testing::TempDir tmp;
  const auto results = tmp / "results";
  CliRun r = run_fedpar(
      std::string("train --quiet ") + GetParam().args + " --results-dir " + results.string(),
      tmp.path());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(GetParam().message), std::string::npos) << r.err;
  std::string trimmed = r.err;
  while (!trimmed.empty() && trimmed.front() == '\n') trimmed.erase(0, 1);
  EXPECT_EQ(std::count(trimmed.begin(), trimmed.end(), '\n'), 1) << r.err;
  EXPECT_EQ(entries(results), 0u);
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Asking for the GPU where there is none: one line saying what was found and what to use (the
// fedpar command loads its CUDA module to find out).
TEST(TrainCli, CudaWithoutADeviceSaysWhatToUse) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  testing::TempDir tmp;
  CliRun r = run_fedpar(
      "train --quiet --dataset synthetic --device cuda --results-dir " + (tmp / "r").string(),
      tmp.path());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("use --device cpu"), std::string::npos) << r.err;
  // a CUDA build's fedpar loaded its CUDA module (libfedpar_cuda.so), which found no device
  if (cuda_compiled()) {
    EXPECT_NE(r.err.find("0 device(s)"), std::string::npos) << r.err;
  }
  EXPECT_EQ(entries(tmp / "r"), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, TrainCliErrors,
    ::testing::Values(
        BadInput{"--model resnet",
                 "model.name: unknown model 'resnet' (valid models: logreg, linreg, mlp, "
                 "2nn, cnn, lenet)"},
        BadInput{"--dataset cifar",
                 "unknown dataset 'cifar' (valid datasets: mnist, synthetic, csv)"},
        BadInput{"--epoch 3", "not expected: --epoch 3; did you mean --epochs?"},
        BadInput{"--set train.epoch=3", "did you mean 'train.epochs'"},
        BadInput{"--batch ten", "train.batch must be an integer or one of \"full\""},
        BadInput{"--lr -1", "lr must be a positive number"},
        BadInput{"--device tpu", "unknown device 'tpu' (valid devices: cpu"},
        BadInput{"--data-dir /nonexistent",
                 "missing dataset file /nonexistent/mnist/train-images-idx3-ubyte"},
        BadInput{"--dataset csv", "needs a training file"},
        BadInput{"--config /nonexistent.toml", "no config file /nonexistent.toml"},
        BadInput{"--model mlp --dataset synthetic",
                 "model 'mlp' needs hidden sizes: --set model.hidden=[200,200] (fedpar train: "
                 "--hidden 200,200)"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

// A config given to the other command says which command it is for, not which key was misspelt.
TEST(TrainCli, AConfigForTheOtherCommandSaysWhichItIsFor) {
  testing::TempDir tmp;
  std::ofstream(tmp / "train.toml") << "[train]\nbatch = 64\n";
  std::ofstream(tmp / "run.toml") << "regime = 'model'\n";
  testing::expect_refused("run " + (tmp / "train.toml").string(), tmp.path(), 2,
                          "train.toml: unknown config key 'train.batch': [train] is `fedpar "
                          "train`'s table: is this a `fedpar train` config?");
  CliRun r =
      testing::expect_refused("train --quiet --config " + (tmp / "run.toml").string(), tmp.path(),
                              2, "unknown config key 'regime': a key of `fedpar run` configs");
  EXPECT_NE(r.err.find("is this a `fedpar run` config?"), std::string::npos) << r.err;
  // a suite file and a run config mistaken for each other say which command each is for
  std::ofstream(tmp / "suite.toml") << "[suite]\nruns = ['a | rounds=1']\n";
  testing::expect_refused("run " + (tmp / "suite.toml").string(), tmp.path(), 2,
                          "unknown config key 'suite.runs': [suite] is a suite file's table: is "
                          "this a suite? (`fedpar suite FILE` runs one; each of its runs' own "
                          "config is RESULTS/runs/LABEL/config.resolved.toml");
  r = testing::expect_refused(
      "suite " + (tmp / "run.toml").string(), tmp.path(), 2,
      "run.toml: suite.runs is empty: a suite lists its runs in its [suite] table");
  EXPECT_NE(r.err.find("is this a `fedpar run` config? (`fedpar run FILE` runs one)"),
            std::string::npos)
      << r.err;
}

// The centralized baseline of a finished run in one command: full-batch gradient averaging over 3
// rounds is full-batch gradient descent for 3 epochs (the equivalence fedpar shows), trained
// beside the run under its name; what is not a run's folder is refused.
TEST(TrainCli, LikeARunTrainsItsCentralizedBaseline) {
  testing::TempDir tmp;
  std::ofstream(tmp / "run.toml") << "rounds = 3\nprocesses = 2\nregime = 'gradient'\n"
                                     "seed = 4\n[data]\nname = 'synthetic'\niid = true\n"
                                     "[model]\nname = 'logreg'\n[optimizer]\nlr = 0.3\n";
  CliRun r = run_fedpar("run " + (tmp / "run.toml").string() +
                            " --set results_dir=" + (tmp / "res").string() + " --set name=g",
                        tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_fedpar("train --like " + (tmp / "res/g").string(), tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("train.batch = 'full' (sgd.batch), 3 epoch(s) (the run processed "),
            std::string::npos)
      << r.err;
  const std::string resolved = testing::slurp(tmp / "res/g-centralized/config.resolved.toml");
  for (const char* line : {"seed = 4\n", "lr = 0.3\n", "epochs = 3\n", "batch = 'full'\n"})
    EXPECT_NE(resolved.find(line), std::string::npos) << line << resolved;
  const auto run_final =
      nlohmann::json::parse(testing::slurp(tmp / "res/g/summary.json"))["final"]["test_accuracy"]
          .get<double>();
  double centralized = -1;
  for (std::ifstream in(tmp / "res/g-centralized/metrics.jsonl"); in;) {
    std::string line;
    if (std::getline(in, line) && line.find("\"test_accuracy\"") != std::string::npos)
      centralized = nlohmann::json::parse(line)["test_accuracy"].get<double>();
  }
  EXPECT_NEAR(centralized, run_final, 0.002);  // the same steps, summed in another order
  // a flag beside it wins
  r = run_fedpar("train --like " + (tmp / "res/g").string() + " --epochs 1 --name one", tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(testing::slurp(tmp / "res/one/config.resolved.toml").find("epochs = 1\n"),
            std::string::npos);
  testing::expect_refused("train --like " + tmp.path().string(), tmp.path(), 2,
                          "not a finished distributed run's folder");
  // mini-batches: a gradient step of 4 clients' batches of 5 is one of 20; the folder named with
  // a trailing slash still gets its baseline beside it, named after the folder
  r = run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                     (tmp / "res").string() + " --set name=mini --set sgd.batch=5",
                 tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_fedpar("train --like " + (tmp / "res/mini").string() + "/", tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("train.batch = 20 (sgd.batch x 4 a step), 1 epoch(s) (the run processed "
                       "60 samples"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("note: fedpar train counts whole epochs"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists(tmp / "res/mini-centralized/metrics.jsonl"));
  // clients that trained on part of their samples: said (the baseline trains on all of them)
  r = run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                     (tmp / "res").string() + " --set name=held --set partition.holdout=0.2",
                 tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_fedpar("train --like " + (tmp / "res/held").string(), tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("note: the run's clients trained on 80% of their samples "
                       "(partition.holdout), the baseline trains on the whole training set"),
            std::string::npos)
      << r.err;
  // synthetic data drawn from a partition.seed of its own: the baseline's would be other data
  r = run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                     (tmp / "res").string() + " --set name=split --set partition.seed=9",
                 tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  testing::expect_refused("train --like " + (tmp / "res/split").string(), tmp.path(), 2,
                          "its synthetic data was drawn from partition.seed = 9");
}

// Without a config or flags, fedpar train first says it trains the defaults and names them (a new
// user who typed it to see what it does is not left guessing); here MNIST is missing, so it stops.
TEST(TrainCli, WithoutAConfigItSaysItTrainsTheDefaults) {
  testing::TempDir tmp;
  const char* before = std::getenv("FEDPAR_DATA_DIR");
  const std::string kept = before ? before : "";
  setenv("FEDPAR_DATA_DIR", (tmp / "nowhere").c_str(), 1);
  const CliRun r = run_fedpar("train", tmp.path());
  const CliRun with_flag = run_fedpar("train --epochs 2", tmp.path());  // (no data either)
  if (before)
    setenv("FEDPAR_DATA_DIR", kept.c_str(), 1);
  else
    unsetenv("FEDPAR_DATA_DIR");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no config file or flags given, so it trains the defaults: 2nn on "
                       "mnist, 1 epoch(s)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(with_flag.code, 2);
  EXPECT_EQ(with_flag.err.find("trains the defaults"), std::string::npos) << with_flag.err;
}

TEST(TrainCli, ConfigFileErrorsNameTheFile) {
  testing::TempDir tmp;
  std::ofstream(tmp / "bad.toml") << "[train]\nepochz = 2\n";
  CliRun r = run_fedpar("train --quiet --config " + (tmp / "bad.toml").string(), tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.toml: unknown config key 'train.epochz'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'train.epochs'? (`fedpar keys train` lists every key)"),
            std::string::npos)
      << r.err;
  std::ofstream(tmp / "model.toml") << "[model]\nname = 'resnet'\n";
  for (const std::string cmd : {"train --quiet --config ", "run "}) {
    r = run_fedpar(cmd + (tmp / "model.toml").string(), tmp.path());
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_NE(r.err.find("model.toml: model.name: unknown model 'resnet'"), std::string::npos)
        << cmd << r.err;
  }
}

// `fedpar keys run` prints every key a run config takes (what an unknown key's error points
// to), each with its default; an unknown listing is refused.
TEST(KeysCommand, ListsEveryKeyOfARunConfig) {
  testing::TempDir tmp;
  const CliRun r = run_fedpar("keys run", tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const Config run = make_run_config();
  for (const std::string& key : run.keys()) {
    const std::string leaf = key.substr(key.rfind('.') + 1);
    const std::string table = key.find('.') == std::string::npos
                                  ? ""
                                  : fmt::format("[{}]", key.substr(0, key.rfind('.')));
    // under its table (a top-level key before the first table)
    const size_t at = table.empty() ? 0 : r.out.find("\n" + table);
    ASSERT_NE(at, std::string::npos) << table;
    const size_t end = r.out.find("\n[", at + 1);
    EXPECT_LT(r.out.find("\n" + leaf + " ", at), end) << key;
  }
  EXPECT_NE(run_fedpar("keys nope", tmp.path()).code, 0);
}

}  // namespace
}  // namespace fedpar
