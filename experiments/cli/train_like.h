// `fedpar train --like RUN`: the centralized baseline of a finished distributed run, in one
// command: its model, data, seed, threads and optimizer, its clients' batch (local.batch in the
// model regime, sgd.batch otherwise), and as many epochs as the run processed samples, so that
// `fedpar compare RUN BASELINE --x samples` sets them side by side on the same work. The baseline
// is named NAME-centralized, beside the run's folder.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fedpar {

struct TrainLike {
  std::vector<std::string> sets;  // "key=value" for the train config, before the user's own
  std::string said;               // what it took from the run, for the progress line
};

// Throws Error naming what is missing when `run` is not a finished distributed run's folder.
TrainLike train_like(const std::filesystem::path& run);

}  // namespace fedpar
