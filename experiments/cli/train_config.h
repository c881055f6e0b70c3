// The `fedpar train` configuration: compiled-in defaults (documented TOML), the flag -> key map,
// and the conversion of a resolved Config into the core's option structs.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "core/dataset.h"
#include "core/model.h"
#include "core/trainer.h"
#include "experiments/cli/data_flags.h"

namespace fedpar {

// Defaults; every key a train config may set appears here with a comment.
std::string train_defaults();

Config make_train_config();

// The flags of `fedpar train` beside the data flags (data_flags.h).
const std::vector<FlagKey>& train_flags();

struct TrainSetup {
  std::string name;         // results folder name
  std::string results_dir;  // parent folder
  std::string device;
  int threads = 1;
  ModelSpec model;
  DataOptions data;
  TrainOptions train;
  int64_t log_every = 100;
};

// Validates ranges and names; throws Error with the offending key and the valid choices.
TrainSetup resolve_train_setup(const Config& cfg);

}  // namespace fedpar
