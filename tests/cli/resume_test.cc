// Checkpoint and resume with real processes: a server killed with SIGKILL mid-run (its clients
// with it) is continued with --resume from its last checkpoint, and the final model has the very
// bytes of the run that was never interrupted: the server optimizer's moments, momentum,
// SCAFFOLD's control variates (the server's c and every client's c_i, which the new client
// processes get in their WELCOME) and error-feedback residuals all come back. A resume with another
// config is refused.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/checkpoint.h"
#include "tests/util/distributed_run.h"
#include "tests/util/network_draws.h"
#include "tests/util/process.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::TempDir;

// The base run's overrides plus `extra`.
std::vector<std::string> with(std::vector<std::string> sets,
                              const std::vector<std::string>& extra) {
  sets.insert(sets.end(), extra.begin(), extra.end());
  return sets;
}

// Starts the run `tag` with checkpoints every 2 rounds and, once the server logged round
// `kill_after`, SIGKILLs the server and both clients (or, `client_only`, one client: the gradient
// regime then stops with an error); returns the folder the run left behind.
std::filesystem::path killed_run(const TempDir& tmp, const std::string& tag,
                                 const std::vector<std::string>& sets, int kill_after,
                                 bool client_only = false) {
  const std::string files = tag + "-killed";  // not the resumed run's endpoint file
  std::vector<std::string> all = {"checkpoint_every=2"};
  all.insert(all.end(), sets.begin(), sets.end());
  const auto run = testing::start_run(
      tmp, files,
      testing::server_args(tmp, files, tag, "ipc://" + (tmp / (tag + ".sock")).string(), 2, all),
      2);
  const pid_t server = run.server;
  const std::vector<pid_t>& clients = run.clients;
  testing::wait_for_round(tmp, files, kill_after);
  if (client_only) {
    kill(clients[1], SIGKILL);
    EXPECT_EQ(testing::wait_exit(server, 60).value_or(-99), kExitRunFailed);
    const auto kept = tmp / "res" / (tag + ".incomplete");
    // a server started by hand is resumed by hand (fedpar run would start its clients here)
    const std::string resume = fmt::format(
        "continue with fedpar server --config {0}/config.resolved.toml --resume {0} (and its "
        "client processes, as before)",
        kept.string());
    EXPECT_NE(testing::slurp(tmp / (files + ".err")).find("last checkpoint are kept in"),
              std::string::npos);
    EXPECT_NE(testing::slurp(tmp / (files + ".err")).find(resume), std::string::npos)
        << testing::slurp(tmp / (files + ".err"));
    EXPECT_NE(testing::slurp(kept / "README.md")
                  .find(fmt::format("fedpar server --config {0}/config.resolved.toml --resume {0}",
                                    kept.string())),
              std::string::npos)
        << testing::slurp(kept / "README.md");
    kill(clients[0], SIGKILL);
    for (pid_t p : clients) waitpid(p, nullptr, 0);
    return kept;
  }
  for (pid_t p : clients) kill(p, SIGKILL);
  kill(server, SIGKILL);
  int status = 0;
  waitpid(server, &status, 0);
  for (pid_t p : clients) waitpid(p, nullptr, 0);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the server finished before the kill: make rounds longer";
  for (const auto& e : std::filesystem::directory_iterator(tmp / "res"))
    if (e.path().filename().string().starts_with("." + tag + ".partial-")) return e.path();
  ADD_FAILURE() << "the killed run left no partial folder";
  return {};
}

