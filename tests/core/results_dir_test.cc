// Results folders: complete or absent (a partial folder until commit, removed when the run
// fails), a kept failed run under its suffix, and a metrics writer that reports a full disk at
// the line it could not write, naming the cause, instead of leaving an empty file behind.
#include "core/results_dir.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "core/check.h"
#include "core/run_spec.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

// A run README's Settings lists the keys set away from their defaults, but not where the server
// listened: fedpar run sets bind to a free port, which a reader would take for a choice.
TEST(ResultsDir, SettingsListTheChangedKeysButNotWhereTheServerListened) {
  const Config defaults = make_run_config();
  EXPECT_EQ(settings_section(defaults, defaults), "## Settings\n\nEvery key at its default.\n\n");
  Config cfg = make_run_config();
  cfg.set("bind", "tcp://127.0.0.1:*");
  EXPECT_EQ(settings_section(cfg, defaults), "## Settings\n\nEvery key at its default.\n\n");
  cfg.set("rounds", "7");
  const std::string md = settings_section(cfg, defaults);
  EXPECT_NE(md.find("| `rounds` | `7` |"), std::string::npos) << md;
  EXPECT_EQ(md.find("bind"), std::string::npos) << md;
}

TEST(ResultsDir, CompleteOrAbsentAndAKeptRunTakesItsSuffix) {
  TempDir tmp;
  std::filesystem::path partial;
  {
    ResultsDir failed(tmp.path(), "run");
    partial = failed.path();
    EXPECT_TRUE(std::filesystem::exists(partial));
  }
  EXPECT_FALSE(std::filesystem::exists(partial));  // never committed: gone
  ResultsDir a(tmp.path(), "run");
  a.write_text("x.txt", "1");
  EXPECT_EQ(a.commit(), tmp / "run");
  ResultsDir b(tmp.path(), "run");
  EXPECT_EQ(b.commit(), tmp / "run-2");  // never overwrites
  ResultsDir kept(tmp.path(), "run");
  EXPECT_EQ(kept.commit(".incomplete"), tmp / "run.incomplete");
}

// Partial folders of processes that died are debris and go when the next folder is made there,
// unless they hold a checkpoint (a killed run to resume); a live process's folder stays.
// A suite's runs live inside its partial folder while it runs and name it in their config and
// README; once committed, they name the folder that exists.
TEST(ResultsDir, RunsInsideAPartialFolderNameTheFinalOneAfterTheCommit) {
  TempDir tmp;
  ResultsDir dir(tmp / "res", "suite");
  const std::string partial = dir.path().string();
  std::filesystem::create_directories(dir.path() / "runs" / "a");
  std::ofstream(dir.path() / "runs" / "a" / "config.resolved.toml")
      << "results_dir = '" << partial << "/runs'\n";
  std::ofstream(dir.path() / "runs" / "a" / "README.md")
      << "fedpar run " << partial << "/runs/a/config.resolved.toml\n";
  std::ofstream(dir.path() / "runs" / "a" / "metrics.jsonl") << partial << "\n";  // data: as is
  const auto final_path = dir.commit();
  EXPECT_EQ(testing::slurp(final_path / "runs" / "a" / "config.resolved.toml"),
            "results_dir = '" + final_path.string() + "/runs'\n");
  EXPECT_EQ(testing::slurp(final_path / "runs" / "a" / "README.md"),
            "fedpar run " + final_path.string() + "/runs/a/config.resolved.toml\n");
  EXPECT_EQ(testing::slurp(final_path / "runs" / "a" / "metrics.jsonl"), partial + "\n");
}

TEST(ResultsDir, SweepsTheDeadsPartialFoldersButKeepsCheckpoints) {
  TempDir tmp;
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);  // its pid now names no process
  const auto debris = tmp / fmt::format(".old.partial-{}", dead);
  const auto killed = tmp / fmt::format(".big.partial-{}", dead);
  const auto live = tmp / fmt::format(".other.partial-{}", ::getppid());
  for (const auto& d : {debris, killed, live}) std::filesystem::create_directories(d);
  std::ofstream(killed / "checkpoint.bin") << "x";
  ResultsDir r(tmp.path(), "new");
  EXPECT_FALSE(std::filesystem::exists(debris));
  EXPECT_TRUE(std::filesystem::exists(killed));
  EXPECT_TRUE(std::filesystem::exists(live));
  ASSERT_EQ(r.stale_checkpoints().size(), 1u);
  EXPECT_EQ(r.stale_checkpoints()[0], killed);
}

TEST(JsonlWriter, AFullDiskIsAnErrorAtTheLineThatDidNotFit) {
  TempDir tmp;
  const testing::FullDisk disk(tmp / "full", "16k");
  if (!disk.ok()) GTEST_SKIP() << "a full disk needs root (a 16 KiB tmpfs)";
  JsonlWriter w(tmp / "full" / "metrics.jsonl");
  const nlohmann::json line = {{"pad", std::string(1000, 'x')}};
  std::string what;
  int written = 0;
  try {
    for (; written < 100; ++written) w.write(line);  // 100 KB on a 16 KiB disk
  } catch (const Error& e) {
    what = e.what();
  }
  EXPECT_LT(written, 100);
  EXPECT_NE(what.find("metrics.jsonl: No space left on device"), std::string::npos) << what;
}

}  // namespace
}  // namespace fedpar
