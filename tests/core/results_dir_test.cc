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

// Partial folders of dead writers: debris is removed, a checkpoint kept for --resume, and rounds
// without one (a server killed with checkpoint_every = 0) kept as NAME.incomplete with a README
// (they were removed without a word). Whether the writer lives is asked of its lock, which holds
// across hosts: a folder locked under a pid dead here is another host's live run, and one
// unlocked under a pid alive here is a dead run whose pid was reused. A folder without a lock
// (an older fedpar's) is judged by its pid.
TEST(ResultsDir, SweepsTheDeadsPartialFoldersButKeepsCheckpointsAndRounds) {
  TempDir tmp;
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);  // its pid now names no process
  const auto debris = tmp / fmt::format(".old.partial-{}", dead);
  const auto killed = tmp / fmt::format(".big.partial-{}", dead);
  const auto rounds = tmp / fmt::format(".logged.partial-{}", dead);
  const auto live = tmp / fmt::format(".other.partial-{}", ::getppid());
  const auto elsewhere = tmp / fmt::format(".remote.partial-{}", dead);
  const auto reused = tmp / fmt::format(".reused.partial-{}", ::getppid());
  for (const auto& d : {debris, killed, rounds, live, elsewhere, reused})
    std::filesystem::create_directories(d);
  std::ofstream(killed / "checkpoint.bin") << "x";
  std::ofstream(rounds / "metrics.jsonl") << "{\"round\":1}\n";
  std::ofstream(reused / "metrics.jsonl") << "{\"round\":1}\n";
  const auto held = FolderLock::try_lock(elsewhere);
  ASSERT_TRUE(held);
  std::ofstream(reused / ".lock");  // its writer's lock, released as it died
  std::filesystem::create_directories(tmp / "logged.incomplete");  // taken: -2
  ResultsDir r(tmp.path(), "new");
  EXPECT_FALSE(std::filesystem::exists(debris));
  EXPECT_TRUE(std::filesystem::exists(killed));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(elsewhere));
  EXPECT_FALSE(std::filesystem::exists(reused));
  ASSERT_EQ(r.stale_checkpoints().size(), 1u);
  EXPECT_EQ(r.stale_checkpoints()[0], killed);
  EXPECT_FALSE(std::filesystem::exists(rounds));
  EXPECT_EQ(testing::slurp(tmp / "logged.incomplete-2" / "metrics.jsonl"), "{\"round\":1}\n");
  EXPECT_NE(testing::slurp(tmp / "logged.incomplete-2" / "README.md")
                .find(fmt::format("# logged (died unfinished)\n\nThe process that wrote this "
                                  "folder (pid {}) ended without finishing it",
                                  dead)),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(tmp / "reused.incomplete" / "metrics.jsonl"));
  EXPECT_EQ(r.rescued().size(), 2u);
}

// The folder's lock is held while it is written, by one writer; a committed folder carries none.
TEST(ResultsDir, APartialFolderIsLockedWhileWrittenAndACommittedOneIsNot) {
  TempDir tmp;
  ResultsDir r(tmp.path(), "run");
  EXPECT_EQ(FolderLock::held(r.path()), std::optional<bool>(true));
  EXPECT_FALSE(FolderLock::try_lock(r.path()));
  const auto done = r.commit();
  EXPECT_FALSE(std::filesystem::exists(done / ".lock"));
  EXPECT_EQ(FolderLock::held(done), std::nullopt);
  auto mine = FolderLock::try_lock(done);
  ASSERT_TRUE(mine);
  EXPECT_EQ(FolderLock::held(done), std::optional<bool>(true));
  mine.reset();
  EXPECT_EQ(FolderLock::held(done), std::optional<bool>(false));
  // a tidy lock (--resume's of a finished run) removes only the .lock it made
  std::filesystem::remove(done / ".lock");
  {
    auto tidy = FolderLock::try_lock(done, /*tidy=*/true);
    ASSERT_TRUE(tidy);
    EXPECT_EQ(FolderLock::held(done), std::optional<bool>(true));
    EXPECT_FALSE(FolderLock::try_lock(done, true));  // a second one is refused, and removes nothing
    EXPECT_TRUE(std::filesystem::exists(done / ".lock"));
    auto moved = std::move(*tidy);  // released once, by the lock it moved to
  }
  EXPECT_FALSE(std::filesystem::exists(done / ".lock"));
  std::ofstream(done / ".lock").put('\n');
  FolderLock::try_lock(done, true).reset();
  EXPECT_TRUE(std::filesystem::exists(done / ".lock"));  // there before: left
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