// The uninterrupted run's hash, then the killed and resumed run's: the same bytes, every round's
// metrics line once, and the killed run's folder gone.
// `also` looks at the resumed run's folder.
void expect_resume_gives_the_same_bytes(
    const std::string& tag, const std::vector<std::string>& sets, bool client_only = false,
    const std::function<void(const std::filesystem::path&)>& also = {}) {
  TempDir tmp;
  const auto full =
      testing::run_distributed(tmp, tag + "-full", "ipc://" + (tmp / "f").string(), 2, sets);
  ASSERT_EQ(full.server_code, 0) << full.err;
  const auto left = killed_run(tmp, tag, sets, 7, client_only);
  ASSERT_TRUE(std::filesystem::exists(left / "checkpoint.bin")) << left;
  const auto resumed = testing::run_distributed(tmp, tag, "ipc://" + (tmp / "r").string(), 2, sets,
                                                {}, {"--resume", left.string()});
  ASSERT_EQ(resumed.server_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming after round"), std::string::npos) << resumed.err;
  // the killed run's folder is the one resumed: not named again as one to resume
  EXPECT_EQ(resumed.err.find("holds the checkpoint of a run that was killed"), std::string::npos)
      << resumed.err;
  EXPECT_EQ(resumed.hash, full.hash) << resumed.err;
  EXPECT_FALSE(std::filesystem::exists(left));
  std::ifstream in(tmp / "res" / tag / "metrics.jsonl");
  std::string line;
  int expect = 1;
  while (std::getline(in, line)) EXPECT_EQ(nlohmann::json::parse(line)["round"], expect++);
  EXPECT_EQ(expect, 31);
  // the folder says it went on from a checkpoint, and which build ran the rounds before
  const auto summary = nlohmann::json::parse(std::ifstream(tmp / "res" / tag / "summary.json"));
  ASSERT_TRUE(summary.contains("resumed_after_round")) << summary.dump();
  const int after = summary["resumed_after_round"].get<int>();
  EXPECT_TRUE(after >= 2 && after < 30 && after % 2 == 0) << after;
  EXPECT_EQ(summary["earlier_commits"], summary.contains("source_commit")
                                            ? nlohmann::json::array({summary["source_commit"]})
                                            : nlohmann::json::array());
  const std::string readme = testing::slurp(tmp / "res" / tag / "README.md");
  EXPECT_NE(readme.find(fmt::format("resumed (`--resume`) after round {}", after)),
            std::string::npos)
      << readme;
  EXPECT_EQ(readme.find("not this one's"), std::string::npos) << readme;
  if (also) also(tmp / "res" / tag);
}

// 30 rounds of at least 50 ms (client 0 waits before each update), so the kill lands mid-run.
const std::vector<std::string> kLong = {"rounds=30", "partition.clients=4", "eval_every=10",
                                        "stragglers.delay_seconds=0:0.05"};

TEST(Resume, ScaffoldWithFedAdamAfterASigkillEndsWithTheUninterruptedBytes) {
  expect_resume_gives_the_same_bytes(
      "scaffold", with(kLong, {"regime=model", "local.steps=40", "local.batch=8",
                               "optimizer.momentum=0.9", "local.algorithm=scaffold",
                               "server_optimizer.name=adam", "local.server_lr=0.05"}));
}

TEST(Resume, GradientRegimeWithMomentumAfterASigkillEndsWithTheUninterruptedBytes) {
  expect_resume_gives_the_same_bytes(
      "momentum", with(kLong, {"regime=gradient", "sgd.batch=16", "optimizer.momentum=0.9"}));
}

// DP-FedAvg with the adaptive clip: the clip where the last checkpoint left it; the Poisson draws,
// the noise and the count's noise are keyed by the round.
TEST(Resume, DpFedAvgWithAnAdaptiveClipAfterASigkillEndsWithTheUninterruptedBytes) {
  expect_resume_gives_the_same_bytes(
      "dp",
      with(kLong, {"regime=model", "local.steps=5", "client_sampling=poisson", "weighting=uniform",
                   "fraction=0.75", "privacy.clip_norm=0.01", "privacy.noise_multiplier=1",
                   "privacy.adaptive_quantile=0.5", "privacy.count_noise=2"}));
}

// The master topology: the server's model and momentum are its whole state.
TEST(Resume, MasterTopologyAfterASigkillEndsWithTheUninterruptedBytes) {
  expect_resume_gives_the_same_bytes(
      "master", with(kLong, {"regime=gradient", "topology=master", "sgd.batch=16",
                             "optimizer.momentum=0.9"}));
}

// The ring: rank 0's model and velocity (every replica's) are fetched on checkpoint rounds, and
// the resumed run's first task gives both to every worker.
TEST(Resume, AllReduceRingWithMomentumAfterASigkillEndsWithTheUninterruptedBytes) {
  expect_resume_gives_the_same_bytes(
      "ring", with(kLong, {"regime=gradient", "topology=allreduce", "sgd.batch=16",
                           "optimizer.momentum=0.9", "allreduce.hash_every=1"}));
}

// The model-parallel topologies: the parts and their velocities, put together as the whole
// model's, come back on checkpoint rounds; the resumed run's first task gives every part its
// slices (two pipeline stages, a tensor pair; each a replica of client 0, which straggles).
TEST(Resume, PipelineAndTensorAfterASigkillEndWithTheUninterruptedBytes) {
  for (const std::string topology : {"pipeline", "tensor"})
    expect_resume_gives_the_same_bytes(
        topology, with(kLong, {"topology=" + topology, "partition.clients=1", "regime=gradient",
                               "sgd.batch=16", "optimizer.momentum=0.9", "model.name=mlp",
                               "model.hidden=[16, 12]"}));
}

// Error feedback: the residuals live in the clients, so before each checkpoint the server fetches
// every client's (sampled this round or not: half are) and the new clients get them back in their
// WELCOME. Without them the resumed run would lose what top-k had dropped.
TEST(Resume, ErrorFeedbackResidualsComeBackAfterASigkill) {
  expect_resume_gives_the_same_bytes(
      "feedback",
      with(kLong, {"regime=model", "local.steps=5", "fraction=0.5", "compression.uplink=topk",
                   "compression.ratio=0.05", "compression.error_feedback=true"}));
}

// A downlink codec that encodes each TASK's model afresh, and QSGD's draws (from the seed and
// round), keep no state: such a run is checkpointed and resumed with its bytes (a bf16 downlink
// was once refused for holding the clients' copies, which only a delta downlink does).
TEST(Resume, ACompressedDownlinkAndQsgdAfterASigkillEndWithTheUninterruptedBytes) {
  expect_resume_gives_the_same_bytes(
      "downlink", with(kLong, {"regime=model", "local.steps=5", "compression.downlink=bf16",
                               "compression.uplink=qsgd"}));
}

// A killed client stops the gradient regime: the run keeps its folder as <name>.incomplete and
// says so, and --resume with new clients finishes it with the uninterrupted bytes.
TEST(Resume, AFailedRunKeepsItsCheckpointAndFinishesWhenResumed) {
  expect_resume_gives_the_same_bytes(
      "failed", with(kLong, {"regime=gradient", "sgd.batch=16", "wait_seconds=3"}), true);
}

// A server resumed by hand without --config continues with the config in the folder (a config
// left at the defaults would be refused as another run's).
TEST(Resume, AServerResumedByHandTakesTheFoldersConfig) {
  TempDir tmp;
  const auto left = killed_run(
      tmp, "byhand", with(kLong, {"regime=gradient", "sgd.batch=16", "wait_seconds=3"}), 7, true);
  const pid_t server =
      testing::spawn_fedpar({"server", "--endpoint-file", (tmp / "b.ep").string(), "--resume",
                             left.string(), "--set", "bind=ipc://" + (tmp / "b.sock").string()},
                            tmp / "b.out", tmp / "b.err");
  EXPECT_TRUE(testing::wait_for_text(tmp / "b.err", "resuming after round", 30))
      << testing::slurp(tmp / "b.err");
  kill(server, SIGTERM);
  testing::wait_exit(server, 30);
}

// Emulated lossy links draw by round, and the checkpoint names the processes dropped before it
// and those that had missed the rounds just before it: the resumed run (from round 6) loses the
// messages the uninterrupted run lost in the rounds after the checkpoint, leaves out the process
// it had dropped before, and goes on counting a process's misses in a row, so the bytes agree.
// Two seeds: one whose process is dropped at its first miss, before the checkpoint
// (drop_after_missed_rounds = 1), and one whose process misses rounds 6 and 7 and is dropped at
// the second (= 2): resumed without its count, it would be asked again. Neither ever loses both
// processes. Each round's `missing` is the one predicted from the draws.
TEST(Resume, AnEmulatedLossyRunLosesTheSameMessagesAfterTheResume) {
  const double loss = 0.03;
  for (const int limit : {1, 2}) {
    const auto wanted = [&](const testing::PredictedLosses& e) {
      if (e.missing.empty()) return false;
      if (limit == 1)
        return (e.dropped_in[0] >= 1 && e.dropped_in[0] < 5) ||
               (e.dropped_in[1] >= 1 && e.dropped_in[1] < 5);
      // clients 1 and 3 miss rounds 6 and 7; client 0's process, which straggles, stays, so the
      // rounds stay slow enough for the kill to land before round 8's checkpoint
      return e.dropped_in[1] == 6 && e.dropped_in[0] < 0;
    };
    uint64_t seed = 1;
    testing::PredictedLosses expected;
    for (; seed < 5000; ++seed)
      if (wanted(expected = testing::predict_losses(seed, loss, 30, limit))) break;
    ASSERT_LT(seed, 5000u);
    SCOPED_TRACE(fmt::format("seed {}, drop_after_missed_rounds = {}", seed, limit));
    expect_resume_gives_the_same_bytes(
        fmt::format("lossy-{}", limit),
        with(kLong,
             {"regime=model", "local.steps=2", fmt::format("seed={}", seed), "wait_seconds=3",
              fmt::format("drop_after_missed_rounds={}", limit), "network.mode=emulated",
              "network.profile=custom", "network.custom.down_bps=1e9", "network.custom.up_bps=1e9",
              fmt::format("network.custom.loss={}", loss)}),
        false, [&](const std::filesystem::path& dir) {
          std::ifstream in(dir / "metrics.jsonl");
          std::string line;
          for (size_t r = 0; std::getline(in, line) && r < expected.missing.size(); ++r)
            EXPECT_EQ(nlohmann::json::parse(line).at("missing").get<std::set<uint32_t>>(),
                      expected.missing[r])
                << "round " << r + 1;
        });
  }
}

// A server on its own that must refuse to start: its exit code and stderr.
std::pair<int, std::string> refused(const TempDir& tmp, const std::string& tag,
                                    const std::vector<std::string>& sets,
                                    const std::vector<std::string>& flags) {
  std::vector<std::string> args =
      testing::server_args(tmp, tag + "-refused", tag, "ipc://" + (tmp / "x").string(), 2, sets);
  args.insert(args.end(), flags.begin(), flags.end());
  const pid_t server = testing::spawn_fedpar(args, tmp / (tag + ".rout"), tmp / (tag + ".rerr"));
  const int code = testing::wait_exit(server, 60).value_or(-99);
  return {code, testing::slurp(tmp / (tag + ".rerr"))};
}

// A checkpoint that passes its CRC but holds entries of the wrong type (its config a number, a
// client's state named by no number) is refused naming the file, not as an internal error.
TEST(Resume, ACheckpointWithWrongEntriesIsRefusedNamingTheFile) {
  TempDir tmp;
  for (const bool bad_config : {true, false}) {
    const auto dir = tmp / (bad_config ? "config" : "client");
    std::filesystem::create_directories(dir);
    Checkpoint c;
    c.meta["config"] = 5;
    if (!bad_config) {
      const auto left = killed_run(tmp, "good", with(kLong, {"regime=model"}), 3);
      c = read_checkpoint(left / "checkpoint.bin");
      c.f32["feedback.e_i.x"] = std::vector<float>(c.floats("params").size(), 1.0f);
      c.f32["feedback.e_i.x.lr"] = {1.0f};
      std::filesystem::copy_file(left / "metrics.jsonl", dir / "metrics.jsonl");
    }
    write_checkpoint(dir / "checkpoint.bin", c);
    const auto [code, err] = refused(tmp, bad_config ? "config" : "client",
                                     with(kLong, {"regime=model"}), {"--resume", dir.string()});
    EXPECT_NE(code, 0);
    EXPECT_NE(err.find("checkpoint.bin is not a usable checkpoint"), std::string::npos) << err;
    EXPECT_EQ(err.find("internal error"), std::string::npos) << err;
  }
}

// A finished run's folder keeps its last checkpoint: resuming it with its own rounds is refused,
// saying why, and makes no new folder (it once trained no round and wrote a copy of the results).
// Its last checkpoint is of its last round (5; checkpoint_every = 2 gives 2 and 4 as well).
// With more rounds it goes on from that checkpoint, server momentum and all, to the bytes of the
// run that had those rounds from the start, and the finished folder stays; a cosine schedule,
// whose rates span the rounds, is refused with the round whose rate would change.
TEST(Resume, AFinishedRunIsNotResumedAgainButGoesOnWithMoreRounds) {
  TempDir tmp;
  const auto sets =
      with(kLong, {"regime=model", "rounds=5", "checkpoint_every=2", "server_optimizer.name=avgm"});
  const auto done = testing::run_distributed(tmp, "done", "ipc://" + (tmp / "d").string(), 2, sets);
  ASSERT_EQ(done.server_code, 0) << done.err;
  const auto dir = tmp / "res" / "done";
  ASSERT_TRUE(std::filesystem::exists(dir / "checkpoint.bin"));
  const auto [code, err] = refused(tmp, "again", sets, {"--resume", dir.string()});
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("holds a run that finished (its summary.json says how): nothing is left to "
                     "resume; to give it more rounds, resume it with --set rounds=N above its 5"),
            std::string::npos)
      << err;
  size_t folders = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp / "res"))
    folders += e.is_directory();
  EXPECT_EQ(folders, 1u);

  const auto cosine = testing::run_distributed(tmp, "cosine", "ipc://" + (tmp / "c").string(), 2,
                                               with(sets, {"optimizer.schedule=cosine"}));
  ASSERT_EQ(cosine.server_code, 0) << cosine.err;
  const auto [longer_code, longer_err] =
      refused(tmp, "cosine-more", with(sets, {"optimizer.schedule=cosine", "rounds=9"}),
              {"--resume", (tmp / "res" / "cosine").string()});
  EXPECT_EQ(longer_code, 2);
  EXPECT_NE(longer_err.find("rounds = 5 there, 9 here would change the learning rate of round 2"),
            std::string::npos)
      << longer_err;

  const auto nine = with(sets, {"rounds=9"});
  const auto full = testing::run_distributed(tmp, "nine", "ipc://" + (tmp / "n").string(), 2, nine);
  ASSERT_EQ(full.server_code, 0) << full.err;
  const auto more = testing::run_distributed(tmp, "more", "ipc://" + (tmp / "m").string(), 2, nine,
                                             {}, {"--resume", dir.string()});
  ASSERT_EQ(more.server_code, 0) << more.err;
  EXPECT_NE(more.err.find("resuming after round 5"), std::string::npos) << more.err;
  EXPECT_NE(more.hash, done.hash);
  EXPECT_EQ(more.hash, full.hash) << more.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "summary.json"));  // the finished run stays as it was
  EXPECT_FALSE(std::filesystem::exists(dir / ".lock"));        // with no lock file left in it
  EXPECT_EQ(testing::jsonl(tmp / "res" / "more" / "metrics.jsonl").size(), 9u);

  // one that stopped at stop_at_accuracy (at its first evaluation) is refused, saying why, also
  // with the threshold changed
  // (it once said more rounds would stop there again, which a threshold of 0 would not)
  const auto stop = with(sets, {"stop_at_accuracy=0.01"});
  const auto stopped =
      testing::run_distributed(tmp, "stopped", "ipc://" + (tmp / "s").string(), 2, stop);
  ASSERT_EQ(stopped.server_code, 0) << stopped.err;
  const auto [stop_code, stop_err] =
      refused(tmp, "stopped-more", with(stop, {"stop_at_accuracy=0"}),
              {"--resume", (tmp / "res" / "stopped").string()});
  EXPECT_EQ(stop_code, 2);
  EXPECT_NE(stop_err.find("holds a run that stopped at stop_at_accuracy after round "),
            std::string::npos)
      << stop_err;
  EXPECT_NE(stop_err.find(": a resumed run keeps its config, stop_at_accuracy too, and would stop "
                          "there again; to train its model on, start a new run from it with "
                          "stop_at_accuracy raised or 0: --set "
                          "model.init_from=" +
                          (tmp / "res" / "stopped").string()),
            std::string::npos)
      << stop_err;
}

