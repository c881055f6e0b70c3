// Replays an `async` run from its results folder, in one process and without sockets: every
// applied update of updates.jsonl, in arrival order, is recomputed (the client's gradient at the
// model version it was computed on, with its batch draw) and applied with the logged learning
// rate. Compressed links are replayed too: the model through the downlink codec, the gradient
// through the uplink codec with its per-client state (error-feedback residual, PowerSGD's warm
// start), for which the refused updates are recomputed as well, since their clients encoded them.
// Asynchrony makes a run's arrival order a matter of timing; the log makes it a fact, and this
// checks that the final model follows from it bit for bit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace fedpar {

struct ReplayResult {
  uint64_t updates = 0, applied = 0;
  std::string hash;      // of the replayed final model
  std::string run_hash;  // summary.json's model_hash
  // the updates the run's finished rounds applied (its rounds x its clients); a run that diverged
  // kept those of its unfinished round too: at least these
  uint64_t run_applied = 0;
  bool diverged = false;
  bool complete() const { return diverged ? applied >= run_applied : applied == run_applied; }
  bool matches() const { return hash == run_hash && complete(); }
};

// Throws Error when the folder is not a finished async run or its log is inconsistent.
ReplayResult replay_async_run(const std::filesystem::path& results);

}  // namespace fedpar
