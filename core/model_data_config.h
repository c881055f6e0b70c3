// The [model] and [data] sections shared by every config that trains (fedpar train, fedpar
// server): their documented defaults and their resolution into ModelSpec and DataOptions.
#pragma once

#include <cstdint>

#include "core/config.h"
#include "core/dataset.h"
#include "core/model.h"

namespace fedpar {

extern const char* const kModelDataDefaults;

// Throw Error naming the key and the valid choices.
ModelSpec resolve_model_spec(const Config& c);
DataOptions resolve_data_options(const Config& c, uint64_t seed);
// A CSV given with another dataset was ignored without a word (the run trained on MNIST): an
// Error naming the key and data.name unless the csv keys are unset or data.name is "csv".
void check_csv_keys(const DataOptions& d);
// The key "seed" (a run's and a training's), refused when negative.
uint64_t resolve_seed(const Config& c);

}  // namespace fedpar