// A resumed run that fails again (no client comes) keeps its folder under the old one's name:
// the old <name>.incomplete goes, as it does when the resumed run finishes, and no
// <name>.incomplete-2 stands beside it. Resumed from there, the run ends with the uninterrupted
// bytes; its checkpoint, rewritten as if another build had run the rounds before, makes its
// README say so.
TEST(Resume, ARunThatFailsAgainAfterItsResumeKeepsOneFolder) {
  TempDir tmp;
  const auto sets = with(kLong, {"regime=gradient", "sgd.batch=16", "wait_seconds=3"});
  const auto full =
      testing::run_distributed(tmp, "twice-full", "ipc://" + (tmp / "f").string(), 2, sets);
  ASSERT_EQ(full.server_code, 0) << full.err;
  const auto left = killed_run(tmp, "twice", sets, 7, /*client_only=*/true);
  ASSERT_TRUE(std::filesystem::exists(left / "checkpoint.bin")) << left;
  const auto [code, err] =
      refused(tmp, "twice", with(sets, {"start_wait_seconds=1"}), {"--resume", left.string()});
  EXPECT_EQ(code, kExitRunFailed) << err;
  EXPECT_NE(err.find("kept in " + left.string()), std::string::npos) << err;
  std::set<std::string> folders;
  for (const auto& e : std::filesystem::directory_iterator(tmp / "res"))
    folders.insert(e.path().filename().string());
  EXPECT_EQ(folders, (std::set<std::string>{"twice-full", "twice.incomplete"}));
  Checkpoint c = read_checkpoint(left / "checkpoint.bin");
  c.meta["commits"] = {"0123456"};
  write_checkpoint(left / "checkpoint.bin", c);
  const auto resumed = testing::run_distributed(tmp, "twice", "ipc://" + (tmp / "r").string(), 2,
                                                sets, {}, {"--resume", left.string()});
  ASSERT_EQ(resumed.server_code, 0) << resumed.err;
  EXPECT_EQ(resumed.hash, full.hash) << resumed.err;
  EXPECT_FALSE(std::filesystem::exists(left));
  EXPECT_NE(testing::slurp(tmp / "res" / "twice" / "README.md")
                .find("built from commit 0123456 (**not this one's**"),
            std::string::npos)
      << testing::slurp(tmp / "res" / "twice" / "README.md");
}

