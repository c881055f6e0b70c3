// Config: defaults fix the keys and types; files and overrides merge over them with clear errors.
#include "core/config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "core/check.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::error_of;

constexpr const char* kDefaults = R"(
seed = 1
[train]
epochs = 1
batch = 10
lr = 0.1
nesterov = false
schedule = "constant"
hidden = []
models = ["logreg"]
)";

TEST(Config, DefaultsAndOverrides) {
  Config c(kDefaults);
  c.allow_words("train.batch", {"full"});
  EXPECT_EQ(c.get_int("train.epochs"), 1);
  c.set("train.epochs", "3");
  c.set("train.lr", "0.05");
  c.set("train.nesterov", "true");
  c.set("train.hidden", "200,100");
  c.set("train.batch", "full");
  EXPECT_EQ(c.get_int("train.epochs"), 3);
  EXPECT_DOUBLE_EQ(c.get_float("train.lr"), 0.05);
  EXPECT_TRUE(c.get_bool("train.nesterov"));
  EXPECT_EQ(c.get_int_list("train.hidden"), (std::vector<int64_t>{200, 100}));
  EXPECT_TRUE(c.is_word("train.batch", "full"));
  c.merge_toml("[train]\nlr = 1\nbatch = 600\n", "x.toml");  // an integer is a valid float
  EXPECT_DOUBLE_EQ(c.get_float("train.lr"), 1.0);
  EXPECT_EQ(c.get_int("train.batch"), 600);
}

TEST(Config, UnknownKeySuggestsAndListsValidKeys) {
  Config c(kDefaults);
  const std::string e = error_of([&] { c.set("train.epoch", "2"); });
  EXPECT_NE(e.find("unknown config key 'train.epoch'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'train.epochs'"), std::string::npos) << e;
  EXPECT_NE(e.find("valid keys: seed, train.batch"), std::string::npos) << e;
  const std::string f = error_of([&] { c.merge_toml("[data]\nname = 'x'\n", "run.toml"); });
  EXPECT_NE(f.find("run.toml: unknown config key 'data.name'"), std::string::npos) << f;
}

// A key given without its table finds the keys it is the last part of; a config that names
// its listing command points there instead of printing every key.
TEST(Config, NearMatchesByLastPartAndTheCommandThatListsAll) {
  Config c(kDefaults);
  c.describe_keys_with("fedpar keys train");
  std::string e = error_of([&] { c.set("lr", "0.5"); });
  EXPECT_NE(e.find("unknown config key 'lr'; did you mean 'train.lr'? (`fedpar keys train` lists "
                   "every key)"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("seed,"), std::string::npos) << "no full list: " << e;
  e = error_of([&] { c.set("nesterow", "true"); });  // a typo in the last part
  EXPECT_NE(e.find("did you mean 'train.nesterov'?"), std::string::npos) << e;
  e = error_of([&] { c.set("train.epoch", "2"); });  // 'train.batch' is three edits away
  EXPECT_NE(e.find("did you mean 'train.epochs'?"), std::string::npos) << e;
  e = error_of([&] { c.set("optimizer", "2"); });
  EXPECT_EQ(e.find("did you mean"), std::string::npos) << "nothing near: " << e;
  // other frameworks' names for a key: learning_rate is lr, batch_size batch (within a table
  // when one is given)
  e = error_of([&] { c.set("train.learning_rate", "0.1"); });
  EXPECT_NE(e.find("did you mean 'train.lr'?"), std::string::npos) << e;
  e = error_of([&] { c.set("batch_size", "10"); });
  EXPECT_NE(e.find("did you mean 'train.batch'?"), std::string::npos) << e;
  // the words of a key's last part, all in the key given: the server's rate under another table
  Config run("[optimizer]\nlr = 0.1\n[local]\nserver_lr = 1.0\nsteps = 1\n");
  e = error_of([&] { run.set("server_optimizer.lr", "0.01"); });
  EXPECT_NE(e.find("did you mean 'optimizer.lr' or 'local.server_lr'?"), std::string::npos) << e;
  // a word of a key's last part, under its own table: the unit left off
  Config net(
      "[network]\nserver = ''\n[network.custom]\nlatency_seconds = 0.0\n[lag]\nlatency_ms = 1\n");
  e = error_of([&] { net.set("network.latency", "0.1"); });
  EXPECT_NE(e.find("did you mean 'network.custom.latency_seconds'?"), std::string::npos) << e;
}

// A misspelled table is the slip whatever its keys: said as the table, not as one of its keys
// beside others' keys of the same last part.
TEST(Config, AMisspelledTableIsNamedAsTheTable) {
  Config c("[train]\nepochs = 1\n[attack]\nclients = 0\n[partition]\nclients = 4\n");
  std::string e = error_of([&] { c.merge_toml("[partiton]\nclients = 2\n", "r.toml"); });
  EXPECT_NE(e.find("r.toml: unknown config table [partiton] (of key 'partiton.clients'); did you "
                   "mean [partition]?"),
            std::string::npos)
      << e;
  e = error_of([&] { c.set("trian.epochs", "2"); });
  EXPECT_NE(e.find("did you mean [train]?"), std::string::npos) << e;
  // a table far from every other: the key's own near matches
  e = error_of([&] { c.set("optimizer.clients", "2"); });
  EXPECT_NE(e.find("unknown config key 'optimizer.clients'; did you mean"), std::string::npos) << e;
}

// Errors about a value say where it came from: the file and the key, or the key (from --set or
// a flag, or its default).
TEST(Config, WhereNamesTheFileOrFlagThatSetTheKey) {
  Config c(kDefaults);
  EXPECT_EQ(c.where("train.lr"), "train.lr");
  c.merge_toml("[train]\nlr = 0.5\n", "exp.toml");
  EXPECT_EQ(c.where("train.lr"), "exp.toml: train.lr");
  c.set("train.lr", "0.25");
  EXPECT_EQ(c.where("train.lr"), "train.lr");
}

TEST(Config, WrongTypesAreRejected) {
  Config c(kDefaults);
  EXPECT_NE(error_of([&] { c.set("train.epochs", "two"); }).find("must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.set("train.batch", "full"); }).find("must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.merge_toml("[train]\nepochs = 'x'\n", "a.toml"); }).find("a.toml"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.set("train.nesterov", "maybe"); }).find("true or false"),
            std::string::npos);
  // a file's value says what it was, and a number in quotes how to write it
  EXPECT_NE(error_of([&] { c.merge_toml("[train]\nepochs = '3'\n", "q.toml"); })
                .find("q.toml: config key 'train.epochs' must be an integer, got the string \"3\" "
                      "(write epochs = 3, without quotes)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              c.merge_toml("[train]\nepochs = 2.5\n", "f.toml");
            }).find("must be an integer, got 2.5"),
            std::string::npos);
  const std::string word = error_of([&] { c.merge_toml("[train]\nepochs = 'two'\n", "w.toml"); });
  EXPECT_NE(word.find("got the string \"two\""), std::string::npos) << word;
  EXPECT_EQ(word.find("without quotes"), std::string::npos) << "not a number: " << word;
  EXPECT_NE(error_of([&] {
              c.merge_toml("[train]\nhidden = [1, 'x']\n", "b.toml");
            }).find("must be a list of integers"),
            std::string::npos);
  EXPECT_EQ(c.get_int("train.epochs"), 1);  // failed sets change nothing
  EXPECT_TRUE(c.get_int_list("train.hidden").empty());
}

