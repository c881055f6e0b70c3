// One set of data flags for every command that loads data: train, run, suite and server take
// --dataset, --data-dir, --train-limit, --test-limit, --csv-train and --csv-test as the same
// config keys; a client process takes its own --data-dir, for data kept elsewhere on its machine.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/util/distributed_run.h"
#include "tests/util/process.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

TEST(DataFlags, EveryCommandThatLoadsDataListsThem) {
  TempDir tmp;
  for (const char* cmd : {"train", "run", "suite", "server"}) {
    const auto r = testing::run_fedpar(std::string(cmd) + " --help", tmp.path());
    EXPECT_EQ(r.code, 0) << cmd;
    for (const char* flag :
         {"--dataset", "--data-dir", "--train-limit", "--test-limit", "--csv-train", "--csv-test"})
      EXPECT_NE(r.out.find(flag), std::string::npos) << cmd << " lacks " << flag;
  }
  const auto r = testing::run_fedpar("client --help", tmp.path());
  EXPECT_NE(r.out.find("--data-dir"), std::string::npos) << r.out;
}

// A folder whose mnist/ is the MNIST that setup fetched (found the way the tests find it).
std::filesystem::path linked_data(const TempDir& tmp, const std::string& name) {
  const auto dir = tmp / name;
  std::filesystem::create_directories(dir);
  std::filesystem::create_directory_symlink(
      std::filesystem::absolute(resolve_data_dir({}) / "mnist"), dir / "mnist");
  return dir;
}

TEST(DataFlags, RunAndServerReadThemAsTrainDoes) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "rounds = 1\nprocesses = 1\n[data]\nname = 'mnist'\n";
  const std::string run =
      "run " + (tmp / "run.toml").string() + " --set results_dir=" + (tmp / "res").string() + " ";
  for (const std::string& cmd :
       {run, std::string("server --config ") + (tmp / "run.toml").string() + " "}) {
    const auto r = testing::run_fedpar(cmd + "--data-dir /nonexistent", tmp.path());
    EXPECT_NE(r.code, 0) << cmd;
    EXPECT_NE(r.err.find("missing dataset file /nonexistent/mnist/train-images-idx3-ubyte"),
              std::string::npos)
        << cmd << ": " << r.err;
  }
  // a --set of the same key wins over its flag, in either order, as in fedpar train
  for (const std::string& cmd : {run, std::string("train --quiet ")})
    for (const char* both :
         {"--data-dir /flag --set data.dir=/set", "--set data.dir=/set --data-dir /flag"}) {
      const auto r = testing::run_fedpar(cmd + both + " --dataset mnist", tmp.path());
      EXPECT_NE(r.err.find("missing dataset file /set/mnist"), std::string::npos)
          << cmd << both << ": " << r.err;
    }
  // a CSV given without --dataset csv trained on MNIST without a word: refused, in every command
  std::ofstream(tmp / "mine.csv") << "a,label\n1,0\n2,1\n";
  for (const std::string& cmd : {std::string("train --quiet"), run, std::string("partition")})
    testing::expect_refused(cmd + " --csv-train " + (tmp / "mine.csv").string(), tmp.path(), 2,
                            "data.csv_train is read with data.name = \"csv\" only, and data.name "
                            "is 'mnist': set data.name = \"csv\" (--dataset csv) to train on the "
                            "file");
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  const auto dir = linked_data(tmp, "elsewhere");
  const auto r = testing::run_fedpar(
      run + "--set name=ok --data-dir " + dir.string() + " --train-limit 300 --test-limit 100",
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string resolved = testing::slurp(tmp / "res" / "ok" / "config.resolved.toml");
  EXPECT_NE(resolved.find("dir = '" + dir.string() + "'"), std::string::npos) << resolved;
  EXPECT_NE(resolved.find("train_limit = 300"), std::string::npos) << resolved;
  // where the files were read from: the log, summary.json and the README say it, and without
  // data.dir it is $FEDPAR_DATA_DIR's folder (the config says only dir = '')
  const auto here = linked_data(tmp, "env");
  setenv("FEDPAR_DATA_DIR", here.c_str(), 1);
  const auto found =
      testing::run_fedpar(run + "--set name=found --train-limit 300 --test-limit 100", tmp.path());
  unsetenv("FEDPAR_DATA_DIR");
  ASSERT_EQ(found.code, 0) << found.err;
  const std::string from = std::filesystem::absolute(here / "mnist").string();
  EXPECT_NE(found.err.find("(read from " + from + ")\n"), std::string::npos) << found.err;
  EXPECT_EQ(nlohmann::json::parse(testing::slurp(tmp / "res/found/summary.json"))["data_from"],
            from);
  EXPECT_NE(testing::slurp(tmp / "res/found/README.md").find("on mnist (read from `" + from + "`)"),
            std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(testing::slurp(tmp / "res/ok/summary.json"))["data_from"],
            std::filesystem::absolute(dir / "mnist").string());
  // the mnist folder itself given as the data dir: the error says to name the one above it
  testing::expect_refused(
      "train --quiet --dataset mnist --data-dir " + (dir / "mnist").string(), tmp.path(), 2,
      (dir / "mnist").string() + " holds the files itself: the data dir is the folder above it, " +
          dir.string());
}

// The server's data.dir is a path on the server's machine; a client elsewhere names its own.
TEST(DataFlags, AClientProcessLoadsFromItsOwnDataDir) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  const std::vector<std::string> sets = {"data.name=mnist", "model.name=logreg",
                                         "data.train_limit=300", "data.test_limit=100", "rounds=2"};
  auto args = testing::server_args(tmp, "bad", "bad", "tcp://127.0.0.1:*", 1, sets);
  auto started = testing::start_run(tmp, "bad", args, 1, {"--data-dir", "/nonexistent"});
  EXPECT_NE(testing::wait_exit(started.clients[0], 30).value_or(-99), 0);
  const std::string err = testing::slurp(tmp / "bad0.cerr");
  EXPECT_NE(err.find("/nonexistent/mnist/train-images-idx3-ubyte"), std::string::npos) << err;
  kill(started.server, SIGTERM);
  testing::wait_exit(started.server, 30);

  const auto dir = linked_data(tmp, "client-side");
  const auto r = testing::run_distributed(tmp, "ok", "tcp://127.0.0.1:*", 1, sets, {}, {},
                                          {"--data-dir", dir.string()});
  EXPECT_EQ(r.server_code, 0) << r.err;
  EXPECT_FALSE(r.hash.empty()) << r.out;
}

}  // namespace
}  // namespace fedpar