// What a run measures may change on resume (they were refused as "another run"): evaluated more
// often, on fewer test samples, with drift measured, it still ends with the uninterrupted bytes;
// with stop_at_accuracy the evaluations decide the end, so their cadence is refused there.
TEST(Resume, ItsMeasurementsMayChangeAndTheBytesStayTheUninterruptedOnes) {
  TempDir tmp;
  const auto sets =
      with(kLong, {"regime=model", "local.steps=2", "diagnostics.save_params_every=2"});
  const auto full = testing::run_distributed(tmp, "full", "ipc://" + (tmp / "f").string(), 2, sets);
  ASSERT_EQ(full.server_code, 0) << full.err;
  const auto left = killed_run(tmp, "seen", sets, 7);
  const auto resumed = testing::run_distributed(
      tmp, "seen", "ipc://" + (tmp / "r").string(), 2, sets, {},
      {"--resume", left.string(), "--set", "eval_every=3", "--set", "data.test_limit=500", "--set",
       "diagnostics.drift=true", "--set", "diagnostics.save_params_every=3"});
  ASSERT_EQ(resumed.server_code, 0) << resumed.err;
  EXPECT_EQ(resumed.hash, full.hash);
  // the folder says what it measured otherwise, and keeps the snapshots taken before at the old
  // cadence (those of rounds the new one skips were lost)
  const auto summary = nlohmann::json::parse(testing::slurp(tmp / "res/seen/summary.json"));
  const auto changes = summary["resumed_with_changes"].dump();
  EXPECT_NE(changes.find("eval_every = 10 there, 3 here"), std::string::npos) << changes;
  EXPECT_NE(changes.find("data.test_limit = 0 there, 500 here"), std::string::npos) << changes;
  EXPECT_NE(testing::slurp(tmp / "res/seen/README.md").find("it measured otherwise from then on"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(tmp / "res/seen/params/round-0002.safetensors"));
  const auto stopping = with(sets, {"stop_at_accuracy=0.99"});
  const auto stop_left = killed_run(tmp, "stop", stopping, 5);
  const auto [code, err] =
      refused(tmp, "stop", stopping, {"--resume", stop_left.string(), "--set", "eval_every=3"});
  EXPECT_NE(code, 0);
  EXPECT_NE(err.find("eval_every = 10 there, 3 here"), std::string::npos) << err;
}

TEST(Resume, AnotherConfigOrAStatefulTopologyIsRefusedWithTheReason) {
  TempDir tmp;
  const auto left = killed_run(tmp, "base", with(kLong, {"regime=model", "local.steps=40"}), 5);
  const auto [code, err] =
      refused(tmp, "base",
              with(kLong, {"data.iid=true", "regime=model", "local.steps=40", "optimizer.lr=0.5"}),
              {"--resume", left.string()});
  EXPECT_NE(code, 0);
  EXPECT_NE(err.find("optimizer.lr = 0.1 there, 0.5 here"), std::string::npos) << err;
  EXPECT_TRUE(std::filesystem::exists(left / "checkpoint.bin"));  // a refusal loses nothing
  // a ring's bits depend on how many processes share its clients: resumed on another number, it
  // ended with other bytes than the uninterrupted run's (the parameter server's may change)
  const auto ring_sets = with(kLong, {"regime=gradient", "topology=allreduce", "sgd.batch=16"});
  const auto ring = killed_run(tmp, "ring", ring_sets, 5);
  const auto [ring_code, ring_err] =
      refused(tmp, "ring", ring_sets, {"--resume", ring.string(), "--set", "processes=1"});
  EXPECT_NE(ring_code, 0);
  EXPECT_NE(ring_err.find("processes = 2 there, 1 here: a ring's workers each sum their own "
                          "clients' gradients first"),
            std::string::npos)
      << ring_err;
  const auto [async_code, async_err] =
      refused(tmp, "async", {"regime=async", "checkpoint_every=1"}, {});
  EXPECT_NE(async_code, 0);
  EXPECT_NE(async_err.find("cannot be checkpointed yet: the async topology"), std::string::npos)
      << async_err;
  const auto [psgd_code, psgd_err] = refused(
      tmp, "psgd", {"regime=gradient", "compression.uplink=powersgd", "checkpoint_every=1"}, {});
  EXPECT_NE(psgd_code, 0);
  EXPECT_NE(psgd_err.find("powersgd keeps each client's warm-started factors"), std::string::npos)
      << psgd_err;
  const auto [delta_code, delta_err] =
      refused(tmp, "delta",
              {"regime=model", "compression.downlink=fp16", "compression.downlink_delta=true",
               "checkpoint_every=1"},
              {});
  EXPECT_NE(delta_code, 0);
  EXPECT_NE(delta_err.find("a delta downlink keeps the clients' copies of the model"),
            std::string::npos)
      << delta_err;
}

}  // namespace
}  // namespace fedpar