TEST(Config, StringListsTakeTheirElementTypeFromTheDefault) {
  Config c(kDefaults);
  EXPECT_EQ(c.get_string_list("train.models"), (std::vector<std::string>{"logreg"}));
  c.set("train.models", "logreg, 2nn");
  EXPECT_EQ(c.get_string_list("train.models"), (std::vector<std::string>{"logreg", "2nn"}));
  c.set("train.models", R"(["cnn", '2nn'])");  // as TOML writes it
  EXPECT_EQ(c.get_string_list("train.models"), (std::vector<std::string>{"cnn", "2nn"}));
  c.set("train.models", R"("logreg", "cnn")");  // the items quoted, without brackets
  EXPECT_EQ(c.get_string_list("train.models"), (std::vector<std::string>{"logreg", "cnn"}));
  c.set("train.schedule", R"("step")");
  EXPECT_EQ(c.get_string("train.schedule"), "step");
  c.merge_toml("[train]\nmodels = [\"cnn\"]\n", "a.toml");
  EXPECT_EQ(c.get_string_list("train.models"), (std::vector<std::string>{"cnn"}));
  EXPECT_NE(error_of([&] {
              c.merge_toml("[train]\nmodels = [1]\n", "b.toml");
            }).find("must be a list of strings"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.set("train.hidden", "a,b"); }).find("must be a list of integers"),
            std::string::npos);
  EXPECT_EQ(c.get_string_list("train.models"), (std::vector<std::string>{"cnn"}));
}

TEST(Config, SyntaxErrorsCarryFileAndLine) {
  Config c(kDefaults);
  const std::string e = error_of([&] { c.merge_toml("seed = 2\n[train\n", "bad.toml"); });
  EXPECT_NE(e.find("bad.toml:2:"), std::string::npos) << e;
  EXPECT_EQ(e.find("needs quotes"), std::string::npos) << "not a bare word: no hint about quotes";
  // a string without its quotes: the parser cannot tell the value's type, the error says why
  const std::string bare = error_of([&] { c.merge_toml("[train]\nname = sgd\n", "q.toml"); });
  EXPECT_NE(bare.find("q.toml:2:"), std::string::npos) << bare;
  EXPECT_NE(bare.find("(a string needs quotes: name = \"sgd\", not name = sgd;"), std::string::npos)
      << bare;
}

TEST(Config, ResolvedTomlRoundTrips) {
  Config c(kDefaults);
  c.set("train.epochs", "5");
  c.set("train.hidden", "[3, 4]");
  Config d(kDefaults);
  d.merge_toml(c.to_toml(), "resolved");
  EXPECT_EQ(d.to_toml(), c.to_toml());
  EXPECT_EQ(d.get_int("train.epochs"), 5);
  testing::TempDir dir;
  { std::ofstream(dir / "x.toml") << c.to_toml(); }
  Config e(kDefaults);
  e.merge_file(dir / "x.toml");
  EXPECT_EQ(e.get_int_list("train.hidden"), (std::vector<int64_t>{3, 4}));
  EXPECT_THROW(e.merge_file(dir / "missing.toml"), Error);
}

// Floats are written in their shortest form that reads back to the same double (toml++ alone
// wrote 0.1 as 0.10000000000000001); strings that hold digits are left as they are.
TEST(Config, ResolvedTomlWritesFloatsShortestAndExact) {
  Config c(kDefaults);
  c.set("train.lr", "0.3");
  c.set("train.schedule", "'0.30000000000000004, -2.5'");
  const std::string text = c.to_toml();
  EXPECT_NE(text.find("lr = 0.3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("'0.30000000000000004, -2.5'"), std::string::npos) << text;
  for (const double v : {1.0 / 3, 1e-5, 2.0, -0.1, 6.02e23}) {
    c.set("train.lr", fmt::format("{:.17g}", v));
    Config d(kDefaults);
    d.merge_toml(c.to_toml(), "resolved");
    EXPECT_EQ(d.get_float("train.lr"), v) << c.to_toml();
  }
}

}  // namespace
}  // namespace fedpar
