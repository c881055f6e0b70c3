// The first word on fedpar's line is its command: an unknown one is named with the commands there
// are (CLI11 would skip it and complain about the next word), and `fedpar help [COMMAND]` is
// --help.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "core/privacy_accountant.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

TEST(Commands, AnUnknownCommandIsNamedWithTheCommandsThereAre) {
  TempDir tmp;
  const std::string config = std::string(FEDPAR_SOURCE_DIR) + "/experiments/equivalence.toml";
  for (const std::string& line : {"foo run " + config, std::string("help foo"), std::string("")}) {
    SCOPED_TRACE(line);
    const auto r = testing::run_fedpar(line, tmp.path());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find(line.empty() ? "which command?" : "no command 'foo'"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("(commands: client, compare, keygen, "), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "results"));
}

// `fedpar models` names each layer's parameters and says where a pipeline stage may start and how
// tensor parallelism splits the model (or why it cannot), so pipeline.split's names are not
// guessed.
TEST(Commands, ModelsSayHowEachPresetSplits) {
  TempDir tmp;
  const auto r = testing::run_fedpar("models", tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line :
       {"  conv2  conv5x5 32->64 (14x14)",
        "pipeline: a stage may start at conv1, conv2, fc1, fc2 "
        "(pipeline.split names the starts after the first; 1 "
        "to 4 stages)",
        "tensor, 2 ways: fc1 column-parallel 784->100 of 200; relu on the local 100 of 200; fc2 "
        "row-parallel 100->200 of 200 inputs, then all-reduce; relu replicated; fc3 replicated",
        "tensor: model 'logreg' has no pair of dense layers"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

// `fedpar privacy` says what a DP-FedAvg run's rounds will cost, or the noise a budget needs,
// with the accountant's numbers; a run config gives what the flags do not.
TEST(Commands, PrivacySaysTheBudgetOrTheNoiseForIt) {
  TempDir tmp;
  const auto r = testing::run_fedpar("privacy --clients 1000 --fraction 0.1 --rounds 100 --noise 1",
                                     tmp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("q = 0.1 a round (K = 100)"), std::string::npos) << r.out;
  for (uint64_t round : {1, 12, 25, 50, 75, 100}) {
    const PrivacySpent p = privacy_spent(0.1, 1, round, 1e-5);
    EXPECT_NE(r.out.find(fmt::format("| {} | {:.4g} | {} |", round, p.epsilon, p.order)),
              std::string::npos)
        << round << "\n"
        << r.out;
  }
  const auto budget = testing::run_fedpar(
      "privacy --clients 1000 --fraction 0.1 --rounds 100 --epsilon 3", tmp.path());
  ASSERT_EQ(budget.code, 0) << budget.err;
  const std::string z = fmt::format("{:.4g}", noise_for_epsilon(0.1, 100, 1e-5, 3));
  EXPECT_NE(budget.out.find("privacy.noise_multiplier = " + z + " keeps epsilon at or below 3"),
            std::string::npos)
      << budget.out;
  std::ofstream(tmp / "run.toml") << "rounds = 40\nfraction = 0.05\nclient_sampling = "
                                     "'poisson'\nweighting = 'uniform'\n[partition]\nclients = "
                                     "200\n[privacy]\nclip_norm = 1.0\nnoise_multiplier = "
                                     "2.0\ndelta = 1e-6\n";
  const auto from_config =
      testing::run_fedpar("privacy --config " + (tmp / "run.toml").string(), tmp.path());
  ASSERT_EQ(from_config.code, 0) << from_config.err;
  const PrivacySpent p = privacy_spent(0.05, 2, 40, 1e-6);
  EXPECT_NE(from_config.out.find(fmt::format("| 40 | {:.4g} | {} |", p.epsilon, p.order)),
            std::string::npos)
      << from_config.out;
  const auto both =
      testing::run_fedpar("privacy --clients 10 --rounds 5 --noise 1 --epsilon 2", tmp.path());
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("give --noise or --epsilon, not both"), std::string::npos) << both.err;
  for (const std::string& bad : {"--clients 10 --epsilon 0", "--clients 10 --epsilon inf",
                                 "--clients 10 --noise -1", "--clients -3 --noise 1"}) {
    const auto r = testing::run_fedpar("privacy --rounds 5 " + bad, tmp.path());
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("must be"), std::string::npos) << bad << ": " << r.err;
    EXPECT_EQ(r.err.find("check failed"), std::string::npos) << r.err;
  }
  const auto loose =
      testing::run_fedpar("privacy --clients 10 --rounds 5 --noise 1 --delta 0.2", tmp.path());
  EXPECT_NE(loose.out.find("note: delta = 0.2 is not below 1 / 10 clients"), std::string::npos)
      << loose.out;
  const auto none = testing::run_fedpar("privacy --clients 10 --rounds 5", tmp.path());
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("which noise? --noise Z"), std::string::npos) << none.err;
}

// A config named without its .toml (tab completion stops there) is named with it; a suite or a
// command spelled nearly right, with the right one.
TEST(Commands, ANameSpelledNearlyRightIsNamedRight) {
  TempDir tmp;
  const std::string config = std::string(FEDPAR_SOURCE_DIR) + "/experiments/equivalence";
  for (const std::string command : {"run ", "train --config ", "server --config "}) {
    const auto r = testing::run_fedpar(command + config, tmp.path());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("no config file " + config + "; did you mean " + config + ".toml?"),
              std::string::npos)
        << command << r.err;
  }
  auto r = testing::run_fedpar("suite iid-vs-non-iid --smoke", tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no suite 'iid-vs-non-iid'; did you mean 'iid-vs-noniid'?"),
            std::string::npos)
      << r.err;
  r = testing::run_fedpar("rnu " + config + ".toml", tmp.path());
  EXPECT_NE(r.err.find("no command 'rnu'; did you mean 'run'?"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "results"));
}

TEST(Commands, HelpIsHelpOfTheCommandNamed) {
  TempDir tmp;
  auto r = testing::run_fedpar("help run", tmp.path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, testing::run_fedpar("run --help", tmp.path()).out);
  EXPECT_NE(r.out.find("run [OPTIONS] config"), std::string::npos) << r.out;
  r = testing::run_fedpar("help", tmp.path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, testing::run_fedpar("--help", tmp.path()).out);
  EXPECT_NE(r.out.find("SUBCOMMAND"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fedpar
