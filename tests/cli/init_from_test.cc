// model.init_from with real processes: a run started from another run's model.safetensors goes
// on where that run ended. Under full batch with plain SGD a round's update depends on the
// parameters alone, so 2 rounds and then 2 more from the saved model end with the very bytes of
// one 4-round run, in both regimes and through the ring as through the server; a lost or
// mismatched file is refused before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/util/run_fedpar.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

// `fedpar run` of a small synthetic-data run named `name` with `sets`, in tmp/res/<name>.
testing::CliRun init_from_run(const TempDir& tmp, const std::string& name,
                              const std::string& sets) {
  return testing::run_config(tmp.path(),
                             "seed = 5\nprocesses = 2\n[partition]\nclients = 4\n"
                             "[data]\nname = 'synthetic'\niid = true\n"
                             "[model]\nname = 'mlp'\nhidden = [16]\n",
                             name, sets);
}

nlohmann::json init_from_summary(const TempDir& tmp, const std::string& name) {
  return nlohmann::json::parse(std::ifstream(tmp / "res" / name / "summary.json"));
}

TEST(InitFrom, TwoRoundsThenTwoMoreFromTheSavedModelAreOneFourRoundRun) {
  TempDir tmp;
  for (const std::string how :
       {"--set regime=gradient --set sgd.batch=full --set topology=parameter-server",
        "--set regime=gradient --set sgd.batch=full --set topology=allreduce",
        "--set regime=model --set local.batch=full --set local.steps=3"}) {
    SCOPED_TRACE(how);
    const std::string common = how + " --set optimizer.lr=0.3 ";
    ASSERT_EQ(init_from_run(tmp, "whole", common + "--set rounds=4").code, 0);
    ASSERT_EQ(init_from_run(tmp, "first", common + "--set rounds=2").code, 0);
    // the folder names its model.safetensors; a params/ snapshot or the file itself serve too
    const auto then = init_from_run(
        tmp, "then",
        common + "--set rounds=2 --set model.init_from=" + (tmp / "res" / "first").string());
    ASSERT_EQ(then.code, 0) << then.err;
    const std::string whole = init_from_summary(tmp, "whole")["model_hash"];
    EXPECT_NE(init_from_summary(tmp, "first")["model_hash"].get<std::string>(), whole);
    EXPECT_EQ(init_from_summary(tmp, "then")["model_hash"].get<std::string>(), whole);
    // what it started from, said by hash beside the path
    EXPECT_EQ(init_from_summary(tmp, "then")["init_hash"],
              init_from_summary(tmp, "first")["model_hash"]);
    EXPECT_FALSE(init_from_summary(tmp, "whole").contains("init_hash"));
    EXPECT_NE(then.err.find("server: model: starts from the parameters in " +
                            (tmp / "res" / "first").string() + " (hash " +
                            init_from_summary(tmp, "first")["model_hash"].get<std::string>()),
              std::string::npos)
        << then.err;
    const std::string readme = testing::slurp(tmp / "res" / "then" / "README.md");
    EXPECT_NE(readme.find("started from the parameters in `" + (tmp / "res" / "first").string() +
                          "` (`model.init_from`, hash " +
                          init_from_summary(tmp, "first")["model_hash"].get<std::string>()),
              std::string::npos)
        << readme;
    for (const char* n : {"whole", "first", "then"}) std::filesystem::remove_all(tmp / "res" / n);
  }
}

// A run started from a file is resumed from its checkpoint without the file (moved since), and
// still names what its round 1 started from.
TEST(InitFrom, AResumedRunNeedsNotTheFileItStartedFrom) {
  TempDir tmp;
  const std::string common = "--set regime=gradient --set sgd.batch=full ";
  ASSERT_EQ(init_from_run(tmp, "first", common + "--set rounds=2").code, 0);
  std::filesystem::copy(tmp / "res" / "first" / "model.safetensors", tmp / "start.safetensors");
  const std::string from = " --set model.init_from=" + (tmp / "start.safetensors").string();
  ASSERT_EQ(
      init_from_run(tmp, "then", common + "--set rounds=4 --set checkpoint_every=2" + from).code,
      0);
  std::filesystem::remove(tmp / "start.safetensors");
  const auto more = init_from_run(tmp, "more",
                                  common + "--set rounds=6 --set checkpoint_every=2" + from +
                                      " --resume " + (tmp / "res" / "then").string());
  ASSERT_EQ(more.code, 0) << more.err;
  EXPECT_EQ(init_from_summary(tmp, "more")["init_hash"],
            init_from_summary(tmp, "first")["model_hash"]);
}

TEST(InitFrom, AMissingOrForeignModelIsRefusedBeforeTheRunStarts) {
  TempDir tmp;
  ASSERT_EQ(
      init_from_run(tmp, "logreg", "--set rounds=1 --set model.name=logreg --set model.hidden=[]")
          .code,
      0);
  const auto missing = init_from_run(tmp, "x", "--set model.init_from=" + (tmp / "nope").string());
  EXPECT_EQ(missing.code, 2) << missing.err;
  EXPECT_NE(missing.err.find((tmp / "nope").string() + " does not exist"), std::string::npos)
      << missing.err;
  std::filesystem::create_directories(tmp / "empty");
  const auto empty = init_from_run(tmp, "x", "--set model.init_from=" + (tmp / "empty").string());
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.err.find("holds no model.safetensors"), std::string::npos) << empty.err;
  const auto foreign = init_from_run(
      tmp, "x", "--set model.init_from=" + (tmp / "res" / "logreg" / "model.safetensors").string());
  EXPECT_EQ(foreign.code, 2);
  EXPECT_NE(foreign.err.find("holds a 'logreg' model; this one is 'mlp'"), std::string::npos)
      << foreign.err;
  // a model holding a NaN (its last float, the end of the file)
  const auto nan_file = tmp / "nan.safetensors";
  std::filesystem::copy_file(tmp / "res" / "logreg" / "model.safetensors", nan_file);
  {
    std::fstream f(nan_file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4, std::ios::end);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    f.write(reinterpret_cast<const char*>(&nan), 4);
  }
  const auto diverged = init_from_run(
      tmp, "x",
      "--set model.name=logreg --set model.hidden=[] --set model.init_from=" + nan_file.string());
  EXPECT_EQ(diverged.code, 2);
  EXPECT_NE(diverged.err.find("holds a value that is not finite (nan) in tensor '"),
            std::string::npos)
      << diverged.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "res" / "x"));
}

}  // namespace
}  // namespace fedpar
